//! Which project command files a person approved. A project's `.splice/commands/` and
//! `.claude/commands/` come with the repository and the model can write them, so a project
//! command's `` !`…` `` commands and `allowed-tools` take effect only once the person approved
//! that file: an approval names the project root, the file and a fingerprint of its exact text
//! and of the files its commands name ([`crate::permissions::pinned`]), so a changed file (a
//! pull, or the model's edit) or a rewritten script it runs is asked about again. Kept in the
//! data dir beside the agent and MCP approvals, through the same store.

use std::path::Path;

use sha2::Digest;

use super::CommandFile;
use super::expand::body_commands;
use crate::layout::Layout;
use crate::mcp::approval::{Approvals, canonical_root};

/// The file in the data dir.
pub const APPROVALS_FILE: &str = "command-approvals.json";

/// Whether `command` needs a person's approval before its commands run and its rules apply:
/// a project's that has either.
pub fn needs_approval(command: &CommandFile) -> bool {
    command.is_project()
        && (!command.matter.allowed_tools.is_empty() || !body_commands(&command.body).is_empty())
}

/// What an approval of `command` in the project at `root` names: the file's text and what
/// each file its commands name holds now. Blocking (it reads those files).
pub fn fingerprint(command: &CommandFile, root: &Path) -> String {
    let mut hasher = sha2::Sha256::new();
    hasher.update(command.digest.as_bytes());
    for line in body_commands(&command.body) {
        for pin in crate::permissions::pinned::pin(line, root) {
            hasher.update(format!("\n{}\0{}", pin.path.display(), pin.state).as_bytes());
        }
    }
    crate::ids::hex(&hasher.finalize())
}

/// The key an approval is kept under: the file's path in the project.
fn key(command: &CommandFile, root: &Path) -> String {
    let path = command.path.strip_prefix(root).unwrap_or(&command.path);
    path.display().to_string()
}

/// Whether `command`, as it is now, was approved for the project at `root`. Blocking.
pub fn is_approved(layout: &Layout, root: &Path, command: &CommandFile) -> bool {
    Approvals::load_file(layout, APPROVALS_FILE).is_approved_key(
        &canonical_root(root),
        &key(command, root),
        &fingerprint(command, root),
    )
}

/// Remember that the person approved `command`, as it is now, for the project at `root`.
/// Blocking.
pub fn approve(layout: &Layout, root: &Path, command: &CommandFile) -> std::io::Result<()> {
    Approvals::load_file(layout, APPROVALS_FILE).approve_key(
        &canonical_root(root),
        &key(command, root),
        &fingerprint(command, root),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slash::Catalog;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create the folder");
        std::fs::write(path, text).expect("write the file");
    }

    #[test]
    fn an_approval_holds_for_one_file_as_it_is() {
        let dir = tempfile::tempdir().expect("a root");
        let root = dir.path().canonicalize().expect("canonical");
        let data = tempfile::tempdir().expect("a data dir");
        let user = tempfile::tempdir().expect("a user folder");
        write(
            &root.join(".claude/commands/run.md"),
            "!`sh scripts/check.sh`",
        );
        write(&root.join("scripts/check.sh"), "echo ok\n");
        write(&root.join(".splice/commands/plain.md"), "Just text @x.md");
        write(
            &user.path().join("mine.md"),
            "---\nallowed-tools: Bash\n---\n!`id`",
        );
        let load = || Catalog::load(&root, Some(user.path()));
        let catalog = load();
        let run = catalog.lookup("run").expect("run");
        assert!(needs_approval(run));
        assert!(!needs_approval(catalog.lookup("plain").expect("plain")));
        // The user's own commands need none.
        assert!(!needs_approval(catalog.lookup("mine").expect("mine")));
        assert!(!is_approved(
            &crate::layout::Layout::at(data.path()),
            &root,
            run
        ));
        approve(&crate::layout::Layout::at(data.path()), &root, run).expect("approve");
        assert!(is_approved(
            &crate::layout::Layout::at(data.path()),
            &root,
            load().lookup("run").expect("run")
        ));
        // The script its command runs, rewritten: not approved any more.
        write(&root.join("scripts/check.sh"), "curl evil\n");
        assert!(!is_approved(
            &crate::layout::Layout::at(data.path()),
            &root,
            load().lookup("run").expect("run")
        ));
        write(&root.join("scripts/check.sh"), "echo ok\n");
        // The file itself, changed.
        write(
            &root.join(".claude/commands/run.md"),
            "!`sh scripts/check.sh; id`",
        );
        assert!(!is_approved(
            &crate::layout::Layout::at(data.path()),
            &root,
            load().lookup("run").expect("run")
        ));
    }
}
