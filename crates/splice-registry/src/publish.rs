//! What an uploaded archive must be before the index takes it: a package that passes the same
//! validator as the client, whose manifest names the URL's namespace, name and version, and
//! whose bytes are exactly the deterministic pack of its own contents (so the sha256 a client
//! verifies names one tree, and nothing rides along that `pkg pack` would not write).

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use serde_json::Value;

use splice_core::packages::Issue;
use splice_core::packages::archive::{self, ArchiveError, LIMITS};
use splice_core::packages::validate;

#[derive(Debug)]
pub struct Verified {
    pub description: String,
    /// `manifest.json` as published.
    pub manifest: Value,
}

/// Check `bytes` in a scratch directory under `scratch_root` (removed afterwards).
pub fn verify(
    bytes: &[u8],
    namespace: &str,
    name: &str,
    version: &str,
    scratch_root: &Path,
) -> Result<Verified, Vec<Issue>> {
    let scratch = scratch_root.join(format!("upload-{}", splice_core::ids::random_suffix(12)));
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&scratch);
    if let Err(e) = made {
        return Err(vec![Issue::new("server", format!("cannot unpack: {e}"))]);
    }
    let result = verify_in(bytes, namespace, name, version, &scratch.join("package"));
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn verify_in(
    bytes: &[u8],
    namespace: &str,
    name: &str,
    version: &str,
    dir: &Path,
) -> Result<Verified, Vec<Issue>> {
    match archive::unpack(bytes, dir, LIMITS) {
        Ok(()) => {}
        Err(ArchiveError::Refused(issues)) => return Err(issues),
        Err(ArchiveError::Io { path, source }) => {
            return Err(vec![Issue::new(
                "archive",
                format!("cannot be unpacked ({path}: {source})"),
            )]);
        }
    }
    let report = validate::check_dir(dir);
    let mut issues = report.issues;
    let Some(manifest) = report.manifest else {
        if issues.is_empty() {
            issues.push(Issue::new("manifest.json", "is missing"));
        }
        return Err(issues);
    };
    for (field, said, wanted) in [
        ("namespace", &manifest.namespace, namespace),
        ("name", &manifest.name, name),
        ("version", &manifest.version, version),
    ] {
        if said != wanted {
            issues.push(Issue::new(
                field,
                format!("the manifest says `{said}` but the upload is for `{wanted}`"),
            ));
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    match archive::pack(dir) {
        Ok(packed) if packed.bytes == bytes => {}
        Ok(_) => {
            return Err(vec![Issue::new(
                "archive",
                "is not the deterministic pack of its own contents: pack it with `splice pkg pack`",
            )]);
        }
        Err(e) => {
            return Err(vec![Issue::new(
                "archive",
                format!("cannot be repacked: {e}"),
            )]);
        }
    }
    let manifest_json = std::fs::read(dir.join("manifest.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Ok(Verified {
        description: manifest.description,
        manifest: manifest_json,
    })
}
