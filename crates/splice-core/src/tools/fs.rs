//! File tools: reading, and writes planned as a list of changes before they are applied, so the
//! permission prompt can show the diff and the checkpoint can save what is about to change.

use std::path::Path;

use crate::confine::beneath;
use crate::confine::change::FileChange;

use super::paths::{display, resolve, resolve_for_write};
use super::{EditArgs, MAX_OUTPUT_BYTES, ReadArgs, ToolError, WriteArgs};

/// Default number of lines `read_file` returns without a `limit`.
const DEFAULT_READ_LINES: usize = 2000;

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
    let file = beneath::open_regular(root, &path)
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", args.path)))?;
    page(std::io::BufReader::new(file), args)
}

/// `read_file` through the editor's buffer: the path checked beneath the root as for a read
/// from disk (a regular file opened beneath it), the text the client holds paged the same way.
pub async fn read_through(
    root: &Path,
    args: &ReadArgs,
    files: &std::sync::Arc<dyn crate::bus::ClientFiles>,
) -> Result<(String, bool), ToolError> {
    let path = resolve(root, &args.path)?;
    let checked = (root.to_path_buf(), path.clone());
    let shown = args.path.clone();
    let regular = crate::blocking::atomic(move || {
        if checked.1.is_dir() {
            return Err(format!("{shown} is a directory; use list_files"));
        }
        beneath::open_regular(&checked.0, &checked.1)
            .map(drop)
            .map_err(|e| format!("cannot read {shown}: {e}"))
    });
    regular.map_err(ToolError::Failed)?;
    let text = files
        .read(path)
        .await
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", args.path)))?;
    page(std::io::Cursor::new(text.into_bytes()), args)
}

/// Every change writes text (none deletes, all UTF-8): what an editor can take.
pub fn all_text(changes: &[FileChange]) -> bool {
    changes.iter().all(|c| {
        c.after
            .as_ref()
            .is_some_and(|bytes| std::str::from_utf8(bytes).is_ok())
    })
}

/// Write planned text changes through the editor, each path checked beneath the root again
/// right before (as the kernel checks a write to disk). Each write is a task of its own, so an
/// interrupt never leaves one half sent.
pub async fn write_through(
    root: &Path,
    changes: &[FileChange],
    files: &std::sync::Arc<dyn crate::bus::ClientFiles>,
) -> Result<(), ToolError> {
    for change in changes {
        resolve_for_write(root, &change.shown)?;
        let text = change
            .after
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        let write = files.write(change.path.clone(), text);
        let written = tokio::spawn(write)
            .await
            .map_err(|e| ToolError::Failed(format!("the write stopped: {e}")))?;
        written.map_err(|e| ToolError::Failed(format!("cannot write {}: {e}", change.shown)))?;
    }
    Ok(())
}

/// One `read_file` page of `reader`, with the note that says how to read on.
fn page(reader: impl std::io::BufRead, args: &ReadArgs) -> Result<(String, bool), ToolError> {
    let first = args.offset.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(DEFAULT_READ_LINES);
    let page = read_lines(reader, first, limit, MAX_OUTPUT_BYTES * 4)
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", args.path)))?;
    let mut bytes = page.bytes;
    if page.cut {
        // The byte budget may have split a character: drop its first half.
        if let Err(error) = std::str::from_utf8(&bytes)
            && error.error_len().is_none()
        {
            bytes.truncate(error.valid_up_to());
        }
    }
    let mut text = String::from_utf8(bytes)
        .map_err(|_| ToolError::Failed(format!("{} is not a UTF-8 text file", args.path)))?;
    let next = first + page.lines;
    if page.cut {
        text.push_str(&format!(
            "\n[… line {next} is cut here at {} bytes of output; read on with offset …]\n",
            MAX_OUTPUT_BYTES * 4
        ));
    } else if page.more {
        text.push_str(&format!(
            "\n[… lines from {next} not shown; read on with offset {next} …]\n"
        ));
    }
    Ok((text, first > 1 || page.more || page.cut))
}

/// The lines of one `read_file` page, read without holding more than the page.
struct Page {
    bytes: Vec<u8>,
    /// Whole lines in `bytes`.
    lines: usize,
    /// More lines follow the page.
    more: bool,
    /// The byte budget ended the page inside a line.
    cut: bool,
}

/// Lines `first..first + limit` (1-based) of `reader`, at most `budget` bytes of them. Lines
/// before `first` are skipped without being kept, so memory stays bounded by the budget
/// whatever the size of the file or of one line in it.
fn read_lines(
    mut reader: impl std::io::BufRead,
    first: usize,
    limit: usize,
    budget: usize,
) -> std::io::Result<Page> {
    let mut skipped = 1;
    while skipped < first {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                skipped += 1;
            }
            None => {
                let length = buffer.len();
                reader.consume(length);
            }
        }
    }
    let mut page = Page {
        bytes: Vec::new(),
        lines: 0,
        more: false,
        cut: false,
    };
    while page.lines < limit {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(page);
        }
        let (taken, ends_line) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buffer.len(), false),
        };
        let room = budget - page.bytes.len();
        if taken > room {
            page.bytes.extend_from_slice(&buffer[..room]);
            page.cut = true;
            return Ok(page);
        }
        page.bytes.extend_from_slice(&buffer[..taken]);
        reader.consume(taken);
        if ends_line {
            page.lines += 1;
        }
    }
    page.more = !reader.fill_buf()?.is_empty();
    Ok(page)
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
    plan_edit_of(root, args, path, before)
}

/// `edit_file` on the text the editor holds (unsaved changes included): the path checked as
/// for a write, the buffer read through the client, the edit planned on it.
pub async fn plan_edit_through(
    root: &Path,
    args: &EditArgs,
    files: &std::sync::Arc<dyn crate::bus::ClientFiles>,
) -> Result<Vec<FileChange>, ToolError> {
    let path = crate::blocking::atomic(|| resolve_for_write(root, &args.path))?;
    let before = files
        .read(path.clone())
        .await
        .map_err(|e| ToolError::Failed(format!("cannot read {}: {e}", args.path)))?;
    plan_edit_of(root, args, path, before.into_bytes())
}

fn plan_edit_of(
    root: &Path,
    args: &EditArgs,
    path: std::path::PathBuf,
    before: Vec<u8>,
) -> Result<Vec<FileChange>, ToolError> {
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
    crate::confine::change::apply(root, changes).map_err(|e| ToolError::Failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize dir");
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
        std::fs::write(root.join("a.txt"), "x y x").expect("write a.txt");
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
        std::fs::write(root.join("a.txt"), "1\n2\n3\n4\n").expect("write a.txt");
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
    fn a_page_keeps_only_its_lines_within_the_budget() {
        // A 1 MiB first line is skipped without being kept, and a long line is cut at the budget.
        let long = "x".repeat(1024 * 1024);
        let text = format!("{long}\nshort\n{long}\nlast\n");
        let reader = std::io::BufReader::with_capacity(64, text.as_bytes());
        let page = read_lines(reader, 2, 10, 100).expect("read lines reader");
        assert!(page.cut);
        assert_eq!(page.lines, 1);
        assert_eq!(page.bytes.len(), 100);
        assert!(page.bytes.starts_with(b"short\nxxx"));
        assert!(
            page.bytes.capacity() < 4096,
            "kept {}",
            page.bytes.capacity()
        );
        let page = read_lines(&b"a\nb\nc"[..], 1, 2, 100).expect("read lines");
        assert_eq!((page.bytes.as_slice(), page.more), (&b"a\nb\n"[..], true));
        let page = read_lines(&b"a\nb"[..], 1, 2, 100).expect("read lines");
        assert_eq!((page.bytes.as_slice(), page.more), (&b"a\nb"[..], false));
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
        apply(&root, &plan).expect("apply root");
        assert_eq!(
            std::fs::read_to_string(root.join("deep/new.txt"))
                .ok()
                .as_deref(),
            Some("hi")
        );
    }
}
