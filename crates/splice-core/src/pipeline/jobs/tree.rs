//! The plan's tree while tasks run side by side: where a task's branch starts, merging a
//! finished task into the checkout (checkpointed, so it can be restored), and discarding
//! worktrees.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bus::Bus;
use crate::layout::Layout;
use crate::pipeline::Ctx;
use crate::pipeline::schema::PlannedTask;
use crate::protocol::result::DesignPlanResult;
use crate::protocol::{Event, WarningCode};
use crate::worktree::{self, Merged, Worktree};

/// The plan's checkout and the commit its tree is at: the base, then each merge.
pub(super) struct Tree {
    pub top: PathBuf,
    pub base: String,
    pub head: String,
}

/// The commit task `id` starts from: the plan's base with its dependencies' branch tips
/// (`tips`, in plan order) merged in; each holds its own dependencies' work already.
pub(super) async fn start_commit(ctx: &Ctx<'_>, tree: &Tree, id: &str, tips: &[&str]) -> Start {
    let mut start = tree.base.clone();
    for (n, tip) in tips.iter().enumerate() {
        if n == 0 {
            start = (*tip).to_string();
            continue;
        }
        let message = format!("Dependencies of task {id}");
        let (top, base, tip) = (tree.top.clone(), start.clone(), (*tip).to_string());
        let merged = crate::blocking::exclusive(&ctx.repo, move || {
            worktree::merge_commit(&top, &base, &tip, &message)
        });
        match merged.await {
            Ok(Merged::Commit(commit)) => start = commit,
            Ok(Merged::Conflict(files)) => {
                return Start {
                    commit: start,
                    problem: Some(format!(
                        "its dependencies' work conflicts in {}",
                        files.join(", ")
                    )),
                    top: tree.top.clone(),
                };
            }
            Err(error) => {
                return Start {
                    commit: start,
                    problem: Some(error.to_string()),
                    top: tree.top.clone(),
                };
            }
        }
    }
    Start {
        commit: start,
        problem: None,
        top: tree.top.clone(),
    }
}

/// Where a task's branch starts, or why it cannot.
pub(super) struct Start {
    pub top: PathBuf,
    pub commit: String,
    pub problem: Option<String>,
}

pub(super) async fn resolve_tip(ctx: &Ctx<'_>, top: &Path, branch: &str) -> String {
    let (top, name) = (top.to_path_buf(), branch.to_string());
    crate::blocking::exclusive(&ctx.repo, move || worktree::resolve(&top, &name))
        .await
        .unwrap_or_else(|_| branch.into())
}

/// Merge the task's branch into the plan's tree and bring the checkout along. Err: why the
/// task fails (a conflict, said in a `merge_conflict` warning naming the files).
pub(super) async fn merge(
    ctx: &Ctx<'_>,
    task: &PlannedTask,
    task_run: &str,
    worktree: &Worktree,
    tree: &mut Tree,
) -> Result<(), String> {
    let message = format!("Merge task {} ({})", task.id, worktree.branch);
    let (top, head, branch) = (tree.top.clone(), tree.head.clone(), worktree.branch.clone());
    let merged = crate::blocking::exclusive(&ctx.repo, move || {
        worktree::merge_commit(&top, &head, &branch, &message)
    });
    let commit = match merged.await {
        Ok(Merged::Commit(commit)) => commit,
        Ok(Merged::Conflict(files)) => {
            let why = format!(
                "its branch {} conflicts with the plan's tree in {}",
                worktree.branch,
                files.join(", ")
            );
            ctx.bus.for_task(&task.id).emit(Event::warning(
                WarningCode::MergeConflict,
                format!("task {} failed: {why}", task.id),
            ));
            return Err(why);
        }
        Err(error) => return Err(format!("its branch could not be merged ({error})")),
    };
    bring_in(ctx, task_run, tree, &commit)
        .await
        .map_err(|e| format!("its work could not be brought into the checkout ({e})"))?;
    tree.head = commit;
    Ok(())
}

/// Write what the merge `commit` changed into the checkout, checkpointed as task `task_run`'s
/// own (as a task's writes in place are), so `splice restore` undoes it by the task's run id or
/// the plan's. The checkpoint and the writes land together.
pub(super) async fn bring_in(
    ctx: &Ctx<'_>,
    task_run: &str,
    tree: &Tree,
    commit: &str,
) -> Result<(), String> {
    let root = ctx.root().clone();
    let (top, head, commit) = (tree.top.clone(), tree.head.clone(), commit.to_string());
    let (store, bus, task_run) = (
        Arc::clone(&ctx.agent.runner.checkpoints),
        ctx.bus.clone(),
        task_run.to_string(),
    );
    // Reading the changes, the checkpoint and the writes it guards are one piece of work.
    crate::blocking::exclusive(&ctx.repo, move || {
        let changes =
            worktree::changes_between(&top, &root, &head, &commit).map_err(|e| e.to_string())?;
        if changes.is_empty() {
            return Ok(());
        }
        store.begin_task(Some(&task_run));
        let saved = store.save("merge", &changes);
        store.begin_task(None);
        let info = saved.map_err(|e| e.to_string())?;
        bus.emit(Event::Checkpoint { checkpoint: info });
        crate::confine::change::apply(&root, &changes).map_err(|e| e.to_string())
    })
    .await
}

/// Remove a task's worktree and branch (failed: nothing of it stays).
pub(super) async fn discard(ctx: &Ctx<'_>, worktree: &Worktree) {
    let (layout, gone) = (ctx.settings.layout.clone(), worktree.clone());
    let removed = crate::blocking::exclusive(&ctx.repo, move || gone.remove(&layout, true));
    if let Err(error) = removed.await {
        not_removed(ctx.bus, worktree, &error);
    }
}

pub(super) fn not_removed(bus: &Bus, worktree: &Worktree, error: &worktree::WorktreeError) {
    bus.emit(Event::reasoning(format!(
        "Worktree {} could not be removed ({error}); `splice worktree clean {}` removes it\n",
        worktree.path.display(),
        worktree.run_id
    )));
}

/// The plan is over: the worktrees of tasks cut short go too.
pub(super) async fn cleanup(ctx: &Ctx<'_>, result: &DesignPlanResult) {
    let (bus, layout, result) = (ctx.bus.clone(), ctx.settings.layout.clone(), result.clone());
    crate::blocking::exclusive(&ctx.repo, move || discard_all(&bus, &layout, &result)).await;
}

/// Remove every worktree of the plan's tasks that is still there (an interrupt ends the plan
/// with its tasks: their worktrees are discarded as a failed task's is), saying which could
/// not be. Blocking.
pub fn discard_all(bus: &Bus, layout: &Layout, result: &DesignPlanResult) {
    for worktree in worktree::recorded(layout) {
        let ours = result
            .tasks
            .iter()
            .any(|t| t.run_id.as_deref() == Some(worktree.run_id.as_str()));
        if ours && let Err(error) = worktree.remove(layout, true) {
            not_removed(bus, &worktree, &error);
        }
    }
}
