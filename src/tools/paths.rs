//! Confining tool paths to the run's working root.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// Resolve a path argument against `root`, refusing anything that lands outside it, through
/// `..` or through a symlink. The file itself need not exist.
pub fn resolve(root: &Path, raw: &str) -> Result<PathBuf, ToolError> {
    let outside = || ToolError::OutsideRoot(raw.to_string());
    let candidate = Path::new(raw);
    let joined = if candidate.is_absolute() {
        candidate.to_path_buf()
    } else {
        root.join(candidate)
    };
    let normal = normalize(&joined).ok_or_else(outside)?;
    if !normal.starts_with(root) {
        return Err(outside());
    }
    // Symlinks: the deepest existing ancestor must still be inside the canonical root.
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut existing = normal.as_path();
    while !existing.exists() {
        match existing.parent() {
            Some(parent) => existing = parent,
            None => break,
        }
    }
    if let Ok(real) = existing.canonicalize()
        && !real.starts_with(&canonical_root)
    {
        return Err(outside());
    }
    Ok(normal)
}

/// The path relative to root, with forward slashes, for events and messages.
pub fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Lexical normalization: drop `.`, apply `..`; `None` when `..` climbs above the filesystem root.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_escapes_and_accepts_inside() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        assert!(resolve(&root, "src/../a.txt").is_ok());
        assert!(resolve(&root, "../a.txt").is_err());
        assert!(resolve(&root, "/etc/passwd").is_err());
        let inside = root.join("b.txt");
        assert_eq!(resolve(&root, &inside.to_string_lossy()).ok(), Some(inside));
    }

    #[test]
    fn refuses_symlink_out_of_root() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/tmp", root.join("link")).unwrap_or_else(|e| panic!("{e}"));
        assert!(resolve(&root, "link/x").is_err());
    }
}
