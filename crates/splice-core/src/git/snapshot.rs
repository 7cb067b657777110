//! The parts of a repository's git dirs that can make git run programs, recorded before a run
//! whose sandbox may write them and put back afterwards if the run changed them.
//!
//! Every git dir under the common dir counts, not just the common dir: a submodule's
//! (`modules/<name>/`, nested as `modules/a/modules/b/`) and a linked worktree's private one
//! (`worktrees/<name>/`) each have hooks and config of their own that git runs the next time
//! someone works there. In each: `config`, `config.worktree`, `info/` (its `attributes` name
//! filter drivers), `hooks/`, and `commondir` (which sends git to another git dir, whose hooks
//! then run). Symbolic links are recorded as links and never followed; a link the run put on
//! the way to a git dir (`modules` itself, say) is removed. Finding them is bounded: more git
//! dirs, directories or depth than the caps is an error, and the run then keeps its hands off
//! the git dir (see the callers) rather than go unrecorded. Nothing is touched if the common
//! dir itself was swapped for another one.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Top-level entries of each git dir only: a watched path below a directory the run could
/// swap for a link would be written through that link.
const WATCHED: [&str; 5] = ["config", "config.worktree", "info", "hooks", "commondir"];

/// Where git looks for git dirs other than the common dir: submodules' and linked worktrees'.
const NESTED: [&str; 2] = ["modules", "worktrees"];

/// Bounds on finding the git dirs: a run must not make the record (or the check after it)
/// endless, and going past one is an error, never a partial record.
const MAX_GIT_DIRS: usize = 1_000;
const MAX_DIRECTORIES: usize = 100_000;
const MAX_DEPTH: usize = 48;

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

/// Why the git dirs could not be recorded or checked.
fn too_many(what: &str) -> std::io::Error {
    std::io::Error::other(format!(
        "the repository's git dir holds more {what} than Splice checks (at most {MAX_GIT_DIRS} git dirs, {MAX_DIRECTORIES} directories, {MAX_DEPTH} deep)"
    ))
}

/// The git dirs under a common dir (paths relative to it, the common dir itself as the empty
/// path) and the symbolic links on the way to them, found without following a link.
#[derive(Debug, Default)]
struct Found {
    git_dirs: Vec<PathBuf>,
    links: BTreeMap<PathBuf, PathBuf>,
    directories: usize,
}

impl Found {
    fn walk(common: &Path) -> std::io::Result<Found> {
        let mut found = Found {
            git_dirs: vec![PathBuf::new()],
            ..Found::default()
        };
        for top in NESTED {
            found.visit(common, Path::new(top), 1)?;
        }
        Ok(found)
    }

    /// A submodule's git dir is any directory below `modules/` holding a `HEAD` (a submodule's
    /// name may hold `/`, and nested ones live in `modules/a/modules/b/`); a linked worktree's
    /// is each directory in `worktrees/`.
    fn visit(&mut self, common: &Path, relative: &Path, depth: usize) -> std::io::Result<()> {
        let path = common.join(relative);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return Ok(());
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap_or_default();
            self.links.insert(relative.to_path_buf(), target);
            return Ok(());
        }
        if !meta.is_dir() {
            return Ok(());
        }
        self.directories += 1;
        if self.directories > MAX_DIRECTORIES {
            return Err(too_many("directories"));
        }
        if depth > MAX_DEPTH {
            return Err(too_many("nested directories"));
        }
        let in_worktrees = relative.starts_with("worktrees");
        let is_git_dir = if in_worktrees {
            depth == 2
        } else {
            depth > 1 && std::fs::symlink_metadata(path.join("HEAD")).is_ok()
        };
        if is_git_dir {
            self.git_dirs.push(relative.to_path_buf());
            if self.git_dirs.len() > MAX_GIT_DIRS {
                return Err(too_many("git dirs"));
            }
        }
        // A worktree's private dir holds no further git dirs git would look in.
        if in_worktrees && depth == 2 {
            return Ok(());
        }
        let entries = std::fs::read_dir(&path)?;
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            if kind.is_dir() || kind.is_symlink() {
                self.visit(common, &relative.join(entry.file_name()), depth + 1)?;
            }
        }
        Ok(())
    }
}

/// Whether `relative` below `common` is a directory reached through directories only.
pub(crate) fn real_directory(common: &Path, relative: &Path) -> bool {
    let mut path = common.to_path_buf();
    relative.components().all(|part| {
        path.push(part);
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
    })
}

/// Whether `relative` below `common` is reached through directories only, as far as it exists.
fn directories_or_missing(common: &Path, relative: &Path) -> bool {
    let mut path = common.to_path_buf();
    for part in relative.components() {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return false,
            Err(_) => return true,
        }
    }
    true
}

/// What the watched paths of every git dir under one common dir held.
#[derive(Debug, Clone)]
pub struct Snapshot {
    dir: PathBuf,
    /// Device and inode of the common dir, a real directory when the snapshot was taken.
    identity: Option<(u64, u64)>,
    /// By git dir (relative to the common dir), its watched entries (relative to it).
    git_dirs: BTreeMap<PathBuf, BTreeMap<PathBuf, Node>>,
    /// Symbolic links on the way to git dirs, with their targets.
    links: BTreeMap<PathBuf, PathBuf>,
    /// Files under the common dir that a git dir's config includes (`include.path`,
    /// `includeIf.*.path`), relative to it: found in the config as recorded, never in the
    /// config as the run left it (which the run chose).
    included: BTreeMap<PathBuf, Node>,
    /// Those files' paths, there or not.
    include_paths: Vec<PathBuf>,
}

/// The files under `common` that `config` (the config file of the git dir `git_dir`, relative
/// to `common`) includes. Relative paths are the config's directory's; one outside `common`
/// (`~/…`, the working tree) is not the git dir's to put back.
fn includes(common: &Path, git_dir: &Path, config: &[u8]) -> Vec<PathBuf> {
    let text = String::from_utf8_lossy(config);
    let mut section = String::new();
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let name = header
                .split([']', ' ', '"', '.'])
                .next()
                .unwrap_or_default();
            section = name.to_ascii_lowercase();
            continue;
        }
        if section != "include" && section != "includeif" {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if !key.trim().eq_ignore_ascii_case("path") {
            continue;
        }
        let value = value.trim().trim_matches('"');
        let named = Path::new(value);
        let relative = if named.is_absolute() {
            match named.strip_prefix(common) {
                Ok(inside) => inside.to_path_buf(),
                Err(_) => continue,
            }
        } else if value.starts_with('~') {
            continue;
        } else {
            git_dir.join(named)
        };
        if let Some(relative) = lexically_inside(&relative) {
            found.push(relative);
        }
    }
    found
}

/// `relative` with `.` and `..` resolved as written, unless it climbs out or names nothing.
fn lexically_inside(relative: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for part in relative.components() {
        match part {
            Component::Normal(name) => parts.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.iter().collect())
}

impl Snapshot {
    /// Record the git dirs under the common dir `dir`; an error when there are more than
    /// Splice checks, or one cannot be read.
    pub fn take(dir: &Path) -> std::io::Result<Snapshot> {
        let identity = identity(dir);
        let mut snapshot = Snapshot {
            dir: dir.to_path_buf(),
            identity,
            git_dirs: BTreeMap::new(),
            links: BTreeMap::new(),
            included: BTreeMap::new(),
            include_paths: Vec::new(),
        };
        if identity.is_none() {
            return Ok(snapshot);
        }
        snapshot.record_git_dirs(Found::walk(dir)?);
        let mut included = Vec::new();
        for (git_dir, nodes) in &snapshot.git_dirs {
            for config in ["config", "config.worktree"] {
                if let Some(Node::File { bytes, .. }) = nodes.get(Path::new(config)) {
                    included.extend(includes(dir, git_dir, bytes));
                }
            }
        }
        included.sort();
        included.dedup();
        for path in &included {
            record(dir, path, &mut snapshot.included);
        }
        snapshot.include_paths = included;
        Ok(snapshot)
    }

    /// Record the watched entries of every git dir `found`, and the links on the way.
    fn record_git_dirs(&mut self, found: Found) {
        for git_dir in found.git_dirs {
            let base = self.dir.join(&git_dir);
            let mut nodes = BTreeMap::new();
            for watched in WATCHED {
                record(&base, Path::new(watched), &mut nodes);
            }
            self.git_dirs.insert(git_dir, nodes);
        }
        self.links = found.links;
    }

    /// The same snapshot of what is there now (the git dirs `found`): the same included
    /// files, whatever the config says now.
    fn again(&self, found: Found) -> Snapshot {
        let mut now = Snapshot {
            dir: self.dir.clone(),
            identity: self.identity,
            git_dirs: BTreeMap::new(),
            links: BTreeMap::new(),
            included: BTreeMap::new(),
            include_paths: Vec::new(),
        };
        now.record_git_dirs(found);
        for path in &self.include_paths {
            record(&self.dir, path, &mut now.included);
        }
        now
    }

    /// The (common) git dir it watches.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Put back every watched path that differs from the snapshot, in every git dir there was
    /// or is now, and remove the links the run put on the way to one; the ones that differed.
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
        let mut changed = Vec::new();
        // Links first, so that nothing below is reached through one the run made. The walk
        // does not follow a link, so removing them leaves the git dirs it found as they are:
        // one walk serves both.
        let found = Found::walk(&self.dir)?;
        for (relative, target) in &found.links {
            if self.links.get(relative) != Some(target) {
                std::fs::remove_file(self.dir.join(relative))?;
                changed.push(relative.display().to_string());
            }
        }
        let now = self.again(found);
        let empty = BTreeMap::new();
        let all: std::collections::BTreeSet<&PathBuf> =
            self.git_dirs.keys().chain(now.git_dirs.keys()).collect();
        for git_dir in all {
            // Gone, or reached through a link the person had: nothing of the run's to put back.
            if !real_directory(&self.dir, git_dir) {
                continue;
            }
            let before = self.git_dirs.get(git_dir).unwrap_or(&empty);
            let mut after = now.git_dirs.get(git_dir).unwrap_or(&empty).clone();
            // A worktree added meanwhile (a task's, or one the person added) needs its
            // `commondir`, and one the run planted sends git nowhere that a `.git` file the
            // run writes in the root could not send it anyway.
            if git_dir.starts_with("worktrees") && !self.git_dirs.contains_key(git_dir) {
                after.remove(Path::new("commondir"));
            }
            put_back(&self.dir.join(git_dir), before, &after, |relative| {
                changed.push(git_dir.join(relative).display().to_string());
            })?;
        }
        // An included file's directory must be the one git reads: not a link the run put there.
        if self.included != now.included {
            for path in &self.include_paths {
                let parent = path.parent().unwrap_or(Path::new(""));
                if !directories_or_missing(&self.dir, parent) {
                    return Err(std::io::Error::other(format!(
                        "{} (a config file the git config includes) is reached through something other than a directory",
                        path.display()
                    )));
                }
                if self.included.contains_key(path) {
                    std::fs::create_dir_all(self.dir.join(parent))?;
                }
            }
        }
        put_back(&self.dir, &self.included, &now.included, |relative| {
            changed.push(relative.display().to_string());
        })?;
        changed.sort();
        changed.dedup();
        Ok(changed)
    }
}

/// Make the watched entries of the git dir `base` what they were (`before`) from what they
/// are (`after`), telling `changed` each that differed.
fn put_back(
    base: &Path,
    before: &BTreeMap<PathBuf, Node>,
    after: &BTreeMap<PathBuf, Node>,
    mut changed: impl FnMut(&Path),
) -> std::io::Result<()> {
    // Children before their parents: what the run added goes, links included (as links).
    for (relative, node) in after.iter().rev() {
        if before.get(relative) == Some(node) {
            continue;
        }
        changed(relative);
        let path = base.join(relative);
        match node {
            Node::Dir => std::fs::remove_dir_all(&path)?,
            _ => std::fs::remove_file(&path)?,
        }
    }
    // Parents before their children: what the run changed or removed comes back.
    for (relative, node) in before {
        if after.get(relative) == Some(node) {
            continue;
        }
        changed(relative);
        let path = base.join(relative);
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
    Ok(())
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
        let snapshot = Snapshot::take(&git).expect("take snapshot");
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
        let snapshot = Snapshot::take(&git).expect("take snapshot");
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
        let snapshot = Snapshot::take(&git).expect("take snapshot");

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

    fn write(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(path, text).expect("write file");
    }

    #[test]
    fn puts_back_submodule_and_worktree_git_dirs_and_removes_planted_links() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let git = dir.path().join("git");
        let planted = dir.path().join("planted");
        for sub in [
            "modules/a",
            "modules/a/modules/b",
            "modules/x/y",
            "worktrees/w",
        ] {
            write(&git.join(sub).join("HEAD"), "ref: refs/heads/main\n");
        }
        write(&git.join("modules/a/config"), "[core]\n");
        write(&git.join("worktrees/w/commondir"), "../..\n");
        write(&planted.join("HEAD"), "ref: refs/heads/main\n");
        let snapshot = Snapshot::take(&git).expect("take snapshot");

        write(&git.join("modules/a/config"), "[core]\n\tfsmonitor = x\n");
        write(
            &git.join("modules/a/modules/b/hooks/post-checkout"),
            "#!/bin/sh\n",
        );
        write(&git.join("modules/x/y/info/attributes"), "* filter=x\n");
        write(
            &git.join("worktrees/w/config.worktree"),
            "[core]\n\thooksPath = /x\n",
        );
        write(&git.join("worktrees/w/commondir"), "/elsewhere\n");
        // A new submodule git dir, and a worktree a task added.
        write(&git.join("modules/new/HEAD"), "ref: refs/heads/main\n");
        write(&git.join("modules/new/hooks/post-checkout"), "#!/bin/sh\n");
        write(&git.join("worktrees/task/HEAD"), "ref: refs/heads/t\n");
        write(&git.join("worktrees/task/commondir"), "../..\n");
        // A link on the way to a git dir: never followed, removed.
        std::os::unix::fs::symlink(&planted, git.join("modules/linked")).expect("link");

        let changed = snapshot.restore().expect("restore snapshot");
        assert_eq!(
            changed,
            [
                "modules/a/config",
                "modules/a/modules/b/hooks",
                "modules/a/modules/b/hooks/post-checkout",
                "modules/linked",
                "modules/new/hooks",
                "modules/new/hooks/post-checkout",
                "modules/x/y/info",
                "modules/x/y/info/attributes",
                "worktrees/w/commondir",
                "worktrees/w/config.worktree",
            ]
        );
        assert_eq!(
            std::fs::read_to_string(git.join("modules/a/config"))
                .ok()
                .as_deref(),
            Some("[core]\n")
        );
        assert_eq!(
            std::fs::read_to_string(git.join("worktrees/w/commondir"))
                .ok()
                .as_deref(),
            Some("../..\n")
        );
        assert!(git.join("worktrees/task/commondir").is_file());
        assert!(!git.join("modules/linked").exists());
        assert!(planted.join("HEAD").is_file());
        assert_eq!(
            snapshot.restore().expect("restore again"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn too_many_git_dirs_is_an_error_not_a_partial_record() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let git = dir.path().join("git");
        let mut deep = git.join("modules");
        for _ in 0..MAX_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).expect("create deep");
        assert!(Snapshot::take(&git).is_err());

        std::fs::remove_dir_all(git.join("modules")).expect("remove modules");
        let snapshot = Snapshot::take(&git).expect("take snapshot");
        std::fs::create_dir_all(&deep).expect("create deep");
        assert!(snapshot.restore().is_err());
    }

    #[test]
    fn files_the_recorded_config_includes_are_put_back_and_the_runs_includes_are_not_followed() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let git = dir.path().join("git");
        write(
            &git.join("config"),
            &format!(
                "[core]\n[include]\n\tpath = extra.cfg\n[includeIf \"gitdir:/x/\"]\n\tpath = \"{}\"\n[include]\n\tpath = ../outside.cfg\n",
                git.join("conf.d/more.cfg").display()
            ),
        );
        write(&git.join("extra.cfg"), "[user]\n\tname = me\n");
        write(&git.join("HEAD"), "ref: refs/heads/main\n");
        let snapshot = Snapshot::take(&git).expect("take snapshot");

        write(&git.join("extra.cfg"), "[core]\n\tfsmonitor = x\n");
        write(&git.join("conf.d/more.cfg"), "[core]\n\tpager = x\n");
        // The run's own include, naming a file git needs: its config goes, HEAD stays.
        write(&git.join("config"), "[include]\n\tpath = HEAD\n");
        let changed = snapshot.restore().expect("restore snapshot");
        assert_eq!(changed, ["conf.d/more.cfg", "config", "extra.cfg"]);
        assert_eq!(
            std::fs::read_to_string(git.join("extra.cfg"))
                .ok()
                .as_deref(),
            Some("[user]\n\tname = me\n")
        );
        assert!(!git.join("conf.d/more.cfg").exists());
        assert!(git.join("HEAD").is_file());

        // The directory of an included file swapped for a link: refused, nothing written there.
        let elsewhere = dir.path().join("elsewhere");
        write(&elsewhere.join("more.cfg"), "mine\n");
        std::fs::remove_dir_all(git.join("conf.d")).expect("remove conf.d");
        std::os::unix::fs::symlink(&elsewhere, git.join("conf.d")).expect("link conf.d");
        assert!(snapshot.restore().is_err());
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("more.cfg"))
                .ok()
                .as_deref(),
            Some("mine\n")
        );
    }
}
