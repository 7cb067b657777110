//! What the tests run besides Rust (Node 22, the MCP reference servers, moto), fetched by
//! `scripts/test_deps.py`, the helper `scripts/test` uses: one way to get each, with no
//! system node or npm needed. It installs into the target directory under a lock and does
//! nothing when the thing is already there.

use std::path::PathBuf;
use std::process::Command;

use super::node;

/// `python3 scripts/test_deps.py WHAT --target TARGET`: the path it prints.
pub fn fetch(what: &str, env: &[(&str, &std::ffi::OsStr)]) -> Result<PathBuf, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/test_deps.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg(what)
        .arg("--target")
        .arg(node::target_dir())
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot run python3 {}: {e}", script.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().last() {
        Some(path) if output.status.success() => Ok(PathBuf::from(path)),
        _ => Err(format!(
            "`scripts/test_deps.py {what}` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )),
    }
}
