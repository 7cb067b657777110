//! Which project servers a person approved: a repository's `.mcp.json` must not run programs
//! just by being opened. An approval names the project root, the server and a fingerprint of
//! its config and of the files that config names ([`crate::permissions::pinned`]), so a
//! changed command (a pull that edits `.mcp.json`) or a changed script (a pull, or the model,
//! that rewrites `tools/server.mjs`) needs approving again.

use crate::layout::Layout;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::config::{ServerConfig, ServerEntry};

/// The file in the data dir.
pub const FILE: &str = "mcp-approvals.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, PartialOrd, Ord)]
struct Approval {
    root: String,
    name: String,
    fingerprint: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Stored {
    approved: BTreeSet<Approval>,
    /// The files each approved server's config named and what they held (path, state), by
    /// [`files_key`]: only to say which file changed when a server is asked about again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    files: BTreeMap<String, Vec<(String, String)>>,
}

/// The project root, the server's name and its config's fingerprint: what a server approved
/// before has in common with the same server whose files changed.
fn files_key(root: &Path, entry: &ServerEntry) -> Option<String> {
    Some(format!(
        "{}\n{}\n{}",
        root.to_str()?,
        entry.name,
        fingerprint(&entry.config)
    ))
}

#[derive(Debug)]
pub struct Approvals {
    path: PathBuf,
    stored: Stored,
}

/// A hash of everything that decides what the server runs or reaches.
pub fn fingerprint(config: &ServerConfig) -> String {
    let shape = match config {
        ServerConfig::Stdio {
            command,
            args,
            env,
            env_passthrough,
        } => {
            let mut shape = serde_json::json!({"command": command, "args": args, "env": env});
            // Only when there is a list, so approvals made before the key existed still hold.
            if !env_passthrough.is_empty() {
                shape["envPassthrough"] = serde_json::json!(env_passthrough);
            }
            shape
        }
        ServerConfig::Http { url, headers } => serde_json::json!({"url": url, "headers": headers}),
    };
    let digest = sha2::Sha256::digest(shape.to_string().as_bytes());
    crate::ids::hex(&digest)
}

/// The fingerprint an approval of `entry` names: its config's and, when its config names
/// files, what each held when `.mcp.json` was read (a path and its state per file).
pub fn entry_fingerprint(entry: &ServerEntry) -> String {
    let config = fingerprint(&entry.config);
    // A config naming no file keeps the fingerprint approvals made before files were pinned.
    if entry.pins.is_empty() {
        return config;
    }
    let mut hasher = sha2::Sha256::new();
    hasher.update(config.as_bytes());
    for pin in &entry.pins {
        hasher.update(b"\0");
        hasher.update(pin.path.as_os_str().as_encoded_bytes());
        hasher.update(b"\0");
        hasher.update(pin.state.as_bytes());
    }
    crate::ids::hex(&hasher.finalize())
}

/// The fingerprint `entry` had when its files held `files` (as stored with its approval).
fn entry_fingerprint_of(files: &[(String, String)], entry: &ServerEntry) -> String {
    let mut then = entry.clone();
    then.pins = files
        .iter()
        .map(|(path, state)| crate::permissions::pinned::Pinned {
            path: PathBuf::from(path),
            state: state.clone(),
        })
        .collect();
    entry_fingerprint(&then)
}

/// `None` for a root that is not UTF-8: its lossy text could be another directory's (`a\xff`
/// and `a\xfe` both read `a�`), so such a root is never approved.
fn approval(root: &Path, entry: &ServerEntry) -> Option<Approval> {
    keyed(root, &entry.name, entry_fingerprint(entry))
}

fn keyed(root: &Path, name: &str, fingerprint: String) -> Option<Approval> {
    Some(Approval {
        root: root.to_str()?.to_string(),
        name: name.to_string(),
        fingerprint,
    })
}

impl Approvals {
    /// The approvals in `layout`; a missing or unreadable file approves nothing.
    pub fn load(layout: &Layout) -> Approvals {
        Approvals::load_file(layout, FILE)
    }

    /// The approvals kept in `file` of `layout` (project agent definitions keep theirs
    /// apart from the MCP servers').
    pub fn load_file(layout: &Layout, file: &str) -> Approvals {
        let path = layout.approvals(file);
        let stored = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Approvals { path, stored }
    }

    /// `root` is the project's canonical root.
    pub fn is_approved(&self, root: &Path, entry: &ServerEntry) -> bool {
        approval(root, entry).is_some_and(|a| self.stored.approved.contains(&a))
    }

    /// Whether `name` with this `fingerprint` is approved for `root` (canonical).
    pub fn is_approved_key(&self, root: &Path, name: &str, fingerprint: &str) -> bool {
        keyed(root, name, fingerprint.to_string())
            .is_some_and(|a| self.stored.approved.contains(&a))
    }

    /// Remember the approval (written at once, owner-only).
    pub fn approve(&mut self, root: &Path, entry: &ServerEntry) -> std::io::Result<()> {
        if let Some(key) = files_key(root, entry)
            && !entry.pins.is_empty()
        {
            let files = entry
                .pins
                .iter()
                .filter_map(|p| Some((p.path.to_str()?.to_string(), p.state.clone())))
                .collect();
            self.stored.files.insert(key, files);
        }
        self.store(approval(root, entry))
    }

    /// For a server not approved as it is: the file it names that changed since its config,
    /// as it is now, was approved for `root`, if that is why.
    pub fn changed_file(&self, root: &Path, entry: &ServerEntry) -> Option<PathBuf> {
        let approved = self.stored.files.get(&files_key(root, entry)?)?;
        if !self.is_approved_key(root, &entry.name, &entry_fingerprint_of(approved, entry)) {
            return None;
        }
        let held = |path: &Path| {
            approved
                .iter()
                .find(|(p, _)| Path::new(p) == path)
                .map(|(_, state)| state.as_str())
        };
        entry
            .pins
            .iter()
            .find(|pin| held(&pin.path) != Some(pin.state.as_str()))
            .map(|pin| pin.path.clone())
            .or_else(|| {
                approved
                    .iter()
                    .find(|(p, _)| !entry.pins.iter().any(|pin| pin.path == Path::new(p)))
                    .map(|(p, _)| PathBuf::from(p))
            })
    }

    /// Remember that `name` with this `fingerprint` is approved for `root` (canonical).
    pub fn approve_key(
        &mut self,
        root: &Path,
        name: &str,
        fingerprint: &str,
    ) -> std::io::Result<()> {
        self.store(keyed(root, name, fingerprint.to_string()))
    }

    fn store(&mut self, approved: Option<Approval>) -> std::io::Result<()> {
        let approved = approved.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a project whose path is not UTF-8 cannot be approved",
            )
        })?;
        self.stored.approved.insert(approved);
        let bytes = serde_json::to_vec_pretty(&self.stored).map_err(std::io::Error::other)?;
        replace_owner_only(&self.path, &bytes)
    }
}

/// Replace the file at `path` with `bytes` whole (a new file renamed over it, so a reader
/// never sees half of it), readable by its owner only; its folder is made if missing.
pub(crate) fn replace_owner_only(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = path.with_file_name(format!(".{name}.{}.tmp", crate::ids::random_suffix(8)));
    let written = {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
            .and_then(|()| std::fs::rename(&temp, path))
    };
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// Remember that the person approved `entry` for the project in `cwd`, so the next session
/// (and a headless run there) starts it unasked, until its config changes.
pub fn approve(layout: &Layout, cwd: &Path, entry: &ServerEntry) -> std::io::Result<()> {
    Approvals::load(layout).approve(&canonical_root(cwd), entry)
}

/// The root approvals are keyed by: the working root, canonical.
pub fn canonical_root(cwd: &Path) -> PathBuf {
    cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf())
}

/// The configured servers, split by whether they may start.
#[derive(Debug, Default, PartialEq)]
pub struct Selection {
    /// The user's servers and the approved (or trusted) project servers.
    pub start: Vec<ServerEntry>,
    /// Project servers nobody approved: not started.
    pub unapproved: Vec<ServerEntry>,
    /// Project servers left out because a user server has the name.
    pub shadowed: Vec<String>,
}

/// The one place that decides which servers start: the user's always; a project's (from
/// `<root>/.mcp.json`) only when `approvals` approve it for `root` (canonical), or when
/// `approvals` is `None` (`--trust-project-mcp`).
pub fn select(
    user: Vec<ServerEntry>,
    project: Vec<ServerEntry>,
    root: &Path,
    approvals: Option<&Approvals>,
) -> Selection {
    let (servers, shadowed) = super::config::merge(user, project);
    let (start, unapproved) = servers.into_iter().partition(|entry| {
        entry.source == super::config::Source::User
            || approvals.is_none_or(|a| a.is_approved(root, entry))
    });
    Selection {
        start,
        unapproved,
        shadowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::config::Source;

    #[test]
    fn an_approval_is_for_one_root_and_one_exact_config() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let entry = |command: &str| ServerEntry {
            name: "tools".into(),
            config: ServerConfig::Stdio {
                command: command.into(),
                args: vec![],
                env: Default::default(),
                env_passthrough: Vec::new(),
            },
            source: Source::Project,
            pins: Vec::new(),
        };
        let root = Path::new("/repo/a");
        let mut approvals = Approvals::load(&crate::layout::Layout::at(dir.path()));
        assert!(!approvals.is_approved(root, &entry("node")));
        approvals
            .approve(root, &entry("node"))
            .expect("approve root");
        let again = Approvals::load(&crate::layout::Layout::at(dir.path()));
        assert!(again.is_approved(root, &entry("node")));
        assert!(!again.is_approved(root, &entry("sh")), "a changed command");
        let mut passing = entry("node");
        if let ServerConfig::Stdio {
            env_passthrough, ..
        } = &mut passing.config
        {
            env_passthrough.push("PIP_INDEX_URL".into());
        }
        assert!(!again.is_approved(root, &passing), "a variable passed on");
        assert!(!again.is_approved(Path::new("/repo/b"), &entry("node")));
    }

    #[test]
    fn an_approval_covers_the_files_the_config_names_and_names_the_one_that_changed() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("tools")).expect("create root");
        let root = root.canonicalize().expect("canonicalize");
        std::fs::write(root.join("tools/server.mjs"), "honest").expect("write");
        let entry = || {
            let config = ServerConfig::Stdio {
                command: "node".into(),
                args: vec!["tools/server.mjs".into()],
                env: Default::default(),
                env_passthrough: Vec::new(),
            };
            ServerEntry {
                name: "tools".into(),
                pins: crate::permissions::pinned::pin_argv(["node", "tools/server.mjs"], &root),
                config,
                source: Source::Project,
            }
        };
        let data = dir.path().join("data");
        let approved = entry();
        assert!(approved.files().contains(&root.join("tools/server.mjs")));
        approve(&crate::layout::Layout::at(&data), &root, &approved).expect("approve");
        let approvals = Approvals::load(&crate::layout::Layout::at(&data));
        assert!(approvals.is_approved(&root, &entry()));
        assert_eq!(approvals.changed_file(&root, &entry()), None);

        std::fs::write(root.join("tools/server.mjs"), "pwned").expect("rewrite");
        let now = entry();
        assert!(!approvals.is_approved(&root, &now), "a changed script");
        assert_eq!(
            approvals.changed_file(&root, &now),
            Some(root.join("tools/server.mjs"))
        );
        // The approval still holds for what it covered (the file put back).
        std::fs::write(root.join("tools/server.mjs"), "honest").expect("put back");
        std::fs::write(root.join("node"), "planted").expect("plant");
        let planted = entry();
        assert!(!approvals.is_approved(&root, &planted), "a planted `node`");
        assert_eq!(
            approvals.changed_file(&root, &planted),
            Some(root.join("node"))
        );
    }
}
