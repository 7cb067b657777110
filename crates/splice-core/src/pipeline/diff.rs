//! The change so far, as the reviewing stages see it: `git diff` against HEAD plus new files.
//! Only as much as a model is shown is read (of git's output and of each new file). Git runs
//! as an async process that an interrupt kills, and the file reads run on the blocking pool,
//! so a huge change neither stalls the run's thread nor holds up an interrupt.

use std::path::Path;
use std::process::Stdio;

use tokio::io::AsyncReadExt;

use crate::blocking::detached;
use crate::git::{Access, DIFF_FLAGS};

/// Diff text handed to a model, at most.
const MAX_DIFF: usize = 24 * 1024;
/// Room kept for the note that says the diff was cut.
const NOTE_ROOM: usize = 64;
/// Names of new files read, at most (NUL-separated).
const MAX_NAMES: u64 = 256 * 1024;

/// Git's output up to `limit` bytes and whether it was cut there; a git that fails gives `None`.
/// Past the limit git is stopped rather than waited for, and so it is when the future is
/// dropped.
async fn git(root: &Path, args: &[&str], limit: u64) -> Option<(Vec<u8>, bool)> {
    let dir = root.to_path_buf();
    // Vetting the repository's config runs git too.
    let command = detached(move || crate::git::command(&dir, Access::Read).ok()).await??;
    let mut child = tokio::process::Command::from(command)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let mut out = Vec::new();
    let read = match child.stdout.take() {
        Some(stdout) => stdout.take(limit).read_to_end(&mut out).await.is_ok(),
        None => false,
    };
    if read && out.len() as u64 >= limit {
        let _ = child.kill().await;
        return Some((out, true));
    }
    let status = child.wait().await.ok()?;
    (read && status.success()).then_some((out, false))
}

/// The working tree's change against HEAD, new untracked files included (as much of each as
/// still fits the diff's budget, read beneath the root: a command may have made one a link).
pub async fn change(root: &Path) -> String {
    let mut args = vec!["diff", "--no-color"];
    args.extend(DIFF_FLAGS);
    args.push("HEAD");
    let budget = MAX_DIFF - NOTE_ROOM;
    let Some((diff, cut)) = git(root, &args, budget as u64).await else {
        return "(no git history to diff against; read the files directly)".into();
    };
    let mut text = String::from_utf8_lossy(&diff).into_owned();
    if cut {
        text.push_str("\n[… the rest of the change is not shown …]\n");
        return text;
    }
    let listing = ["ls-files", "-z", "--others", "--exclude-standard"];
    if let Some((untracked, cut)) = git(root, &listing, MAX_NAMES).await {
        let root = root.to_path_buf();
        text = detached(move || with_new_files(&root, text, untracked, cut, budget))
            .await
            .unwrap_or_default();
    }
    if text.trim().is_empty() {
        return "(no changes)".into();
    }
    crate::tools::cap_output(&text, MAX_DIFF).0
}

/// `text` followed by the new files named in `untracked` (NUL-separated; `cut`: the last name
/// may be incomplete), as much as fits `budget`.
fn with_new_files(
    root: &Path,
    mut text: String,
    mut untracked: Vec<u8>,
    cut: bool,
    budget: usize,
) -> String {
    if cut {
        let end = untracked.iter().rposition(|b| *b == 0).unwrap_or(0);
        untracked.truncate(end);
    }
    for path in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let path = String::from_utf8_lossy(path);
        let room = budget.saturating_sub(text.len());
        if room == 0 {
            text.push_str("(more new files not shown)\n");
            break;
        }
        let content =
            crate::confine::beneath::read_prefix(root, &root.join(path.as_ref()), room as u64)
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_else(|e| format!("(not read: {e})"));
        text.push_str(&format!("new file {path}:\n{content}\n"));
    }
    text
}
