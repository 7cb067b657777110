//! The change so far, as the reviewing stages see it: `git diff` against HEAD plus new files.

use std::path::Path;

use crate::git::{Access, DIFF_FLAGS};

/// Diff text handed to a model, at most.
const MAX_DIFF: usize = 24 * 1024;

fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let output = crate::git::command(root, Access::Read)
        .ok()?
        .args(args)
        .output()
        .ok()?;
    output.status.success().then_some(output.stdout)
}

/// The working tree's change against HEAD, new untracked files included (as much of each as
/// still fits the diff's budget, read beneath the root: a command may have made one a link).
pub fn change(root: &Path) -> String {
    let mut args = vec!["diff", "--no-color"];
    args.extend(DIFF_FLAGS);
    args.push("HEAD");
    let Some(diff) = git(root, &args) else {
        return "(no git history to diff against; read the files directly)".into();
    };
    let mut text = String::from_utf8_lossy(&diff).into_owned();
    if let Some(untracked) = git(root, &["ls-files", "-z", "--others", "--exclude-standard"]) {
        for path in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let path = String::from_utf8_lossy(path);
            let room = MAX_DIFF.saturating_sub(text.len());
            if room == 0 {
                text.push_str("(more new files not shown)\n");
                break;
            }
            let content =
                crate::tools::beneath::read_prefix(root, &root.join(path.as_ref()), room as u64)
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                    .unwrap_or_else(|e| format!("(not read: {e})"));
            text.push_str(&format!("new file {path}:\n{content}\n"));
        }
    }
    if text.trim().is_empty() {
        return "(no changes)".into();
    }
    crate::tools::cap_output(&text, MAX_DIFF).0
}
