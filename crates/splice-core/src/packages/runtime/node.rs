//! Finding Node: `SPLICE_NODE`, else the config key `node`, else `node` on PATH; 22.18 or newer
//! (the first 22 that strips TypeScript types without a flag).

use std::path::{Path, PathBuf};

use super::{CallError, CallErrorCode};

/// The oldest Node the runtime runs tools with.
pub const MINIMUM: (u64, u64, u64) = (22, 18, 0);
pub const NODE_ENV: &str = "SPLICE_NODE";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeBinary {
    /// Absolute.
    pub path: PathBuf,
    pub version: (u64, u64, u64),
}

impl NodeBinary {
    pub fn version_text(&self) -> String {
        let (a, b, c) = self.version;
        format!("{a}.{b}.{c}")
    }
}

/// The Node to run tools with, checked against [`MINIMUM`].
pub fn find_node(config_node: Option<&Path>) -> Result<NodeBinary, CallError> {
    let (path, source) = match std::env::var_os(NODE_ENV).filter(|v| !v.is_empty()) {
        Some(path) => (PathBuf::from(path), NODE_ENV.to_string()),
        None => match config_node {
            Some(path) => (path.to_path_buf(), "the config key `node`".to_string()),
            None => (
                on_path("node").ok_or_else(|| {
                    CallError::new(
                        CallErrorCode::NodeMissing,
                        format!(
                            "no `node` on PATH; install Node {}.{}.{} or newer, or set {NODE_ENV}",
                            MINIMUM.0, MINIMUM.1, MINIMUM.2
                        ),
                    )
                })?,
                "PATH".to_string(),
            ),
        },
    };
    let missing = |why: String| {
        CallError::new(
            CallErrorCode::NodeMissing,
            format!("{} (from {source}) {why}", path.display()),
        )
    };
    let path = path
        .canonicalize()
        .map_err(|e| missing(format!("cannot be used: {e}")))?;
    let version = match cached_version(&path) {
        Some(version) => version,
        None => {
            let version = version_of(&path).map_err(missing)?;
            remember_version(&path, version);
            version
        }
    };
    let node = NodeBinary { path, version };
    if version < MINIMUM {
        return Err(CallError::new(
            CallErrorCode::NodeTooOld,
            format!(
                "{} (from {source}) is Node {}; packages need {}.{}.{} or newer",
                node.path.display(),
                node.version_text(),
                MINIMUM.0,
                MINIMUM.1,
                MINIMUM.2
            ),
        ));
    }
    Ok(node)
}

/// `name` in a PATH directory, as a file that can be executed.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(&std::env::var_os("PATH")?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|path| {
            path.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `node --version`, run with an empty environment (NODE_OPTIONS could load code).
fn version_of(path: &Path) -> Result<(u64, u64, u64), String> {
    let output = std::process::Command::new(path)
        .arg("--version")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot be run: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    parse_version(text.trim().trim_start_matches('v'))
        .filter(|_| output.status.success())
        .ok_or_else(|| format!("is not Node (`--version` printed {:?})", text.trim()))
}

/// The file's identity: a replaced or rewritten binary (even one given its old mtime back)
/// changes its inode or ctime.
fn identity(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = path.metadata().ok()?;
    Some(format!(
        "{} {} {} {}.{} {}.{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

/// `node --version` costs as much as a quarter of a Node start; it is kept per binary in the
/// data directory's cache, one small file per path.
fn version_cache(path: &Path) -> PathBuf {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(path.as_os_str().as_encoded_bytes());
    let name = crate::ids::hex(&digest[..16]);
    crate::layout::Layout::process()
        .cache("node-version")
        .join(name)
}

fn cached_version(path: &Path) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(version_cache(path)).ok()?;
    let (identity_line, version) = text.split_once('\n')?;
    (identity_line == identity(path)?)
        .then(|| parse_version(version.trim()))
        .flatten()
}

fn remember_version(path: &Path, version: (u64, u64, u64)) {
    use std::os::unix::fs::DirBuilderExt;
    let Some(identity) = identity(path) else {
        return;
    };
    let file = version_cache(path);
    let Some(dir) = file.parent() else { return };
    if std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .is_err()
    {
        return;
    }
    let temp = file.with_extension(crate::ids::random_suffix(8));
    let text = format!("{identity}\n{}.{}.{}\n", version.0, version.1, version.2);
    if std::fs::write(&temp, text)
        .and_then(|()| std::fs::rename(&temp, &file))
        .is_err()
    {
        let _ = std::fs::remove_file(&temp);
    }
}

/// `22.18.0` (a pre-release or build suffix is ignored: Node's own nightlies and release
/// candidates count as their version).
pub fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let version = semver::Version::parse(text).ok()?;
    Some((version.major, version.minor, version.patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_compare() {
        assert_eq!(parse_version("22.18.0"), Some((22, 18, 0)));
        assert_eq!(parse_version("22.9.1-rc.1"), Some((22, 9, 1)));
        assert_eq!(parse_version("22.18"), None);
        assert_eq!(parse_version("x.1.2"), None);
        assert!(parse_version("22.9.0") < Some(MINIMUM));
        assert!(parse_version("23.0.0") > Some(MINIMUM));
    }
}
