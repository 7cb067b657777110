//! Which projects' hooks a person approved. A project's `.splice/settings.json` comes with a
//! cloned repository: its commands run only once approved. An approval names the project root
//! and the fingerprint of exactly the hooks it shows, so a changed configuration (a pull that
//! edits them) needs approving again. Kept in the data dir, beside the MCP approvals.

use crate::layout::Layout;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file in the data dir.
pub const FILE: &str = "hook-approvals.json";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Approval {
    root: String,
    fingerprint: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    approved: BTreeSet<Approval>,
}

fn path(layout: &Layout) -> PathBuf {
    layout.approvals(FILE)
}

fn load(layout: &Layout) -> Stored {
    std::fs::read(path(layout))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// `None` for a root that is not UTF-8: it is never approved (its lossy text could name
/// another directory).
fn approval(root: &Path, fingerprint: &str) -> Option<Approval> {
    Some(Approval {
        root: root.to_str()?.to_string(),
        fingerprint: fingerprint.to_string(),
    })
}

/// Whether the hooks with `fingerprint` of the project at `root` (canonical) were approved.
pub fn is_approved(layout: &Layout, root: &Path, fingerprint: &str) -> bool {
    approval(root, fingerprint).is_some_and(|a| load(layout).approved.contains(&a))
}

/// Remember the approval (written at once, owner-only, replacing the file whole). It replaces
/// the project's earlier one: a configuration approved before (then changed, perhaps because
/// it was unsafe) is not approved any more, so nothing can bring it back unasked.
pub fn approve(layout: &Layout, root: &Path, fingerprint: &str) -> std::io::Result<()> {
    let approved = approval(root, fingerprint).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a project whose path is not UTF-8 cannot be approved",
        )
    })?;
    let mut stored = load(layout);
    stored.approved.retain(|a| a.root != approved.root);
    stored.approved.insert(approved);
    let bytes = serde_json::to_vec_pretty(&stored).map_err(std::io::Error::other)?;
    crate::mcp::approval::replace_owner_only(&path(layout), &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_covers_one_root_and_one_configuration() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = Path::new("/work/project");
        assert!(!is_approved(
            &crate::layout::Layout::at(dir.path()),
            root,
            "abc"
        ));
        approve(&crate::layout::Layout::at(dir.path()), root, "abc").expect("approve");
        assert!(is_approved(
            &crate::layout::Layout::at(dir.path()),
            root,
            "abc"
        ));
        assert!(!is_approved(
            &crate::layout::Layout::at(dir.path()),
            root,
            "abd"
        ));
        assert!(!is_approved(
            &crate::layout::Layout::at(dir.path()),
            Path::new("/work/other"),
            "abc"
        ));
        approve(
            &crate::layout::Layout::at(dir.path()),
            Path::new("/work/other"),
            "xyz",
        )
        .expect("approve other");
        approve(&crate::layout::Layout::at(dir.path()), root, "abd")
            .expect("approve the changed hooks");
        assert!(is_approved(
            &crate::layout::Layout::at(dir.path()),
            root,
            "abd"
        ));
        assert!(
            !is_approved(&crate::layout::Layout::at(dir.path()), root, "abc"),
            "the older approval still holds"
        );
        assert!(is_approved(
            &crate::layout::Layout::at(dir.path()),
            Path::new("/work/other"),
            "xyz"
        ));
    }
}
