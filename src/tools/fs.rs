//! File tools: reading, and writes planned as a list of changes before they are applied, so the
//! permission prompt can show the diff and the checkpoint can save what is about to change.

use std::path::{Path, PathBuf};

use super::beneath;
use super::paths::{display, resolve, resolve_for_write};
use super::{EditArgs, MAX_OUTPUT_BYTES, ReadArgs, ToolError, WriteArgs, cap_output};

/// Default number of lines `read_file` returns without a `limit`.
const DEFAULT_READ_LINES: usize = 2000;

/// One file about to change: `after == None` deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// Relative to the root, forward slashes.
    pub shown: String,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

fn read_existing(root: &Path, path: &Path) -> Result<Option<Vec<u8>>, ToolError> {
    match beneath::read(root, path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ToolError::Failed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

pub fn read_file(root: &Path, args: &ReadArgs) -> Result<(String, bool), ToolError> {
    let path = resolve(root, &args.path)?;
    if path.is_dir() {
        return Err(ToolError::Failed(format!(
            "{} is a directory; use list_files",
            args.path
        )));
    }
    let bytes = beneath::read(root, &path)
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", args.path)))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| ToolError::Failed(format!("{} is not a UTF-8 text file", args.path)))?;
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LINES);
    let total = text.lines().count();
    let mut selected: String = text
        .split_inclusive('\n')
        .skip(first - 1)
        .take(limit)
        .collect();
    let mut cut = first > 1 || first - 1 + limit < total;
    if first - 1 + limit < total {
        selected.push_str(&format!(
            "\n[… lines {}–{total} not shown; read on with offset …]\n",
            first + limit
        ));
    }
    let (capped, truncated) = cap_output(&selected, MAX_OUTPUT_BYTES * 4);
    cut |= truncated;
    Ok((capped, cut))
}

/// One file to become `after` (`None`: deleted): confined to the root and out of `.git`, with
/// what it holds now read beneath the root. Shared by `write_file` and the pipeline's
/// submissions.
pub fn plan_file(root: &Path, raw: &str, after: Option<Vec<u8>>) -> Result<FileChange, ToolError> {
    let path = resolve_for_write(root, raw)?;
    if path.is_dir() {
        return Err(ToolError::Failed(format!("{raw} is a directory")));
    }
    Ok(FileChange {
        shown: display(root, &path),
        before: read_existing(root, &path)?,
        after,
        path,
    })
}

pub fn plan_write(root: &Path, args: &WriteArgs) -> Result<Vec<FileChange>, ToolError> {
    let after = Some(args.content.clone().into_bytes());
    Ok(vec![plan_file(root, &args.path, after)?])
}

pub fn plan_edit(root: &Path, args: &EditArgs) -> Result<Vec<FileChange>, ToolError> {
    let path = resolve_for_write(root, &args.path)?;
    let before = read_existing(root, &path)?
        .ok_or_else(|| ToolError::Failed(format!("{} does not exist", args.path)))?;
    let text = String::from_utf8(before.clone())
        .map_err(|_| ToolError::Failed(format!("{} is not a UTF-8 text file", args.path)))?;
    if args.old_string.is_empty() {
        return Err(ToolError::Failed(
            "old_string is empty; use write_file to create a file".into(),
        ));
    }
    let count = text.matches(args.old_string.as_str()).count();
    let after = match count {
        0 => {
            return Err(ToolError::Failed(format!(
                "old_string was not found in {}; read the file again and copy the text exactly",
                args.path
            )));
        }
        1 => text.replacen(args.old_string.as_str(), &args.new_string, 1),
        n if args.replace_all => {
            let _ = n;
            text.replace(args.old_string.as_str(), &args.new_string)
        }
        n => {
            return Err(ToolError::Failed(format!(
                "old_string occurs {n} times in {}; add surrounding lines to make it unique or set replace_all",
                args.path
            )));
        }
    };
    Ok(vec![FileChange {
        shown: display(root, &path),
        before: Some(before),
        after: Some(after.into_bytes()),
        path,
    }])
}

/// Write or delete every planned file, each opened beneath `root` by the kernel.
pub fn apply(root: &Path, changes: &[FileChange]) -> Result<(), ToolError> {
    for change in changes {
        match &change.after {
            Some(bytes) => beneath::write(root, &change.path, bytes)
                .map_err(|e| ToolError::Failed(format!("cannot write {}: {e}", change.shown)))?,
            None => beneath::remove(root, &change.path)
                .map_err(|e| ToolError::Failed(format!("cannot delete {}: {e}", change.shown)))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        (dir, root)
    }

    fn edit(path: &str, old: &str, new: &str, all: bool) -> EditArgs {
        EditArgs {
            path: path.into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn edit_requires_exactly_one_match() {
        let (_dir, root) = root();
        std::fs::write(root.join("a.txt"), "x y x").unwrap_or_else(|e| panic!("{e}"));
        let missing = plan_edit(&root, &edit("a.txt", "z", "q", false));
        assert!(matches!(missing, Err(ToolError::Failed(m)) if m.contains("not found")));
        let twice = plan_edit(&root, &edit("a.txt", "x", "q", false));
        assert!(matches!(twice, Err(ToolError::Failed(m)) if m.contains("2 times")));
        let all = plan_edit(&root, &edit("a.txt", "x", "q", true)).unwrap_or_default();
        assert_eq!(all[0].after.as_deref(), Some(&b"q y q"[..]));
    }

    #[test]
    fn read_pages_with_offset_and_limit() {
        let (_dir, root) = root();
        std::fs::write(root.join("a.txt"), "1\n2\n3\n4\n").unwrap_or_else(|e| panic!("{e}"));
        let args = ReadArgs {
            path: "a.txt".into(),
            offset: Some(2),
            limit: Some(2),
        };
        let (text, cut) = read_file(&root, &args).unwrap_or_default();
        assert!(text.starts_with("2\n3\n"));
        assert!(cut);
    }

    #[test]
    fn write_creates_parent_directories() {
        let (_dir, root) = root();
        let args = WriteArgs {
            path: "deep/new.txt".into(),
            content: "hi".into(),
        };
        let plan = plan_write(&root, &args).unwrap_or_default();
        assert_eq!(plan[0].before, None);
        apply(&root, &plan).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read_to_string(root.join("deep/new.txt"))
                .ok()
                .as_deref(),
            Some("hi")
        );
    }
}
