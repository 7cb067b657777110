//! `splice pkg validate|pack|new`: output and exit codes (0 done, 1 failed, 2 invalid package or
//! usage). Violations go to stderr as `PATH: message`; `--json` puts one document on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::validate::{Report, check_dir};
use super::{Issue, archive, skeleton};
use crate::exit::Exit;

const EXIT_FAILED: Exit = Exit::Failed;
const EXIT_INVALID: Exit = Exit::Usage;

/// `pkg validate DIR [--json]`: `{"valid":bool,"errors":[{"path","message"}]}` with `--json`.
pub fn validate(dir: &Path, as_json: bool, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let report = check_dir(dir);
    print_issues(&report.issues, err);
    if as_json {
        let _ = writeln!(out, "{}", validity(&report));
    } else if report.valid() {
        let _ = writeln!(err, "{}: valid", dir.display());
    }
    if report.valid() {
        Exit::Success
    } else {
        EXIT_INVALID
    }
}

/// `pkg pack DIR [--out FILE] [--json]`: validate, pack, write FILE (default
/// `NAMESPACE-NAME-VERSION.tgz`) and print `FILE  SIZE bytes  sha256:HEX`, or with `--json`
/// `{"path","size","sha256"}`. An invalid package prints what validate prints and exits 2.
pub fn pack(
    dir: &Path,
    out_file: Option<&Path>,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let report = check_dir(dir);
    let Some(manifest) = report.manifest.as_ref().filter(|_| report.valid()) else {
        print_issues(&report.issues, err);
        if as_json {
            let _ = writeln!(out, "{}", validity(&report));
        }
        return EXIT_INVALID;
    };
    let packed = match archive::pack(dir) {
        Ok(packed) => packed,
        Err(archive::ArchiveError::Refused(issues)) => {
            print_issues(&issues, err);
            return EXIT_INVALID;
        }
        Err(e) => {
            let _ = writeln!(err, "splice: cannot pack: {e}");
            return EXIT_FAILED;
        }
    };
    let target = out_file.map(Path::to_path_buf).unwrap_or_else(|| {
        PathBuf::from(format!(
            "{}-{}-{}.tgz",
            manifest.namespace, manifest.name, manifest.version
        ))
    });
    if let Err(e) = write_atomically(&target, &packed.bytes) {
        let _ = writeln!(err, "splice: cannot write {}: {e}", target.display());
        return EXIT_FAILED;
    }
    let shown = target.display().to_string();
    let size = packed.bytes.len();
    if as_json {
        let line = json!({"path": shown, "size": size, "sha256": packed.sha256});
        let _ = writeln!(out, "{line}");
    } else {
        let _ = writeln!(out, "{shown}  {size} bytes  sha256:{}", packed.sha256);
    }
    Exit::Success
}

/// `pkg new DIR --namespace NS [--name NAME]`: NAME defaults to DIR's last component.
pub fn new(
    dir: &Path,
    namespace: &str,
    name: Option<&str>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let name = match name {
        Some(name) => name.to_string(),
        None => dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string(),
    };
    match skeleton::create(dir, namespace, &name) {
        Ok(files) => {
            for file in files {
                let _ = writeln!(out, "{}", dir.join(file).display());
            }
            let _ = write!(err, "{}", next_steps(dir, namespace, &name));
            Exit::Success
        }
        Err(skeleton::SkeletonError::Refused(message)) => {
            let _ = writeln!(err, "splice: {message}");
            EXIT_INVALID
        }
        Err(e) => {
            let _ = writeln!(err, "splice: {e}");
            EXIT_FAILED
        }
    }
}

/// What `pkg new` says on stderr (stdout lists the files written): where the package is and
/// the commands that take it further, each runnable as printed.
fn next_steps(dir: &Path, namespace: &str, name: &str) -> String {
    let shown = dir.display().to_string();
    let arg = crate::permissions::shell::quote_word(&shown);
    let tool = skeleton::TOOL;
    format!(
        "Created {namespace}/{name} in {shown}: the tool `{tool}` is tools/{tool}.ts, declared in \
         manifest.json, documented in SKILL.md, with an example and a test.\n\
         Next steps:\n\
         \x20 splice pkg validate {arg}  # check the manifest, SKILL.md and examples\n\
         \x20 splice pkg test {arg}  # run the examples and tests/*.test.ts (Node 22.18+)\n\
         \x20 splice pkg run {arg} {tool} '{{\"name\":\"Ada\"}}'  # call the tool once, as the model would\n\
         \x20 splice pkg pack {arg}  # the archive a registry takes\n\
         \x20 splice pkg install {arg}  # offer its tools to the model in every run\n\
         \x20 splice login --registry URL && splice publish {arg}  # publish it (--dry-run to check first)\n"
    )
}

/// Each violation as `PATH: message` a line, without escape sequences: a path names a file of
/// the package, and a hostile package can put anything in a file name.
pub(crate) fn print_issues(issues: &[Issue], err: &mut dyn Write) {
    for issue in issues {
        let text = issue.to_string();
        let _ = writeln!(err, "{}", crate::sanitize::terminal::strip_controls(&text));
    }
}

fn validity(report: &Report) -> serde_json::Value {
    json!({"valid": report.valid(), "errors": report.issues})
}

/// Write beside the target and rename, so a reader never sees half an archive.
fn write_atomically(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other("--out must name a file"))?;
    let temp = target.with_file_name(format!(".{name}.{}.tmp", crate::ids::random_suffix(8)));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&temp, target));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
