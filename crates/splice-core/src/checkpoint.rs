//! File checkpoints: before any write, the prior contents (or absence) of each file are stored
//! under the data dir, so `splice restore <runId> [--to N]` can put them back.
//!
//! Layout: `<data>/checkpoints/<runId>/<sequence>/manifest.json` plus one blob per file that
//! existed. Each entry also records a hash of what the write left, so a restore can tell a file
//! that was changed again afterwards (skipped unless forced) from one that was not.
//!
//! A design plan's tasks save into the plan's run (one sequence for the whole plan, as the
//! `checkpoint` events number them), each manifest tagged with its task's run id; the task's
//! own `<data>/checkpoints/<taskRunId>/part_of` names the plan, so the task's id restores just
//! that task's files.

use crate::layout::Layout;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::confine::beneath;
use crate::confine::change::FileChange;
use crate::protocol::events::{CheckpointInfo, RestoreInfo};

#[derive(Debug, Error)]
pub enum CheckpointError {
    #[error("checkpoint storage failed at {path}: {message}")]
    Io { path: String, message: String },
    #[error("no checkpoints for run `{0}`")]
    UnknownRun(String),
    #[error("corrupt checkpoint manifest {path}: {message}")]
    Corrupt { path: String, message: String },
    #[error(
        "the worktree {worktree} of run {run} is gone (`splice worktree clean` or `recover` removed \
         it, or the run merged it back); nothing was restored, and nothing is written where it was"
    )]
    WorktreeGone { worktree: String, run: String },
    #[error("the working root {0} is gone; nothing was restored")]
    RootGone(String),
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> CheckpointError {
    CheckpointError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    path: String,
    existed: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    blob: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    after_hash: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    run_id: String,
    root: String,
    sequence: u32,
    tool: String,
    files: Vec<Entry>,
    /// The design-plan task whose write this was.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    task_run: Option<String>,
}

/// In a task's checkpoint dir: the id of the plan run that holds its checkpoints.
const PART_OF: &str = "part_of";

/// FNV-1a: enough to notice that a file changed since Splice wrote it.
fn content_hash(bytes: Option<&[u8]>) -> String {
    match bytes {
        None => "absent".to_string(),
        Some(bytes) => {
            let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
            });
            format!("{hash:016x}-{}", bytes.len())
        }
    }
}

/// The id under which the writes made inside worktree `run_id` (a design-plan task's, a
/// subagent's) are checkpointed: they restore nothing once the worktree is gone, and go with it.
pub fn worktree_store_id(run_id: &str) -> String {
    format!("{run_id}_worktree")
}

/// The checkpoints of one run.
pub struct CheckpointStore {
    dir: PathBuf,
    run_id: String,
    root: PathBuf,
    next: AtomicU32,
    /// The design-plan task now running, if any.
    task: Mutex<Option<String>>,
}

impl CheckpointStore {
    pub fn new(layout: &Layout, run_id: &str, root: &Path) -> CheckpointStore {
        CheckpointStore {
            dir: layout.run_checkpoints(run_id),
            run_id: run_id.to_string(),
            root: root.to_path_buf(),
            next: AtomicU32::new(1),
            task: Mutex::new(None),
        }
    }

    /// How many checkpoints the run has saved: a stage tells from it whether its tools wrote.
    pub fn saved(&self) -> u32 {
        self.next.load(Ordering::SeqCst).saturating_sub(1)
    }

    /// Tag what is saved from now on as the design-plan task `task_run`'s (`None`: the run's own).
    pub fn begin_task(&self, task_run: Option<&str>) {
        if let Ok(mut task) = self.task.lock() {
            *task = task_run.map(str::to_string);
        }
    }

    /// The current task, its `part_of` link written first: a write whose task could not be
    /// restored on its own is not made.
    fn task_run(&self) -> Result<Option<String>, CheckpointError> {
        let task = self.task.lock().ok().and_then(|t| t.clone());
        if let (Some(task), Some(all)) = (&task, self.dir.parent()) {
            let link = all.join(task).join(PART_OF);
            if !link.is_file() {
                let dir = all.join(task);
                std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
                std::fs::write(&link, &self.run_id).map_err(|e| io_error(&link, e))?;
            }
        }
        Ok(task)
    }

    /// Store the prior state of every file in `changes`; returns what the event reports.
    pub fn save(
        &self,
        tool: &str,
        changes: &[FileChange],
    ) -> Result<CheckpointInfo, CheckpointError> {
        let task_run = self.task_run()?;
        let sequence = self.next.fetch_add(1, Ordering::SeqCst);
        let dir = self.dir.join(sequence.to_string());
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let mut files = Vec::new();
        for (index, change) in changes.iter().enumerate() {
            let blob = match &change.before {
                Some(bytes) => {
                    let name = format!("{index}.blob");
                    let path = dir.join(&name);
                    std::fs::write(&path, bytes).map_err(|e| io_error(&path, e))?;
                    Some(name)
                }
                None => None,
            };
            files.push(Entry {
                path: change.shown.clone(),
                existed: change.before.is_some(),
                blob,
                after_hash: Some(content_hash(change.after.as_deref())),
            });
        }
        let manifest = Manifest {
            run_id: self.run_id.clone(),
            root: self.root.display().to_string(),
            sequence,
            tool: tool.to_string(),
            files,
            task_run,
        };
        let path = dir.join("manifest.json");
        let text = serde_json::to_string_pretty(&manifest).map_err(|e| io_error(&path, e))?;
        std::fs::write(&path, text).map_err(|e| io_error(&path, e))?;
        Ok(CheckpointInfo {
            sequence,
            tool: tool.to_string(),
            files: changes.iter().map(|c| c.shown.clone()).collect(),
        })
    }
}

fn load_manifests(run_dir: &Path) -> Result<Vec<(PathBuf, Manifest)>, CheckpointError> {
    let mut manifests = Vec::new();
    let entries = std::fs::read_dir(run_dir).map_err(|e| io_error(run_dir, e))?;
    for entry in entries.flatten() {
        let path = entry.path().join("manifest.json");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let manifest: Manifest =
            serde_json::from_str(&text).map_err(|e| CheckpointError::Corrupt {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
        manifests.push((entry.path(), manifest));
    }
    manifests.sort_by_key(|(_, m)| std::cmp::Reverse(m.sequence));
    Ok(manifests)
}

/// What restoring one entry did.
enum Restored {
    Written,
    Deleted,
    /// Changed since Splice wrote it: left alone unless forced.
    Changed,
    /// No longer resolves inside the root, or now leads into a git dir: left alone, forced or
    /// not (a directory swapped for a link to `$HOME` must not cost the user their files).
    Escaped,
}

/// Put one entry back, every path opened beneath the root.
fn restore_entry(
    root: &Path,
    dir: &Path,
    entry: &Entry,
    force: bool,
) -> Result<Restored, CheckpointError> {
    let target = root.join(&entry.path);
    let escaped = |e: &std::io::Error| beneath::Escape::of(e).is_some();
    // Only a regular file is read (a FIFO swapped in would block the read forever); anything
    // else counts as changed since Splice wrote it.
    let current = match beneath::read_prefix(root, &target, u64::MAX) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if escaped(&e) => return Ok(Restored::Escaped),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Err(()),
        Err(e) => return Err(io_error(&target, e)),
    };
    let unchanged = current.as_ref().is_ok_and(|current| {
        entry
            .after_hash
            .as_ref()
            .is_none_or(|h| *h == content_hash(current.as_deref()))
    });
    if !unchanged && !force {
        return Ok(Restored::Changed);
    }
    let outcome = match (&entry.blob, entry.existed) {
        (Some(blob), true) => {
            let bytes = std::fs::read(dir.join(blob)).map_err(|e| io_error(dir, e))?;
            beneath::write(root, &target, &bytes).map(|()| Restored::Written)
        }
        _ => beneath::remove(root, &target).map(|()| Restored::Deleted),
    };
    match outcome {
        Ok(done) => Ok(done),
        Err(e) if escaped(&e) => Ok(Restored::Escaped),
        Err(e) => Err(io_error(&target, e)),
    }
}

/// The manifests of `run_id`, newest first: its own, or for a design-plan task, those its plan
/// holds for it.
fn manifests_of(
    layout: &Layout,
    run_id: &str,
) -> Result<Vec<(PathBuf, Manifest)>, CheckpointError> {
    let all = layout.checkpoints();
    let run_dir = all.join(run_id);
    if !run_dir.is_dir() {
        return Err(CheckpointError::UnknownRun(run_id.to_string()));
    }
    let link = run_dir.join(PART_OF);
    if !link.is_file() {
        return load_manifests(&run_dir);
    }
    let plan = std::fs::read_to_string(&link).map_err(|e| io_error(&link, e))?;
    let plan = plan.trim();
    // The link names a directory beside this one, nothing else.
    if !crate::ids::is_run_id(plan) {
        return Err(CheckpointError::Corrupt {
            path: link.display().to_string(),
            message: format!("`{plan}` is not a run id"),
        });
    }
    let plan_dir = all.join(plan);
    if !plan_dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut manifests = load_manifests(&plan_dir)?;
    manifests.retain(|(_, m)| m.task_run.as_deref() == Some(run_id));
    Ok(manifests)
}

/// Refuse a root that is gone before touching anything: a removed worktree is named as such
/// (not "changed after Splice wrote them"), and a directory made where it was is not it, so
/// not even `--force` writes there.
fn check_root(layout: &Layout, root: &Path) -> Result<(), CheckpointError> {
    let worktrees = layout.worktrees();
    let inside = [Some(worktrees.clone()), worktrees.canonicalize().ok()]
        .into_iter()
        .flatten()
        .find_map(|dir| {
            let rest = root.strip_prefix(&dir).ok()?;
            let run = rest.components().next()?.as_os_str().to_string_lossy();
            Some((dir.join(run.as_ref()), run.into_owned()))
        });
    if let Some((worktree, run)) = inside {
        if !crate::worktree::is_present(layout, &run) || !root.is_dir() {
            return Err(CheckpointError::WorktreeGone {
                worktree: worktree.display().to_string(),
                run,
            });
        }
        return Ok(());
    }
    if !root.is_dir() {
        return Err(CheckpointError::RootGone(root.display().to_string()));
    }
    Ok(())
}

/// Roll the files of `run_id` back to their state before checkpoint `to` (1 = before the run),
/// newest checkpoint first. A file changed since Splice wrote it is skipped unless `force`; one
/// that no longer resolves inside the root (or now leads into `.git`) is skipped always; a root
/// that is gone (a removed worktree) is an error, and nothing is restored.
/// Checkpoints restored whole are removed; one with skipped files stays for a forced retry.
pub fn restore(
    layout: &Layout,
    run_id: &str,
    to: u32,
    force: bool,
) -> Result<Vec<RestoreInfo>, CheckpointError> {
    let mut manifests = manifests_of(layout, run_id)?;
    manifests.retain(|(_, m)| m.sequence >= to);
    for (_, manifest) in &manifests {
        check_root(layout, Path::new(&manifest.root))?;
    }
    let mut reports = Vec::new();
    for (dir, manifest) in manifests {
        let root = PathBuf::from(&manifest.root);
        let mut report = RestoreInfo {
            sequence: manifest.sequence,
            files_restored: Vec::new(),
            files_deleted: Vec::new(),
            skipped: Vec::new(),
            escaped: Vec::new(),
        };
        for entry in &manifest.files {
            match restore_entry(&root, &dir, entry, force)? {
                Restored::Written => report.files_restored.push(entry.path.clone()),
                Restored::Deleted => report.files_deleted.push(entry.path.clone()),
                Restored::Changed => report.skipped.push(entry.path.clone()),
                Restored::Escaped => {
                    report.skipped.push(entry.path.clone());
                    report.escaped.push(entry.path.clone());
                }
            }
        }
        // A fully restored checkpoint is spent: a later restore must not apply it again.
        if report.skipped.is_empty() {
            std::fs::remove_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        }
        reports.push(report);
    }
    Ok(reports)
}

/// Why a restore left files alone, `None` when it left none: the one wording of a restore's
/// report, for `splice restore`'s `restore_skipped` warning and the TUI's `/undo`.
pub fn left_alone(reports: &[RestoreInfo]) -> Option<String> {
    let escaped: Vec<String> = reports.iter().flat_map(|r| r.escaped.clone()).collect();
    let changed: Vec<String> = reports
        .iter()
        .flat_map(|r| r.skipped.iter().filter(|f| !r.escaped.contains(f)).cloned())
        .collect();
    let mut why = Vec::new();
    if !escaped.is_empty() {
        why.push(format!(
            "{} now lead(s) outside the working root or into .git (a link was swapped in, or the file has other hard links) and were left alone, even with --force",
            escaped.join(", ")
        ));
    }
    if !changed.is_empty() {
        why.push(format!(
            "{} changed after Splice wrote them and were left alone; use --force to restore them too",
            changed.join(", ")
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The highest sequence of a run's checkpoints not yet restored (`None`: all are spent).
pub fn highest_sequence(layout: &Layout, run_id: &str) -> Result<Option<u32>, CheckpointError> {
    // Manifests come newest first.
    Ok(manifests_of(layout, run_id)?
        .first()
        .map(|(_, m)| m.sequence))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(root: &Path, path: &str, after: Option<&str>) -> FileChange {
        let full = root.join(path);
        FileChange {
            before: std::fs::read(&full).ok(),
            after: after.map(|a| a.as_bytes().to_vec()),
            shown: path.to_string(),
            path: full,
        }
    }

    #[test]
    fn left_alone_words_escaped_and_changed_files_apart() {
        let report = |skipped: &[&str], escaped: &[&str]| RestoreInfo {
            sequence: 1,
            files_restored: vec!["a.txt".into()],
            files_deleted: vec![],
            skipped: skipped.iter().map(|f| f.to_string()).collect(),
            escaped: escaped.iter().map(|f| f.to_string()).collect(),
        };
        assert_eq!(left_alone(&[report(&[], &[])]), None);
        assert_eq!(
            left_alone(&[report(&["b.txt"], &[])]).as_deref(),
            Some(
                "b.txt changed after Splice wrote them and were left alone; use --force to \
                 restore them too"
            )
        );
        let both = left_alone(&[report(&["b.txt", "l"], &["l"]), report(&["c.txt"], &[])])
            .unwrap_or_default();
        assert!(
            both.starts_with("l now lead(s) outside the working root or into .git"),
            "{both}"
        );
        assert!(
            both.ends_with(
                "; b.txt, c.txt changed after Splice wrote them and were left alone; use --force \
                 to restore them too"
            ),
            "{both}"
        );
    }

    #[test]
    fn restores_content_deletes_new_files_and_skips_later_edits() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        let work = tempfile::tempdir().expect("create a temporary directory");
        let root = work.path();
        std::fs::write(root.join("a.txt"), "old").expect("write a.txt");
        std::fs::write(root.join("c.txt"), "c0").expect("write c.txt");
        let store = CheckpointStore::new(&crate::layout::Layout::at(data.path()), "run_t", root);
        let first = vec![
            change(root, "a.txt", Some("new")),
            change(root, "b.txt", Some("b")),
        ];
        let info = store.save("write_file", &first).expect("save write_file");
        assert_eq!(info.sequence, 1);
        crate::confine::change::apply(root, &first).expect("apply root");
        let second = vec![change(root, "c.txt", Some("c1"))];
        assert_eq!(
            store.save("edit_file", &second).map(|i| i.sequence).ok(),
            Some(2)
        );
        crate::confine::change::apply(root, &second).expect("apply root");
        // Someone edits c.txt after Splice did.
        std::fs::write(root.join("c.txt"), "human").expect("write c.txt");

        let reports = restore(&crate::layout::Layout::at(data.path()), "run_t", 1, false)
            .expect("restore data");
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].sequence, 2);
        assert_eq!(reports[0].skipped, vec!["c.txt".to_string()]);
        assert_eq!(reports[1].files_restored, vec!["a.txt".to_string()]);
        assert_eq!(reports[1].files_deleted, vec!["b.txt".to_string()]);
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("old")
        );
        assert!(!root.join("b.txt").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("c.txt")).ok().as_deref(),
            Some("human")
        );
    }

    #[test]
    fn a_plan_tasks_checkpoints_restore_by_the_tasks_id_alone() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        let work = tempfile::tempdir().expect("create a temporary directory");
        let root = work.path();
        let store = CheckpointStore::new(&crate::layout::Layout::at(data.path()), "run_plan", root);
        let write = |task: &str, path: &str| {
            store.begin_task(Some(task));
            let changes = vec![change(root, path, Some(task))];
            store
                .save("submit_code", &changes)
                .expect("save submit_code");
            crate::confine::change::apply(root, &changes).expect("apply root");
        };
        write("run_t1", "one.txt");
        write("run_t2", "two.txt");
        store.begin_task(None);
        assert_eq!(
            highest_sequence(&crate::layout::Layout::at(data.path()), "run_t1").ok(),
            Some(Some(1))
        );
        let reports = restore(&crate::layout::Layout::at(data.path()), "run_t1", 1, false)
            .expect("restore data");
        assert_eq!(reports.len(), 1);
        assert_eq!(reports[0].files_deleted, vec!["one.txt".to_string()]);
        assert!(!root.join("one.txt").exists() && root.join("two.txt").exists());
        // The plan's id restores what is left.
        let reports = restore(
            &crate::layout::Layout::at(data.path()),
            "run_plan",
            1,
            false,
        )
        .expect("restore data");
        assert_eq!(reports.len(), 1);
        assert!(!root.join("two.txt").exists());
        // A link that names anything but a run id is not followed.
        let link = crate::layout::Layout::at(data.path())
            .run_checkpoints("run_t2")
            .join(PART_OF);
        std::fs::write(&link, "../elsewhere").expect("write link");
        assert!(matches!(
            restore(&crate::layout::Layout::at(data.path()), "run_t2", 1, false),
            Err(CheckpointError::Corrupt { .. })
        ));
    }

    #[test]
    fn a_root_that_is_gone_is_an_error_and_nothing_is_written() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        let work = tempfile::tempdir().expect("create a temporary directory");
        let root = work.path().join("gone");
        std::fs::create_dir_all(&root).expect("create root");
        let store = CheckpointStore::new(&crate::layout::Layout::at(data.path()), "run_g", &root);
        let changes = vec![change(&root, "a.txt", Some("a"))];
        store.save("write_file", &changes).expect("save write_file");
        std::fs::remove_dir_all(&root).expect("remove root");
        assert!(matches!(
            restore(&crate::layout::Layout::at(data.path()), "run_g", 1, true),
            Err(CheckpointError::RootGone(_))
        ));
        assert!(!root.exists());
    }

    #[test]
    fn unknown_run_is_an_error() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        assert!(matches!(
            restore(&crate::layout::Layout::at(data.path()), "run_x", 1, false),
            Err(CheckpointError::UnknownRun(_))
        ));
    }
}
