//! Confining tool paths to the run's working root.

use std::path::{Component, Path, PathBuf};

use super::ToolError;
use crate::confine::beneath::{self, Escape};

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
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let relative = normal.strip_prefix(root).map_err(|_| outside())?;
    match physical_location(&canonical_root, relative) {
        Some(real) if real.starts_with(&canonical_root) => Ok(normal),
        _ => Err(outside()),
    }
}

/// Most symlinks followed for one path, as the kernel's own limit.
const MAX_LINK_HOPS: usize = 40;

/// Where `relative` under `start` really lands, following every symlink on the way the way the
/// kernel would, dangling ones included (a write through a dangling link creates its target).
/// `None` for a link loop.
fn physical_location(start: &Path, relative: &Path) -> Option<PathBuf> {
    let mut current = start.to_path_buf();
    let mut queue: std::collections::VecDeque<std::ffi::OsString> = relative
        .components()
        .map(|c| c.as_os_str().to_os_string())
        .collect();
    let mut hops = 0;
    while let Some(part) = queue.pop_front() {
        if part == ".." {
            current.pop();
            continue;
        }
        if part == "." {
            continue;
        }
        let next = current.join(&part);
        let is_link = std::fs::symlink_metadata(&next)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if !is_link {
            current = next;
            continue;
        }
        hops += 1;
        if hops > MAX_LINK_HOPS {
            return None;
        }
        let target = std::fs::read_link(&next).ok()?;
        if target.is_absolute() {
            current = PathBuf::from("/");
        }
        for component in target.components().rev() {
            match component {
                Component::RootDir | Component::Prefix(_) => {}
                other => queue.push_front(other.as_os_str().to_os_string()),
            }
        }
    }
    Some(current)
}

/// `resolve` for a write: besides staying inside the root, the path must not be inside a
/// `.git` directory, whose config can make a later, approved `git` command run anything:
/// neither as written nor where its directories and links really lead (the write itself is
/// judged again when it opens the file).
pub fn resolve_for_write(root: &Path, raw: &str) -> Result<PathBuf, ToolError> {
    let path = resolve(root, raw)?;
    let inside_git = path
        .strip_prefix(root)
        .map(|relative| relative.components().any(|c| c.as_os_str() == ".git"))
        .unwrap_or(true);
    if inside_git {
        return Err(ToolError::Protected(raw.to_string()));
    }
    match beneath::check_write(root, &path) {
        Ok(()) => Ok(path),
        Err(error) => Err(match Escape::of(&error) {
            Some(Escape::Protected | Escape::HardLinked) => ToolError::Protected(raw.to_string()),
            Some(Escape::Outside) => ToolError::OutsideRoot(raw.to_string()),
            Some(Escape::Own) => ToolError::Failed(format!(
                "`{raw}` is in Splice's own config or data directory, which file tools do not write"
            )),
            Some(Escape::HookFile) => ToolError::Failed(format!(
                "`{raw}` is run by one of the project's approved hooks or MCP servers, which run \
                 outside the sandbox, so file tools do not change it during the session (the \
                 person can)"
            )),
            None => ToolError::Failed(format!("cannot write {raw}: {error}")),
        }),
    }
}

/// The path relative to root, with forward slashes, for events and messages.
pub fn display(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Lexical normalization: drop `.`, apply `..`; `None` when `..` climbs above the filesystem root.
pub(crate) fn normalize(path: &Path) -> Option<PathBuf> {
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
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize dir");
        assert!(resolve(&root, "src/../a.txt").is_ok());
        assert!(resolve(&root, "../a.txt").is_err());
        assert!(resolve(&root, "/etc/passwd").is_err());
        let inside = root.join("b.txt");
        assert_eq!(resolve(&root, &inside.to_string_lossy()).ok(), Some(inside));
    }

    #[test]
    fn refuses_dangling_symlinks_out_of_root_and_follows_ones_inside() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).expect("create sub");
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).expect("link name")
        };
        // Targets that do not exist yet: a write would create them.
        link(&base.join("outside.txt"), "evil");
        link(Path::new("../outside-too.txt"), "evil_relative");
        link(Path::new("sub/../sub/new.txt"), "fine");
        link(Path::new("loop"), "loop");
        assert!(resolve(&root, "evil").is_err());
        assert!(resolve(&root, "evil_relative").is_err());
        assert!(resolve(&root, "loop").is_err());
        assert_eq!(resolve(&root, "fine").ok(), Some(root.join("fine")));
    }

    #[test]
    fn refuses_symlink_out_of_root() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize dir");
        std::os::unix::fs::symlink("/tmp", root.join("link")).expect("link link");
        assert!(resolve(&root, "link/x").is_err());
    }
}
