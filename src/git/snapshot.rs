//! The parts of a git dir that can make git run programs (`config`, `config.worktree`,
//! `info/` for its `attributes`, `hooks/`), recorded before a run whose sandbox may write that
//! git dir, and put back afterwards if the run changed them. Links are recorded as links and
//! never followed, and nothing is touched if the git dir itself was swapped for another one.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Top-level entries only: a watched path below a directory the run could swap for a link
/// would be written through that link.
const WATCHED: [&str; 4] = ["config", "config.worktree", "info", "hooks"];

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    Link(PathBuf),
    Dir,
    /// A FIFO, socket or device: never opened (reading a FIFO would wait for a writer
    /// forever), only removed when the run added it.
    Special,
}

/// A regular file's bytes, or `None` when what is at `path` is not one. Opened without
/// following links and without blocking, and judged on what was opened.
fn read_regular(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(open_flags())
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

fn open_flags() -> i32 {
    (rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOFOLLOW).bits() as i32
}

/// What the watched paths of one git dir held.
#[derive(Debug, Clone)]
pub struct Snapshot {
    dir: PathBuf,
    /// Device and inode of the git dir, a real directory when the snapshot was taken.
    identity: Option<(u64, u64)>,
    nodes: BTreeMap<PathBuf, Node>,
}

fn identity(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(dir)
        .ok()
        .filter(std::fs::Metadata::is_dir)
        .map(|m| (m.dev(), m.ino()))
}

/// Record `relative` and, for a real directory, what it holds; links are never followed.
fn record(dir: &Path, relative: &Path, nodes: &mut BTreeMap<PathBuf, Node>) {
    let path = dir.join(relative);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    let node = if meta.file_type().is_symlink() {
        Node::Link(std::fs::read_link(&path).unwrap_or_default())
    } else if meta.is_dir() {
        for entry in std::fs::read_dir(&path).into_iter().flatten().flatten() {
            record(dir, &relative.join(entry.file_name()), nodes);
        }
        Node::Dir
    } else if let Some(bytes) = meta.is_file().then(|| read_regular(&path)).flatten() {
        Node::File {
            bytes,
            mode: meta.permissions().mode() & 0o7777,
        }
    } else {
        Node::Special
    };
    nodes.insert(relative.to_path_buf(), node);
}

impl Snapshot {
    pub fn take(dir: &Path) -> Snapshot {
        let identity = identity(dir);
        let mut nodes = BTreeMap::new();
        if identity.is_some() {
            for watched in WATCHED {
                record(dir, Path::new(watched), &mut nodes);
            }
        }
        Snapshot {
            dir: dir.to_path_buf(),
            identity,
            nodes,
        }
    }

    /// The git dir it watches.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Put back every watched path that differs from the snapshot; the ones that did.
    pub fn restore(&self) -> std::io::Result<Vec<String>> {
        if self.identity.is_none() {
            return Ok(Vec::new());
        }
        if identity(&self.dir) != self.identity {
            // Whatever is there now (a link to $HOME, say) is not the git dir to put back.
            return Err(std::io::Error::other(
                "the git dir itself was replaced; nothing was put back there",
            ));
        }
        let now = Snapshot::take(&self.dir);
        let mut changed = Vec::new();
        // Children before their parents: what the run added goes, links included (as links).
        for (relative, node) in now.nodes.iter().rev() {
            if self.nodes.get(relative) == Some(node) {
                continue;
            }
            changed.push(relative.display().to_string());
            let path = self.dir.join(relative);
            match node {
                Node::Dir => std::fs::remove_dir_all(&path)?,
                _ => std::fs::remove_file(&path)?,
            }
        }
        // Parents before their children: what the run changed or removed comes back.
        for (relative, node) in &self.nodes {
            if now.nodes.get(relative) == Some(node) {
                continue;
            }
            let name = relative.display().to_string();
            if !changed.contains(&name) {
                changed.push(name);
            }
            let path = self.dir.join(relative);
            match node {
                Node::Dir => std::fs::create_dir_all(&path)?,
                // Not Splice's to recreate; what the run put there instead is gone.
                Node::Special => {}
                Node::Link(target) => std::os::unix::fs::symlink(target, &path)?,
                Node::File { bytes, mode } => {
                    std::fs::write(&path, bytes)?;
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))?;
                }
            }
        }
        changed.sort();
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_back_changed_added_and_removed_entries_without_following_links() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let git = dir.path().join("git");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(git.join("hooks")).expect("create hooks");
        std::fs::create_dir_all(&outside).expect("create outside");
        std::fs::write(git.join("config"), "[core]\n").expect("write config");
        std::fs::write(git.join("hooks/x.sample"), "#!/bin/sh\n").expect("write hooks/x.sample");
        std::fs::write(outside.join("keep"), "mine").expect("write keep");
        let snapshot = Snapshot::take(&git);
        assert_eq!(
            snapshot.restore().expect("restore snapshot"),
            Vec::<String>::new()
        );

        std::fs::write(git.join("config"), "[core]\n\tfsmonitor = x\n").expect("write config");
        std::fs::create_dir_all(git.join("info")).expect("create info");
        std::fs::write(git.join("info/attributes"), "* filter=x\n").expect("write info/attributes");
        std::fs::remove_dir_all(git.join("hooks")).expect("remove hooks");
        std::os::unix::fs::symlink(&outside, git.join("hooks")).expect("link hooks");

        let changed = snapshot.restore().expect("restore snapshot");
        assert_eq!(
            changed,
            [
                "config",
                "hooks",
                "hooks/x.sample",
                "info",
                "info/attributes"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(git.join("config")).ok().as_deref(),
            Some("[core]\n")
        );
        assert!(!git.join("info/attributes").exists());
        assert!(git.join("hooks/x.sample").is_file());
        assert!(!git.join("hooks").is_symlink());
        assert_eq!(
            std::fs::read_to_string(outside.join("keep"))
                .ok()
                .as_deref(),
            Some("mine")
        );
    }

    #[test]
    fn a_fifo_is_removed_without_being_opened() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let git = dir.path().join("git");
        std::fs::create_dir_all(git.join("hooks")).expect("create hooks");
        let snapshot = Snapshot::take(&git);
        let made = std::process::Command::new("mkfifo")
            .arg(git.join("hooks/pre-commit"))
            .status()
            .expect("run");
        assert!(made.success());
        let changed = snapshot.restore().expect("restore snapshot");
        assert_eq!(changed, ["hooks/pre-commit"]);
        assert!(!git.join("hooks/pre-commit").exists());
    }

    #[test]
    fn touches_nothing_through_a_swapped_git_dir_or_a_swapped_info_dir() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let git = dir.path().join("git");
        let home = dir.path().join("home");
        std::fs::create_dir_all(git.join("info")).expect("create info");
        std::fs::create_dir_all(&home).expect("create home");
        std::fs::write(git.join("config"), "[core]\n").expect("write config");
        std::fs::write(home.join("config"), "Host *\n").expect("write config");
        std::fs::write(home.join("attributes"), "mine\n").expect("write attributes");
        let snapshot = Snapshot::take(&git);

        // `info` swapped for a link to a directory holding an `attributes` of the user's.
        std::fs::remove_dir_all(git.join("info")).expect("remove info");
        std::os::unix::fs::symlink(&home, git.join("info")).expect("link info");
        let changed = snapshot.restore().expect("restore snapshot");
        assert_eq!(changed, ["info"]);
        assert!(git.join("info").is_dir() && !git.join("info").is_symlink());
        assert!(home.join("attributes").exists());

        // The whole git dir swapped for a link to a directory holding a `config`.
        std::fs::rename(&git, dir.path().join("moved")).expect("rename git");
        std::os::unix::fs::symlink(&home, &git).expect("link git");
        assert!(snapshot.restore().is_err());
        assert_eq!(
            std::fs::read_to_string(home.join("config")).ok().as_deref(),
            Some("Host *\n")
        );
    }
}
