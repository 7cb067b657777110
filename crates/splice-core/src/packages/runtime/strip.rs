//! TypeScript stripped ahead of time. Node strips types itself, but loading its stripper costs
//! more than starting Node does; so the runtime strips each TypeScript file of a package once
//! (with Node's own `stripTypeScriptTypes`, in a process that runs nothing of the package),
//! keeps the result under the data directory keyed by the Node version and the source's
//! SHA-256, and hands the harness the stripped code of the files it is about to import. No
//! tool can write there: a call whose `fs.write` reaches the data directory is refused.
//! Anything that goes wrong here only means Node strips the file itself, as it would anyway.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::NodeBinary;
use crate::packages::package::Package;

/// A package with more TypeScript than this is left to Node.
const MAX_FILES: usize = 256;
const MAX_BYTES: u64 = 8 * 1024 * 1024;
const STRIP_TIMEOUT: Duration = Duration::from_secs(30);

const STRIPPER: &str = r#"import { stripTypeScriptTypes } from 'node:module';
import { readFileSync } from 'node:fs';
const sources = JSON.parse(readFileSync(0, 'utf8'));
const out = sources.map((source) => {
  try { return stripTypeScriptTypes(source, { mode: 'strip' }); } catch { return null; }
});
process.stdout.write(JSON.stringify(out));
"#;

/// Absolute path → JavaScript, for the package's TypeScript files whose stripped form is known
/// or could be made now.
pub async fn prepared(package: &Package, node: &NodeBinary) -> Map<String, Value> {
    let Some(sources) = typescript_files(&package.dir) else {
        return Map::new();
    };
    let cache = cache_dir(node);
    let mut ready = Map::new();
    let mut missing: Vec<(PathBuf, String, String)> = Vec::new();
    for (path, source) in sources {
        let key = crate::packages::archive::sha256_hex(source.as_bytes());
        match std::fs::read_to_string(cache.join(format!("{key}.js"))) {
            Ok(code) => {
                ready.insert(path.to_string_lossy().into_owned(), Value::String(code));
            }
            Err(_) => missing.push((path, key, source)),
        }
    }
    if missing.is_empty() {
        return ready;
    }
    let texts: Vec<&str> = missing.iter().map(|(_, _, s)| s.as_str()).collect();
    let Some(stripped) = strip(node, &texts).await else {
        return ready;
    };
    let stored = ensure_private_dir(&cache).is_ok();
    for ((path, key, _), code) in missing.into_iter().zip(stripped) {
        let Some(code) = code else { continue };
        if stored {
            store(&cache, &key, &code);
        }
        ready.insert(path.to_string_lossy().into_owned(), Value::String(code));
    }
    ready
}

fn cache_dir(node: &NodeBinary) -> PathBuf {
    crate::layout::Layout::process()
        .cache("ts-strip")
        .join(node.version_text())
}

/// Every `.ts`/`.mts` file of the package (hidden files and node_modules skipped, as packing
/// does), or `None` when there are too many or too large.
fn typescript_files(dir: &Path) -> Option<BTreeMap<PathBuf, String>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    let mut bytes = 0u64;
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).ok()?.filter_map(Result::ok) {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            let kind = entry.file_type().ok()?;
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() && (name.ends_with(".ts") || name.ends_with(".mts")) {
                bytes += entry.metadata().ok()?.len();
                if found.len() >= MAX_FILES || bytes > MAX_BYTES {
                    return None;
                }
                found.insert(path.clone(), std::fs::read_to_string(&path).ok()?);
            }
        }
    }
    Some(found)
}

/// Node's own stripper over `sources`, in a process with no file access and no environment;
/// `None` for a source it refused (Node will refuse it the same way when importing it).
async fn strip(node: &NodeBinary, sources: &[&str]) -> Option<Vec<Option<String>>> {
    let mut child = tokio::process::Command::new(&node.path)
        .args([
            "--permission",
            "--disable-warning=ExperimentalWarning",
            "--input-type=module",
            "-e",
            STRIPPER,
        ])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let input = serde_json::to_vec(sources).ok()?;
    let mut stdin = child.stdin.take()?;
    let mut stdout = child.stdout.take()?;
    let work = async {
        let write = async {
            let _ = stdin.write_all(&input).await;
            drop(stdin);
        };
        let mut out = Vec::new();
        let ((), read, status) = tokio::join!(write, stdout.read_to_end(&mut out), child.wait());
        (read.is_ok() && status.is_ok_and(|s| s.success())).then_some(out)
    };
    let out = tokio::time::timeout(STRIP_TIMEOUT, work).await.ok()??;
    let stripped: Vec<Option<String>> = serde_json::from_slice(&out).ok()?;
    (stripped.len() == sources.len()).then_some(stripped)
}

fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Beside the target and renamed, so a reader never sees half a file.
fn store(dir: &Path, key: &str, code: &str) {
    let target = dir.join(format!("{key}.js"));
    let temp = dir.join(format!(".{key}.{}.tmp", crate::ids::random_suffix(8)));
    if std::fs::write(&temp, code)
        .and_then(|()| std::fs::rename(&temp, &target))
        .is_err()
    {
        let _ = std::fs::remove_file(&temp);
    }
}
