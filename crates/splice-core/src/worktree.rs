//! `--worktree`: a run in its own git worktree on branch `splice/<runId>`, its merge back into
//! the source checkout (`--merge-back`), and `splice worktree list|recover|clean` for leftovers.
//!
//! The worktree is a repository of its own (`store`), which reads the source's objects but
//! never writes them: what the run made enters the source repository only when Splice commits
//! it there (merged back or kept), verified object by object.
//!
//! A merge is tried with `git merge-tree` first, which touches neither the index nor the files,
//! so a conflict leaves the source checkout exactly as it was.

mod store;

use crate::layout::Layout;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bus::Bus;
use crate::exit::Exit;
use crate::git::snapshot::Snapshot;
use crate::git::{Access, DIFF_FLAGS, GitError};
use crate::protocol::{ErrorCode, Event, WarningCode};

#[derive(Debug, Error)]
pub enum WorktreeError {
    #[error("--worktree needs a git repository with a commit: {0}")]
    NotARepo(String),
    #[error("`git {command}` failed: {message}")]
    Git { command: String, message: String },
    #[error("{0}")]
    Io(String),
    #[error("{0}")]
    Unsafe(String),
}

/// A worktree of one run; saved next to it so that a later `splice worktree` finds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    pub run_id: String,
    /// The source checkout's top level.
    pub source: PathBuf,
    /// The worktree's top level.
    pub path: PathBuf,
    pub branch: String,
    /// The commit the branch started from.
    pub base: String,
    /// The run's working root inside the worktree (the user's cwd, relative to the source).
    pub root: PathBuf,
}

/// How a merge-back ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    Merged { commits: u32 },
    NoChange,
    DirtySource,
    Conflict { files: Vec<String> },
    Failed(String),
}

fn git_output(
    dir: &Path,
    access: Access,
    args: &[&str],
) -> Result<std::process::Output, WorktreeError> {
    crate::git::command(dir, access)
        .map_err(|e| match e {
            GitError::Io(message) => WorktreeError::Io(format!("cannot run git: {message}")),
            GitError::Unsafe(message) => WorktreeError::Unsafe(message),
        })?
        .args(args)
        .output()
        .map_err(|e| WorktreeError::Io(format!("cannot run git: {e}")))
}

fn run(dir: &Path, access: Access, args: &[&str]) -> Result<String, WorktreeError> {
    let output = git_output(dir, access, args)?;
    if !output.status.success() {
        return Err(WorktreeError::Git {
            command: args.join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A git command that only reads (filters the repository defines are passed through).
fn git(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    run(dir, Access::Read, args)
}

/// A git command that checks files out or records them (refused when the repository defines
/// filters Splice will not run).
fn git_write(dir: &Path, args: &[&str]) -> Result<String, WorktreeError> {
    run(dir, Access::Write, args)
}

/// `-c` options naming the identity git has in `dir` (the source checkout), `Splice
/// <splice@localhost>` for the parts it has none for: a commit in a worktree's own repository
/// is the source's, whatever that repository's config says.
fn identity(dir: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for (key, fallback) in [("user.name", "Splice"), ("user.email", "splice@localhost")] {
        let value = git(dir, &["config", key])
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| fallback.to_string());
        args.extend(["-c".to_string(), format!("{key}={value}")]);
    }
    args
}

/// Remove a directory of Splice's own and what it holds, links as links; one the run made
/// unwritable (a directory without write permission) is made writable first. Gone already: Ok.
fn remove_tree(path: &Path) -> Result<(), WorktreeError> {
    use std::os::unix::fs::PermissionsExt;
    let cannot =
        |e: std::io::Error| WorktreeError::Io(format!("cannot remove {}: {e}", path.display()));
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(cannot(e)),
        Ok(meta) if !meta.is_dir() => return std::fs::remove_file(path).map_err(cannot),
        Ok(_) => {}
    }
    if std::fs::remove_dir_all(path).is_ok() {
        return Ok(());
    }
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    std::fs::remove_dir_all(path).map_err(cannot)
}

/// `-c` options for the parts of `Splice <splice@localhost>` git has no identity for in `dir`
/// (a fresh container, CI), so a commit there does not fail; none when it has one.
fn fallback_identity(dir: &Path) -> Vec<&'static str> {
    let has = |key: &str| git(dir, &["config", key]).is_ok_and(|v| !v.is_empty());
    let mut args = Vec::new();
    if !has("user.name") {
        args.extend(["-c", "user.name=Splice"]);
    }
    if !has("user.email") {
        args.extend(["-c", "user.email=splice@localhost"]);
    }
    args
}

fn record_path(layout: &Layout, run_id: &str) -> PathBuf {
    layout.worktrees().join(format!("{run_id}.json"))
}

fn lock_path(layout: &Layout, run_id: &str) -> PathBuf {
    layout.worktrees().join(format!("{run_id}.lock"))
}

/// The live-run locks this process holds, by run id. An exclusive `flock` on
/// `<run_id>.lock` says "this run is going": the kernel drops it when the process ends however
/// it ends, so a lock nobody holds is a leftover, and `clean` never touches a held one.
static LIVE: Mutex<Vec<(String, File)>> = Mutex::new(Vec::new());

/// By run id, the record of each worktree's own git dir as Splice made it (see `add`).
static OWN_RECORDS: Mutex<Vec<(String, Snapshot)>> = Mutex::new(Vec::new());

/// The record of the own git dir of run `run_id`'s worktree, made by this process, taken out.
pub fn take_own_record(run_id: &str) -> Option<Snapshot> {
    let mut records = OWN_RECORDS.lock().ok()?;
    let at = records.iter().position(|(id, _)| id == run_id)?;
    Some(records.swap_remove(at).1)
}

/// Take the live lock of `run_id` for this process.
fn hold_live_lock(layout: &Layout, run_id: &str) -> Result<(), WorktreeError> {
    let path = lock_path(layout, run_id);
    let file = File::create(&path)
        .map_err(|e| WorktreeError::Io(format!("cannot create {}: {e}", path.display())))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| WorktreeError::Io(format!("cannot lock {}: {e}", path.display())))?;
    if let Ok(mut live) = LIVE.lock() {
        live.push((run_id.to_string(), file));
    }
    Ok(())
}

/// Let go of the live lock of `run_id`: the run is over (finished or interrupted; a terminal
/// UI that goes on must not keep showing it as live).
pub fn release_live_lock(layout: &Layout, run_id: &str) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|(id, _)| id != run_id);
    }
    let _ = std::fs::remove_file(lock_path(layout, run_id));
}

/// Whether some process holds the live lock of `run_id` (fails closed: a lock file that cannot
/// be opened or tested counts as live).
pub fn is_live(layout: &Layout, run_id: &str) -> bool {
    let path = lock_path(layout, run_id);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared) {
        // Ours now, so nobody else's: released when `file` closes.
        Ok(()) => false,
        Err(_) => true,
    }
}

/// Whether the worktree of `run_id` is still there: recorded (as `clean` and `recover` leave
/// it not) and on disk. A directory alone where it was is not it.
pub fn is_present(layout: &Layout, run_id: &str) -> bool {
    crate::ids::is_run_id(run_id)
        && record_path(layout, run_id).is_file()
        && layout.worktrees().join(run_id).is_dir()
}

impl Worktree {
    /// The source repository's (common) git dir. Asked of the source checkout (outside the
    /// run's reach), never read from the worktree's own `.git` file, which a command in the
    /// run could rewrite.
    pub fn git_dir(&self) -> Option<PathBuf> {
        crate::git::common_dir(&self.source)
    }

    /// The git dir of the worktree's own repository, `<runId>.git` beside it in Splice's data
    /// directory: named by Splice's record of the worktree, never by its `.git` file.
    pub fn own_git_dir(&self) -> PathBuf {
        self.path.with_file_name(format!("{}.git", self.run_id))
    }

    /// What a command in the worktree may write besides the worktree: its own repository's git
    /// dir (what `git commit` there writes), when that is a real directory (Landlock would
    /// follow a link to wherever it points). Nothing of the source repository's git dir: its
    /// objects, refs, config and hooks stay read-only to the run.
    pub fn writable_git_paths(&self) -> Vec<PathBuf> {
        let own = self.own_git_dir();
        if std::fs::symlink_metadata(&own).is_ok_and(|m| m.is_dir()) {
            vec![own]
        } else {
            Vec::new()
        }
    }

    /// Git in the worktree's own repository.
    fn own(&self, access: Access, args: &[&str]) -> Result<String, WorktreeError> {
        store::own(&self.own_git_dir(), &self.path, access, args)
    }

    fn own_output(
        &self,
        access: Access,
        args: &[&str],
    ) -> Result<std::process::Output, WorktreeError> {
        store::own_output(&self.own_git_dir(), &self.path, access, args)
    }

    /// Add a worktree for `run_id` on a new branch from the source's HEAD, live (locked) until
    /// `finish` or `remove`.
    pub fn create(layout: &Layout, cwd: &Path, run_id: &str) -> Result<Worktree, WorktreeError> {
        Worktree::create_at(layout, cwd, run_id, None)
    }

    /// As [`Worktree::create`], the branch made from commit `start` (None: HEAD).
    pub fn create_at(
        layout: &Layout,
        cwd: &Path,
        run_id: &str,
        start: Option<&str>,
    ) -> Result<Worktree, WorktreeError> {
        let created = Worktree::add(layout, cwd, run_id, start);
        if created.is_err() {
            // Nothing half made stays: the directories are this new run's own.
            if crate::ids::is_run_id(run_id) {
                let dir = layout.worktrees();
                let _ = remove_tree(&dir.join(run_id));
                let _ = remove_tree(&dir.join(format!("{run_id}.git")));
            }
            let _ = take_own_record(run_id);
            release_live_lock(layout, run_id);
        }
        created
    }

    fn add(
        layout: &Layout,
        cwd: &Path,
        run_id: &str,
        start: Option<&str>,
    ) -> Result<Worktree, WorktreeError> {
        let not_repo = |e: WorktreeError| WorktreeError::NotARepo(e.to_string());
        let source = PathBuf::from(git(cwd, &["rev-parse", "--show-toplevel"]).map_err(not_repo)?);
        let base = match start {
            Some(commit) => commit.to_string(),
            None => git(&source, &["rev-parse", "HEAD"]).map_err(not_repo)?,
        };
        // As a checkout in the source would be: refused where its config defines filters.
        git_write(&source, &["rev-parse", "--git-dir"])?;
        let common = crate::git::common_dir(&source).ok_or_else(|| {
            WorktreeError::NotARepo("the repository's git dir could not be found".into())
        })?;
        let dir = layout.worktrees();
        std::fs::create_dir_all(&dir)
            .map_err(|e| WorktreeError::Io(format!("cannot create the worktrees dir: {e}")))?;
        let dir = dir.canonicalize().unwrap_or(dir);
        let path = dir.join(run_id);
        let branch = format!("splice/{run_id}");
        // Live before it exists, so `clean` never sees it unlocked.
        hold_live_lock(layout, run_id)?;
        let own = dir.join(format!("{run_id}.git"));
        store::init(&source, (&own, &path), &common, &branch, &base)?;
        // What makes git run programs in the run's own repository, as Splice made it: put
        // back before Splice commits there, and before a person could run git in a worktree
        // that is kept.
        let record = Snapshot::take(&own)
            .map_err(|e| WorktreeError::Io(format!("cannot record the worktree's git dir: {e}")))?;
        if let Ok(mut records) = OWN_RECORDS.lock() {
            records.push((run_id.to_string(), record));
        }
        let source_real = source.canonicalize().unwrap_or_else(|_| source.clone());
        let relative = cwd.strip_prefix(&source_real).unwrap_or(Path::new(""));
        let path = path.canonicalize().unwrap_or(path);
        let worktree = Worktree {
            run_id: run_id.to_string(),
            root: path.join(relative),
            source: source_real,
            path,
            branch,
            base,
        };
        let text = serde_json::to_string_pretty(&worktree)
            .map_err(|e| WorktreeError::Io(e.to_string()))?;
        std::fs::write(record_path(layout, run_id), text)
            .map_err(|e| WorktreeError::Io(format!("cannot record the worktree: {e}")))?;
        Ok(worktree)
    }

    /// Commit whatever the run left in the worktree, in its own repository, and bring its
    /// branch into the source repository (verified); whether there was anything to commit.
    pub fn commit(&self, message: &str) -> Result<bool, WorktreeError> {
        if !self.own_git_dir().is_dir() {
            return self.commit_linked(message);
        }
        self.own(Access::Write, &["add", "-A"])?;
        let mut diff = vec!["diff", "--cached", "--quiet"];
        diff.extend(DIFF_FLAGS);
        let staged = self.own_output(Access::Read, &diff)?;
        let changed = !staged.status.success();
        if changed {
            // The source's identity, not one the run's own config names.
            let identity = identity(&self.source);
            let mut args: Vec<&str> = identity.iter().map(String::as_str).collect();
            args.extend(["commit", "-q", "--no-verify", "-m", message]);
            self.own(Access::Write, &args)?;
        }
        self.publish()?;
        Ok(changed)
    }

    /// A worktree an older Splice made, a linked worktree of the source: committed there, as
    /// it was then (`splice worktree recover` of a leftover).
    fn commit_linked(&self, message: &str) -> Result<bool, WorktreeError> {
        git_write(&self.path, &["add", "-A"])?;
        let mut diff = vec!["diff", "--cached", "--quiet"];
        diff.extend(DIFF_FLAGS);
        if git_output(&self.path, Access::Read, &diff)?
            .status
            .success()
        {
            return Ok(false);
        }
        let mut args = fallback_identity(&self.path);
        args.extend(["commit", "-q", "--no-verify", "-m", message]);
        git_write(&self.path, &args)?;
        Ok(true)
    }

    /// Bring the branch of the worktree's own repository into the source repository as
    /// `self.branch`, every object verified (see `store`).
    pub fn publish(&self) -> Result<(), WorktreeError> {
        let own = self.own_git_dir();
        let tip = store::tip(&own, &self.path, &self.branch)?;
        store::publish(&self.source, &own, &self.branch, &self.base, &tip)
    }

    /// Commits on the branch since it was made: in the worktree's own repository while it is
    /// there, else in the source's.
    pub fn commits(&self) -> Result<u32, WorktreeError> {
        let range = format!("{}..refs/heads/{}", self.base, self.branch);
        let count = if self.own_git_dir().is_dir() {
            self.own(Access::Read, &["rev-list", "--count", &range])?
        } else {
            git(&self.source, &["rev-list", "--count", &range])?
        };
        Ok(count.parse().unwrap_or(0))
    }

    /// Merge the branch into the source checkout, or say why not.
    pub fn merge_back(&self) -> MergeOutcome {
        match self.try_merge() {
            Ok(outcome) => outcome,
            Err(error) => MergeOutcome::Failed(error.to_string()),
        }
    }

    fn try_merge(&self) -> Result<MergeOutcome, WorktreeError> {
        let commits = self.commits()?;
        if commits == 0 {
            return Ok(MergeOutcome::NoChange);
        }
        let status = git(
            &self.source,
            &["status", "--porcelain", "--untracked-files=no"],
        )?;
        if !status.is_empty() {
            return Ok(MergeOutcome::DirtySource);
        }
        // A dry merge in memory: exit 1 means conflicts, and nothing was touched.
        let dry = git_output(
            &self.source,
            Access::Read,
            &[
                "merge-tree",
                "--write-tree",
                "--name-only",
                "HEAD",
                &self.branch,
            ],
        )?;
        match dry.status.code() {
            Some(0) => {}
            Some(1) => {
                let text = String::from_utf8_lossy(&dry.stdout).into_owned();
                // Line 1 is the tree; conflicted names follow until the blank line.
                let files = text
                    .lines()
                    .skip(1)
                    .take_while(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect();
                return Ok(MergeOutcome::Conflict { files });
            }
            _ => {
                return Err(WorktreeError::Git {
                    command: "merge-tree".into(),
                    message: String::from_utf8_lossy(&dry.stderr).trim().to_string(),
                });
            }
        }
        let message = format!("Merge {} (splice run {})", self.branch, self.run_id);
        // The merge commit needs an identity as much as the run's own commit did.
        let mut args = fallback_identity(&self.source);
        args.extend([
            "merge",
            "--no-ff",
            "--no-edit",
            "--no-stat",
            "-m",
            &message,
            &self.branch,
        ]);
        if let Err(error) = git_write(&self.source, &args) {
            let _ = git(&self.source, &["merge", "--abort"]);
            return Err(error);
        }
        Ok(MergeOutcome::Merged { commits })
    }

    /// Remove the worktree, its own repository and its record; the branch too when
    /// `drop_branch`.
    pub fn remove(&self, layout: &Layout, drop_branch: bool) -> Result<(), WorktreeError> {
        // Only ever Splice's own directories in the data dir, whatever the record says.
        let dir = layout.worktrees();
        let dir = dir.canonicalize().unwrap_or(dir);
        if !crate::ids::is_run_id(&self.run_id) || self.path != dir.join(&self.run_id) {
            return Err(WorktreeError::Unsafe(format!(
                "{} is not a worktree of Splice's data directory; not removed",
                self.path.display()
            )));
        }
        for place in [&self.path, &self.own_git_dir()] {
            remove_tree(place)?;
        }
        // A worktree of an older Splice was a linked worktree of the source.
        let _ = git(&self.source, &["worktree", "prune"]);
        let reference = format!("refs/heads/{}", self.branch);
        let present = git(
            &self.source,
            &["rev-parse", "--verify", "--quiet", &reference],
        );
        if drop_branch && present.is_ok() {
            git(&self.source, &["update-ref", "-d", &reference])?;
        }
        let _ = std::fs::remove_file(record_path(layout, &self.run_id));
        let _ = take_own_record(&self.run_id);
        let own = crate::checkpoint::worktree_store_id(&self.run_id);
        let _ = std::fs::remove_dir_all(layout.run_checkpoints(&own));
        release_live_lock(layout, &self.run_id);
        Ok(())
    }

    /// What to tell a person whose run stopped before Splice committed its work.
    pub fn interrupted_note(&self) -> String {
        format!(
            "the run was interrupted before its work was committed: it stays uncommitted in \
             worktree {} on branch {}; `splice worktree recover {}` commits it and keeps the \
             branch, `splice worktree clean {}` discards it",
            self.path.display(),
            self.branch,
            self.run_id,
            self.run_id
        )
    }
}

/// How the source repository's git dir came out of the run.
enum GitDir {
    Untouched,
    /// These watched paths were changed and have been put back.
    Restored(Vec<String>),
    Unrestorable(String),
}

/// How merging a branch into a commit went: the merge commit, or the files in conflict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    Commit(String),
    Conflict(Vec<String>),
}

/// Merge `branch` into commit `onto` in memory (`git merge-tree`): a new merge commit that no
/// branch points at, or the conflicted files. Neither the index nor any file is touched.
pub fn merge_commit(
    source: &Path,
    onto: &str,
    branch: &str,
    message: &str,
) -> Result<Merged, WorktreeError> {
    let dry = git_output(
        source,
        Access::Read,
        &["merge-tree", "--write-tree", "--name-only", onto, branch],
    )?;
    let text = String::from_utf8_lossy(&dry.stdout).into_owned();
    match dry.status.code() {
        Some(0) => {}
        // Line 1 is the tree; conflicted names follow until the blank line.
        Some(1) => {
            let mut files: Vec<String> = text
                .lines()
                .skip(1)
                .take_while(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            files.dedup();
            return Ok(Merged::Conflict(files));
        }
        _ => {
            return Err(WorktreeError::Git {
                command: "merge-tree".into(),
                message: String::from_utf8_lossy(&dry.stderr).trim().to_string(),
            });
        }
    }
    let tree = text.lines().next().unwrap_or_default().to_string();
    let mut args = fallback_identity(source);
    args.extend([
        "commit-tree",
        &tree,
        "-p",
        onto,
        "-p",
        branch,
        "-m",
        message,
    ]);
    Ok(Merged::Commit(git_write(source, &args)?))
}

/// The commit `reference` names in `source`.
pub fn resolve(source: &Path, reference: &str) -> Result<String, WorktreeError> {
    git(
        source,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{reference}^{{commit}}"),
        ],
    )
}

/// The top level of the clean checkout `cwd` is in and its HEAD commit, or why tasks cannot
/// run in worktrees of it (no repository, no commit, changes not committed).
pub fn clean_checkout(cwd: &Path) -> Result<(PathBuf, String), String> {
    let top = git(cwd, &["rev-parse", "--show-toplevel"])
        .map_err(|_| "the project is not in a git repository".to_string())?;
    let top = PathBuf::from(top);
    let head = git(&top, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
        .map_err(|_| "the git repository has no commit yet".to_string())?;
    let status = git(&top, &["status", "--porcelain"])
        .map_err(|e| format!("cannot read the checkout's status ({e})"))?;
    if !status.is_empty() {
        return Err(
            "the checkout has changes that are not committed, or files git does not track".into(),
        );
    }
    Ok((top.canonicalize().unwrap_or(top), head))
}

/// The file changes that bring `root` (in checkout `top`) from commit `from`'s tree to
/// commit `to`'s: each file's contents in the checkout now, and in `to` (None: deleted). Err
/// also when a change lies outside `root`.
pub fn changes_between(
    top: &Path,
    root: &Path,
    from: &str,
    to: &str,
) -> Result<Vec<crate::confine::change::FileChange>, WorktreeError> {
    let prefix = git(root, &["rev-parse", "--show-prefix"])?;
    let mut diff = vec!["diff", "--name-only", "-z", "--no-renames"];
    diff.extend(DIFF_FLAGS);
    diff.extend([from, to]);
    let listed = git_output(top, Access::Read, &diff)?;
    if !listed.status.success() {
        return Err(WorktreeError::Git {
            command: "diff".into(),
            message: String::from_utf8_lossy(&listed.stderr).trim().to_string(),
        });
    }
    let mut changes = Vec::new();
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = String::from_utf8_lossy(name).into_owned();
        let Some(shown) = name.strip_prefix(prefix.as_str()) else {
            return Err(WorktreeError::Unsafe(format!(
                "{name} is outside the project root"
            )));
        };
        let path = root.join(shown);
        let before = crate::confine::beneath::read(root, &path).ok();
        let blob = git_output(
            top,
            Access::Read,
            &["cat-file", "blob", &format!("{to}:{name}")],
        )?;
        let after = blob.status.success().then_some(blob.stdout);
        changes.push(crate::confine::change::FileChange {
            path,
            shown: shown.to_string(),
            before,
            after,
        });
    }
    Ok(changes)
}

/// Put back what the run changed in the source repository's git dir (`guard`) and in its
/// worktree's own (see `git::snapshot`).
fn restore_git_dirs(worktree: &Worktree, guard: Option<&Snapshot>) -> GitDir {
    let own = take_own_record(&worktree.run_id);
    let places = [
        (
            guard,
            format!("the git dir of {}", worktree.source.display()),
        ),
        (
            own.as_ref(),
            format!(
                "the worktree's own git dir {}",
                worktree.own_git_dir().display()
            ),
        ),
    ];
    let (mut said, mut failed) = (Vec::new(), Vec::new());
    for (record, place) in places {
        match record.map(Snapshot::restore) {
            None => {}
            Some(Ok(changed)) if changed.is_empty() => {}
            Some(Ok(changed)) => said.push(format!("{} in {place}", changed.join(", "))),
            Some(Err(error)) => failed.push(format!("{place}: {error}")),
        }
    }
    match (said.is_empty(), failed.is_empty()) {
        (_, false) => GitDir::Unrestorable(failed.join("; ")),
        (true, true) => GitDir::Untouched,
        (false, true) => GitDir::Restored(said),
    }
}

/// End a worktree run: put back the source's git config and hooks if the run changed them,
/// commit its work, then merge back or say where the branch is. Returns the exit code, which
/// only a failed merge (or a git dir that could not be put back) changes.
pub fn finish(
    bus: &Bus,
    layout: &Layout,
    worktree: &Worktree,
    merge_back: bool,
    request: &str,
    exit: Exit,
    guard: Option<&Snapshot>,
) -> Exit {
    let exit = finish_run(bus, layout, worktree, merge_back, request, exit, guard);
    release_live_lock(layout, &worktree.run_id);
    exit
}

fn finish_run(
    bus: &Bus,
    layout: &Layout,
    worktree: &Worktree,
    merge_back: bool,
    request: &str,
    exit: Exit,
    guard: Option<&Snapshot>,
) -> Exit {
    let title = request
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(72)
        .collect::<String>();
    let message = format!("splice {}: {title}", worktree.run_id);
    let kept = format!(
        "the changes stay on branch {} (worktree {})",
        worktree.branch,
        worktree.path.display()
    );
    // Before Splice's own git commands, so nothing planted there is in force for them either.
    let git_dir = restore_git_dirs(worktree, guard);
    let source = worktree.source.display();
    if let Err(error) = worktree.commit(&message) {
        // Nothing of the branch reached the source repository: the work is in the worktree.
        bus.emit(Event::error(
            ErrorCode::MergeBackFailed,
            format!(
                "{error}; the work stays in worktree {} (on branch {} of its own repository)",
                worktree.path.display(),
                worktree.branch
            ),
        ));
        return exit.as_failure();
    }
    // A run that changed how git runs programs in the user's repository is not merged (fail
    // closed): its branch waits for the user to look at it.
    match &git_dir {
        GitDir::Untouched => {}
        GitDir::Restored(changed) => {
            let merge = if merge_back { "; not merged" } else { "" };
            bus.emit(Event::warning(
                WarningCode::GitConfigRestored,
                format!(
                    "the run changed {}, which can make git run programs; Splice put them back as they were{merge}; {kept}",
                    changed.join("; ")
                ),
            ));
        }
        GitDir::Unrestorable(error) => {
            bus.emit(Event::error(
                ErrorCode::MergeBackFailed,
                format!(
                    "the run changed the git config or hooks of {source} or of its worktree and Splice could not put them back ({error}): check them before running git there; {kept}"
                ),
            ));
            return exit.as_failure();
        }
    }
    if let (GitDir::Restored(_), true, crate::exit::Exit::Success) = (&git_dir, merge_back, exit) {
        return exit;
    }
    if !merge_back || exit != crate::exit::Exit::Success {
        let text = match worktree.commits() {
            Ok(0) => {
                let _ = worktree.remove(layout, true);
                "The worktree run made no changes.\n".to_string()
            }
            _ if merge_back => format!("Not merged: the run did not succeed; {kept}.\n"),
            _ => format!(
                "The changes are on branch {} (worktree {}); merge them with `git merge {}`.\n",
                worktree.branch,
                worktree.path.display(),
                worktree.branch
            ),
        };
        bus.emit(Event::text(text));
        return exit;
    }
    match worktree.merge_back() {
        MergeOutcome::Merged { commits } => {
            let _ = worktree.remove(layout, true);
            bus.emit(Event::text(format!(
                "Merged {} into {source} ({commits} commit(s)).\n",
                worktree.branch
            )));
            exit
        }
        MergeOutcome::NoChange => {
            let _ = worktree.remove(layout, true);
            bus.emit(Event::text("No changes to merge.\n"));
            exit
        }
        MergeOutcome::DirtySource => {
            bus.emit(Event::warning(
                WarningCode::DirtySource,
                format!("{source} has uncommitted changes, so nothing was merged; {kept}"),
            ));
            exit
        }
        MergeOutcome::Conflict { files } => {
            bus.emit(Event::warning(
                WarningCode::MergeConflict,
                format!(
                    "merging {} into {source} conflicts in {}; the source checkout was left as it was; {kept}",
                    worktree.branch,
                    files.join(", ")
                ),
            ));
            exit
        }
        MergeOutcome::Failed(message) => {
            bus.emit(Event::error(
                ErrorCode::MergeBackFailed,
                format!("{message}; {kept}"),
            ));
            exit.as_failure()
        }
    }
}

/// The recorded worktrees, oldest run first.
pub fn recorded(layout: &Layout) -> Vec<Worktree> {
    let mut found: Vec<Worktree> = std::fs::read_dir(layout.worktrees())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|text| serde_json::from_str(&text).ok())
        .collect();
    found.sort_by(|a, b| a.run_id.cmp(&b.run_id));
    found
}

/// `splice worktree list|recover|clean`: results on `out`, errors on `err`; the exit code.
/// `recover` and `clean` never touch a run that is still going.
/// What `splice worktree` does with the worktrees runs left behind. A closed set, so no
/// spelling can fall through to the destructive `Clean`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    List,
    Recover,
    Clean,
}

pub fn command(
    layout: &Layout,
    action: Action,
    run_id: Option<&str>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let all = recorded(layout);
    let chosen: Vec<&Worktree> = all
        .iter()
        .filter(|w| run_id.is_none_or(|id| w.run_id == id))
        .collect();
    if let (Some(id), true) = (run_id, chosen.is_empty()) {
        let _ = writeln!(err, "no leftover worktree of run {id}");
        return crate::exit::Exit::Usage;
    }
    if chosen.is_empty() {
        let _ = writeln!(out, "no leftover worktrees");
        return crate::exit::Exit::Success;
    }
    let mut code = crate::exit::Exit::Success;
    for worktree in chosen {
        let live = is_live(layout, &worktree.run_id);
        let line = match action {
            Action::List => Ok(describe(worktree, live)),
            _ if live => Err(WorktreeError::Io(format!(
                "still running (worktree {}); not touched",
                worktree.path.display()
            ))),
            Action::Recover => recover(worktree, layout),
            Action::Clean => clean(worktree, layout),
        };
        match line {
            Ok(line) => {
                let _ = writeln!(out, "{line}");
            }
            Err(error) => {
                let _ = writeln!(err, "{}: {error}", worktree.run_id);
                code = crate::exit::Exit::Failed;
            }
        }
    }
    code
}

fn describe(worktree: &Worktree, live: bool) -> String {
    let state = if live {
        "live: the run is still going".to_string()
    } else if worktree.path.exists() {
        let dirty = worktree
            .own(Access::Read, &["status", "--porcelain"])
            .map(|s| s.lines().count())
            .unwrap_or(0);
        let commits = worktree.commits().unwrap_or(0);
        format!("{dirty} uncommitted change(s), {commits} commit(s)")
    } else {
        "worktree directory missing".to_string()
    };
    format!(
        "{}\t{}\t{}\t{state}",
        worktree.run_id,
        worktree.branch,
        worktree.path.display()
    )
}

/// Commit what an interrupted run left, drop the worktree directory, keep the branch.
fn recover(worktree: &Worktree, layout: &Layout) -> Result<String, WorktreeError> {
    if worktree.path.exists() {
        worktree.commit(&format!("splice {}: recovered work", worktree.run_id))?;
    }
    let commits = worktree.commits()?;
    if commits == 0 {
        worktree.remove(layout, true)?;
        return Ok(format!("{}: nothing to recover; removed", worktree.run_id));
    }
    worktree.remove(layout, false)?;
    Ok(format!(
        "{}: recovered {commits} commit(s) on branch {}; merge with `git merge {}`",
        worktree.run_id, worktree.branch, worktree.branch
    ))
}

/// Remove the worktree (uncommitted work is discarded); keep a branch that has commits.
fn clean(worktree: &Worktree, layout: &Layout) -> Result<String, WorktreeError> {
    let commits = worktree.commits().unwrap_or(0);
    if commits > 0 && worktree.own_git_dir().is_dir() {
        worktree.publish()?;
    }
    worktree.remove(layout, commits == 0)?;
    Ok(if commits == 0 {
        format!("{}: removed", worktree.run_id)
    } else {
        format!(
            "{}: removed the worktree; branch {} keeps {commits} commit(s)",
            worktree.run_id, worktree.branch
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_live_until_released() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::create_dir_all(crate::layout::Layout::at(dir.path()).worktrees()).expect("create");
        assert!(!is_live(&crate::layout::Layout::at(dir.path()), "run_a"));
        hold_live_lock(&crate::layout::Layout::at(dir.path()), "run_a")
            .expect("hold live lock dir");
        assert!(is_live(&crate::layout::Layout::at(dir.path()), "run_a"));
        assert!(!is_live(&crate::layout::Layout::at(dir.path()), "run_b"));
        release_live_lock(&crate::layout::Layout::at(dir.path()), "run_a");
        assert!(!is_live(&crate::layout::Layout::at(dir.path()), "run_a"));
    }
}
