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
            // Beneath the root and regular files only, like every file Splice reads on its own:
            // a new link to `/proc/self/environ` must not put Splice's environment in a prompt.
            let content = match crate::tools::beneath::read_prefix(root, Path::new(path), MAX_DIFF)
            {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(error) => format!("(not read: {error})"),
            };
            text.push_str(&format!("new file {path}:\n{content}\n"));
        }
    }
    if text.trim().is_empty() {
        return "(no changes)".into();
    }
    crate::tools::cap_output(&text, MAX_DIFF).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_ok(root: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .status()
            .unwrap_or_else(|e| panic!("git: {e}"));
        assert!(status.success(), "git {args:?}");
    }

    /// A new file that is a link out of the root (`-> /proc/self/environ`, `-> ~/.aws/…`) was
    /// read through the link by Splice itself and sent to the reviewing model.
    #[test]
    fn new_files_are_read_beneath_the_root_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        let outside = dir.path().join("credentials");
        std::fs::write(&outside, "OUTSIDE-SECRET").unwrap_or_else(|e| panic!("{e}"));
        git_ok(&root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap_or_else(|e| panic!("{e}"));
        git_ok(&root, &["add", "a.txt"]);
        git_ok(
            &root,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "a",
            ],
        );
        std::fs::write(root.join("new.txt"), "NEW-INSIDE").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&outside, root.join("leak.txt"))
            .unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/proc/self/environ", root.join("env.txt"))
            .unwrap_or_else(|e| panic!("{e}"));
        let change = change(&root);
        assert!(change.contains("NEW-INSIDE"), "{change}");
        assert!(!change.contains("OUTSIDE-SECRET"), "{change}");
        assert!(!change.contains("PATH="), "{change}");
        assert!(
            change.contains("new file leak.txt:\n(not read: path leaves the working root)"),
            "{change}"
        );
    }
}
