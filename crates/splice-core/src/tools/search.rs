//! `list_files` and `search_files`: walks that honour .gitignore (with or without a `.git`).

use std::path::Path;

use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use regex::Regex;

use super::paths::{display, resolve};
use super::{ListArgs, SearchArgs, ToolError};
use crate::confine::beneath;

const MAX_LISTED: usize = 2000;
const MAX_MATCHES: usize = 500;
const MAX_SEARCHED_FILE_BYTES: u64 = 2 * 1024 * 1024;
const MAX_MATCH_LINE_CHARS: usize = 300;

fn walker(root: &Path, start: &Path, glob: Option<&str>) -> Result<ignore::Walk, ToolError> {
    let mut builder = WalkBuilder::new(start);
    builder
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    if let Some(glob) = glob {
        let mut overrides = OverrideBuilder::new(root);
        overrides
            .add(glob)
            .map_err(|e| ToolError::InvalidArguments(format!("bad glob `{glob}`: {e}")))?;
        let built = overrides
            .build()
            .map_err(|e| ToolError::InvalidArguments(format!("bad glob `{glob}`: {e}")))?;
        builder.overrides(built);
    }
    Ok(builder.build())
}

/// Relative paths of the files under `path`, one a line, sorted. Returns (listing, truncated).
pub fn list_files(root: &Path, args: &ListArgs) -> Result<(String, bool), ToolError> {
    let start = resolve(root, args.path.as_deref().unwrap_or("."))?;
    if !start.exists() {
        return Err(ToolError::Failed(format!(
            "{} does not exist",
            args.path.as_deref().unwrap_or(".")
        )));
    }
    let mut lines = Vec::new();
    let mut truncated = false;
    for entry in walker(root, &start, args.glob.as_deref())?.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if lines.len() == MAX_LISTED {
            truncated = true;
            break;
        }
        lines.push(display(root, entry.path()));
    }
    let mut text = lines.join("\n");
    if truncated {
        text.push_str(&format!(
            "\n[… more than {MAX_LISTED} files; narrow with path or glob …]"
        ));
    }
    if lines.is_empty() {
        text = "(no files)".into();
    }
    Ok((text, truncated))
}

/// `path:line: text` for each line matching the regex. Returns (matches, truncated).
pub fn search_files(root: &Path, args: &SearchArgs) -> Result<(String, bool), ToolError> {
    let regex = Regex::new(&args.pattern)
        .map_err(|e| ToolError::InvalidArguments(format!("bad pattern: {e}")))?;
    let start = resolve(root, args.path.as_deref().unwrap_or("."))?;
    let mut out = Vec::new();
    let mut truncated = false;
    'files: for entry in walker(root, &start, args.glob.as_deref())?.flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        // Opened beneath the root as a regular file: the walk saw a file, but a FIFO or device
        // swapped in since must not hang the search.
        let Ok(bytes) = beneath::read_at_most(root, entry.path(), MAX_SEARCHED_FILE_BYTES) else {
            continue;
        };
        if bytes.contains(&0) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let shown = display(root, entry.path());
        for (number, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                if out.len() == MAX_MATCHES {
                    truncated = true;
                    break 'files;
                }
                let line: String = line.chars().take(MAX_MATCH_LINE_CHARS).collect();
                out.push(format!("{shown}:{}: {line}", number + 1));
            }
        }
    }
    let mut text = out.join("\n");
    if truncated {
        text.push_str(&format!(
            "\n[… more than {MAX_MATCHES} matches; narrow the search …]"
        ));
    }
    if out.is_empty() {
        text = "(no matches)".into();
    }
    Ok((text, truncated))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize dir");
        let write = |p: &str, c: &str| {
            let path = root.join(p);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("create parent");
            }
            std::fs::write(path, c).expect("write path");
        };
        write(".gitignore", "target/\n");
        write("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n");
        write("target/out.rs", "fn main() {}\n");
        write("notes.md", "main idea\n");
        (dir, root)
    }

    #[test]
    fn listing_honours_gitignore_and_glob() {
        let (_dir, root) = tree();
        let args = ListArgs {
            path: None,
            glob: None,
        };
        let (text, _) = list_files(&root, &args).unwrap_or_default();
        assert_eq!(text, "notes.md\nsrc/main.rs");
        let args = ListArgs {
            path: None,
            glob: Some("*.md".into()),
        };
        assert_eq!(list_files(&root, &args).unwrap_or_default().0, "notes.md");
    }

    #[test]
    fn search_reports_path_line_and_text() {
        let (_dir, root) = tree();
        let args = SearchArgs {
            pattern: r"fn \w+".into(),
            path: None,
            glob: None,
        };
        let (text, truncated) = search_files(&root, &args).unwrap_or_default();
        assert_eq!(text, "src/main.rs:1: fn main() {");
        assert!(!truncated);
        let bad = SearchArgs {
            pattern: "(".into(),
            path: None,
            glob: None,
        };
        assert!(matches!(
            search_files(&root, &bad),
            Err(ToolError::InvalidArguments(_))
        ));
    }
}
