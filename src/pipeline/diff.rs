//! The change so far, as the reviewing stages see it: `git diff` against HEAD plus new files.

use std::path::Path;
use std::process::Command;

/// Diff text handed to a model, at most.
const MAX_DIFF: usize = 24 * 1024;

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The working tree's change against HEAD, new untracked files included in full.
pub fn change(root: &Path) -> String {
    let Some(mut text) = git(root, &["diff", "--no-color", "HEAD"]) else {
        return "(no git history to diff against; read the files directly)".into();
    };
    if let Some(untracked) = git(root, &["ls-files", "--others", "--exclude-standard"]) {
        for path in untracked.lines().filter(|l| !l.is_empty()) {
            // Opened beneath the root, regular files only: a link to a FIFO or a device (or out
            // of the root) must not hang the run or reach the model.
            let content = crate::tools::beneath::read(root, &root.join(path))
                .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_else(|e| format!("({e})"));
            text.push_str(&format!("new file {path}:\n{content}\n"));
        }
    }
    if text.trim().is_empty() {
        return "(no changes)".into();
    }
    crate::tools::cap_output(&text, MAX_DIFF).0
}
