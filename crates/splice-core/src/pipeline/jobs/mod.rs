//! `--jobs N`: a design plan's tasks side by side. A task is ready when every task it depends
//! on has completed (run, and merged into the plan's tree); up to N run at once, each in its own
//! git worktree on its own branch, made from the plan's base plus the merged work of its
//! dependencies. Finished tasks are merged in the plan's order, whatever the order they finished
//! in, so the same plan gives the same tree whatever the timing; a conflict fails the task (a
//! `merge_conflict` warning naming the files) and its dependants are skipped. A failed task's
//! worktree is discarded, so there is nothing to roll back in the checkout.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures_util::stream::FuturesUnordered;
use futures_util::{Stream, StreamExt};

mod tree;

use super::Ctx;
use super::plan::{Ending, ending, halt_reason, store, task_text};
use super::progress::StageLog;
use super::runner::{self, PipelineEnd};
use super::schema::PlannedTask;
use super::tiers;
use crate::agent::{Agent, AgentError};
use crate::bus::Bus;
use crate::checkpoint::CheckpointStore;
use crate::ids::new_run_id;
use crate::protocol::Event;
use crate::protocol::result::{DesignPlanResult, PipelineResult, ResultStatus, TaskStatus};
use crate::settings::{RunSettings, Tier};
use crate::tools::runner::ToolRunner;
use crate::worktree::Worktree;
use tree::{Start, Tree, cleanup, discard, merge, resolve_tip, start_commit};

pub use tree::discard_all;

/// Whether any two tasks of the plan could run at the same time: neither depends on the other,
/// directly or not. Tasks in dependency order.
pub fn any_side_by_side(tasks: &[PlannedTask]) -> bool {
    // The tasks each one needs first, directly or not.
    let mut before: Vec<Vec<usize>> = Vec::new();
    for task in tasks {
        let mut needs: Vec<usize> = Vec::new();
        for dep in &task.depends_on {
            if let Some(at) = tasks.iter().position(|t| &t.id == dep) {
                needs.push(at);
                if let Some(further) = before.get(at) {
                    needs.extend(further.iter().copied());
                }
            }
        }
        needs.sort_unstable();
        needs.dedup();
        before.push(needs);
    }
    (0..tasks.len()).any(|b| (0..b).any(|a| !before[b].contains(&a)))
}

/// Where a task stands.
enum State {
    Pending,
    Running(Arc<StageLog>),
    /// Run; waiting for its turn to merge.
    Finished(Box<Done>),
    /// Merged into the plan's tree: its branch tip.
    Merged(String),
    Failed,
    Skipped,
}

/// A task's run, as it ended.
struct Done {
    end: PipelineEnd,
    worktree: Option<Worktree>,
    stages: Vec<crate::protocol::result::StageRecord>,
    iterations: u32,
    /// A budget stopped it: the reason.
    budget: Option<String>,
}

/// Run `tasks` (in dependency order) up to `ctx.settings.pipeline.jobs()` at once in worktrees of
/// the clean checkout `top` at commit `base`. Returns the error that stopped the plan, if any.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    ctx: &Ctx<'_>,
    request: &str,
    tasks: &[PlannedTask],
    tier: Tier,
    top: PathBuf,
    base: String,
    result: &mut DesignPlanResult,
    slot: &Mutex<Option<DesignPlanResult>>,
) -> Option<AgentError> {
    let jobs = usize::try_from(ctx.settings.pipeline.jobs().max(1)).unwrap_or(1);
    ctx.bus.emit(Event::reasoning(format!(
        "Design plan: up to {jobs} tasks at once, each in its own worktree\n"
    )));
    let mut tree = Tree {
        top,
        head: base.clone(),
        base,
    };
    let mut states: Vec<State> = tasks.iter().map(|_| State::Pending).collect();
    let mut running = FuturesUnordered::new();
    // Tasks that finished while the plan's git work ran (see `beside`), in the order they did.
    let mut finished: VecDeque<(usize, Done)> = VecDeque::new();
    let mut next_merge = 0;
    let mut stopped: Option<AgentError> = None;
    let mut halted: Option<String> = None;
    loop {
        skip_blocked(ctx, tasks, &mut states, result, halted.as_deref(), &stopped);
        // Start the ready tasks, in plan order, while there is room.
        for index in 0..tasks.len() {
            if running.len() >= jobs || stopped.is_some() || halted.is_some() {
                break;
            }
            if !matches!(states[index], State::Pending) || !ready(tasks, &states, index) {
                continue;
            }
            let tips: Vec<&str> = tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| tasks[index].depends_on.contains(&t.id))
                .filter_map(|(at, _)| match &states[at] {
                    State::Merged(tip) => Some(tip.as_str()),
                    _ => None,
                })
                .collect();
            let start = start_commit(ctx, &tree, &tasks[index].id, &tips);
            let start = beside(start, &mut running, &mut finished).await;
            let task_run = new_run_id();
            let bus = ctx.bus.for_task(&tasks[index].id);
            bus.emit(Event::reasoning(format!(
                "Task {} ({}/{}) runs as {task_run}: {}\n",
                tasks[index].id,
                index + 1,
                tasks.len(),
                tasks[index].title
            )));
            result.tasks[index].run_id = Some(task_run.clone());
            store(slot, result);
            let log = ctx.log.task(&bus);
            states[index] = State::Running(log.clone());
            let text = task_text(&tasks[index], request);
            let work = run_task(ctx, bus, log, task_run, start, text, tier);
            running.push(async move { (index, work.await) });
        }
        let next = match finished.pop_front() {
            Some(done) => Some(done),
            None => running.next().await,
        };
        let Some((index, mut done)) = next else {
            break;
        };
        if let State::Running(log) = &states[index] {
            ctx.log.release(log);
        }
        // The error that stops the plan is the plan's; the task keeps what it said.
        if matches!(done.end, PipelineEnd::Stopped(_)) {
            let said = match &done.end {
                PipelineEnd::Stopped(error) => error.to_string(),
                _ => String::new(),
            };
            if let PipelineEnd::Stopped(error) =
                std::mem::replace(&mut done.end, PipelineEnd::Failed(said))
            {
                if let AgentError::Budget(reason) = &error {
                    done.budget = Some(reason.clone());
                }
                stopped.get_or_insert(error);
            }
        }
        states[index] = State::Finished(Box::new(done));
        // Merge in plan order: each finished task at the head of the line, in turn.
        while next_merge < tasks.len() {
            let state = std::mem::replace(&mut states[next_merge], State::Pending);
            let settled = match state {
                State::Finished(done) => {
                    let settling = settle(
                        ctx,
                        tasks,
                        (next_merge, tier),
                        *done,
                        &mut tree,
                        result,
                        &mut halted,
                    );
                    beside(settling, &mut running, &mut finished).await
                }
                State::Pending if stopped.is_some() || halted.is_some() => State::Pending,
                other @ (State::Merged(_) | State::Failed | State::Skipped) => other,
                other => {
                    states[next_merge] = other;
                    break;
                }
            };
            let waiting = matches!(settled, State::Pending);
            states[next_merge] = settled;
            if waiting {
                break;
            }
            next_merge += 1;
        }
        result.usage = ctx.agent.meter.totals();
        store(slot, result);
        if stopped.is_some() {
            // The plan ends: the tasks still running end with it (their processes too), and
            // those that finished meanwhile are settled below as finished.
            drop(running);
            for (index, done) in finished.drain(..) {
                if let State::Running(log) = &states[index] {
                    ctx.log.release(log);
                }
                states[index] = State::Finished(Box::new(done));
            }
            for (index, state) in states.iter_mut().enumerate() {
                if let State::Running(log) = state {
                    log.interrupt(ctx.bus);
                    ctx.log.release(log);
                    result.tasks[index].status = TaskStatus::Failed;
                    result.failed.push(tasks[index].id.clone());
                    *state = State::Failed;
                }
            }
            // Those that finished, in plan order, as they would have been.
            for (index, state) in states.iter_mut().enumerate().skip(next_merge) {
                let taken = std::mem::replace(state, State::Pending);
                *state = match taken {
                    State::Finished(done) => {
                        settle(
                            ctx,
                            tasks,
                            (index, tier),
                            *done,
                            &mut tree,
                            result,
                            &mut halted,
                        )
                        .await
                    }
                    other => other,
                };
            }
            break;
        }
    }
    skip_blocked(ctx, tasks, &mut states, result, halted.as_deref(), &stopped);
    for (index, state) in states.iter().enumerate() {
        if matches!(state, State::Pending) {
            result.tasks[index].status = TaskStatus::Skipped;
            result.skipped.push(tasks[index].id.clone());
        }
    }
    cleanup(ctx, result).await;
    result.usage = ctx.agent.meter.totals();
    store(slot, result);
    stopped
}

/// Await the plan's own git work (`work`: a merge, a task's start) while the tasks in `running`
/// go on; those that finish meanwhile wait in `finished`, in the order they did.
async fn beside<T, S>(
    work: impl Future<Output = T>,
    running: &mut S,
    finished: &mut VecDeque<(usize, Done)>,
) -> T
where
    S: Stream<Item = (usize, Done)> + Unpin,
{
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            biased;
            out = &mut work => return out,
            // None (no task running) disables this branch: only the work is waited for.
            Some(done) = running.next() => finished.push_back(done),
        }
    }
}

/// Whether every task `index` depends on is merged.
fn ready(tasks: &[PlannedTask], states: &[State], index: usize) -> bool {
    tasks[index].depends_on.iter().all(|dep| {
        tasks
            .iter()
            .position(|t| &t.id == dep)
            .is_some_and(|at| matches!(states[at], State::Merged(_)))
    })
}

/// Mark skipped the pending tasks that can no longer run: a dependency failed or was skipped,
/// or the plan halted.
fn skip_blocked(
    ctx: &Ctx<'_>,
    tasks: &[PlannedTask],
    states: &mut [State],
    result: &mut DesignPlanResult,
    halted: Option<&str>,
    stopped: &Option<AgentError>,
) {
    for index in 0..tasks.len() {
        if !matches!(states[index], State::Pending) {
            continue;
        }
        let blocked = tasks[index].depends_on.iter().find(|dep| {
            tasks
                .iter()
                .position(|t| &t.id == *dep)
                .is_some_and(|at| matches!(states[at], State::Failed | State::Skipped))
        });
        let why = match (blocked, halted) {
            (Some(dep), _) => format!("its dependency {dep} did not complete"),
            (None, Some(why)) => why.to_string(),
            (None, None) => continue,
        };
        if stopped.is_none() {
            ctx.bus
                .for_task(&tasks[index].id)
                .emit(Event::reasoning(format!(
                    "Task {} skipped: {why}\n",
                    tasks[index].id
                )));
        }
        states[index] = State::Skipped;
        result.tasks[index].status = TaskStatus::Skipped;
        result.skipped.push(tasks[index].id.clone());
    }
}

/// One task in a worktree of its own: its own tool root, checkpoints and stage log; the run's
/// provider, meter (budgets), policy and bus.
async fn run_task(
    ctx: &Ctx<'_>,
    bus: Bus,
    log: Arc<StageLog>,
    task_run: String,
    start: Start,
    text: String,
    tier: Tier,
) -> Done {
    let failed = |why: String| Done {
        end: PipelineEnd::Failed(why),
        worktree: None,
        stages: Vec::new(),
        iterations: 0,
        budget: None,
    };
    if let Some(problem) = start.problem {
        return failed(problem);
    }
    let layout = ctx.settings.layout.clone();
    let (dir, top, run, commit) = (
        layout.clone(),
        start.top.clone(),
        task_run.clone(),
        start.commit.clone(),
    );
    let created = crate::blocking::exclusive(&ctx.repo, move || {
        Worktree::create_at(&dir, &top, &run, Some(&commit))
    });
    let worktree = match created.await {
        Ok(worktree) => worktree,
        Err(error) => return failed(format!("its worktree could not be made ({error})")),
    };
    // The plan's cwd, at the same place inside the task's worktree.
    let root = match ctx.root().strip_prefix(&start.top) {
        Ok(relative) => worktree.path.join(relative),
        Err(_) => worktree.root.clone(),
    };
    let settings = RunSettings {
        cwd: root.clone(),
        ..ctx.settings.clone()
    };
    let base = ctx.agent.runner;
    // Its worktree's own repository: never the source's git dir, nor the plan's.
    let writable = worktree.writable_git_paths();
    let tools = ToolRunner {
        root: root.clone(),
        // Its own writes' checkpoints are the worktree's (removed with it); the task's run id
        // names the checkpoints of its merge into the checkout.
        checkpoints: Arc::new(CheckpointStore::new(
            &layout,
            &crate::checkpoint::worktree_store_id(&task_run),
            &root,
        )),
        writable,
        bus: bus.clone(),
        ..base.clone()
    };
    let agent = Agent {
        provider: ctx.agent.provider,
        runner: &tools,
        meter: ctx.agent.meter,
        bus: &bus,
        instructions: ctx.agent.instructions.clone(),
        subagents: None,
    };
    let task_ctx = ctx.task(&settings, &bus, &agent, &log);
    let end = runner::run(&task_ctx, tiers::stages(tier), &text).await;
    let (stages, iterations) = log.take();
    let mut done = Done {
        end,
        worktree: Some(worktree),
        stages,
        iterations,
        budget: None,
    };
    if matches!(done.end, PipelineEnd::Completed | PipelineEnd::Answered(_))
        && let Some(worktree) = &done.worktree
    {
        let message = format!("splice task run {task_run}");
        // What makes git run programs in its own repository is put back first; a task that
        // changed it is not merged (fail closed).
        if let Some(record) = crate::worktree::take_own_record(&task_run) {
            let (record, restored) = crate::blocking::exclusive(&ctx.repo, move || {
                let restored = record.restore();
                (record, restored)
            })
            .await;
            match restored {
                Ok(changed) if changed.is_empty() => {}
                Ok(changed) => {
                    let why = format!(
                        "its commands changed {} in its worktree's git dir {}, which can make git \
                         run programs; Splice put them back, and the task is not merged",
                        changed.join(", "),
                        record.dir().display()
                    );
                    done.end = PipelineEnd::Failed(why);
                    return done;
                }
                Err(error) => {
                    done.end = PipelineEnd::Failed(format!(
                        "its worktree's git dir could not be put back ({error})"
                    ));
                    return done;
                }
            }
        }
        let ours = worktree.clone();
        let committed = crate::blocking::exclusive(&ctx.repo, move || ours.commit(&message));
        if let Err(error) = committed.await {
            let why = format!("its work could not be committed ({error})");
            done.end = PipelineEnd::Failed(why);
        }
    }
    done
}

/// A finished task's turn to merge: record it, merge its branch into the plan's tree (and the
/// checkout), or fail it and discard its worktree. Its new state.
async fn settle(
    ctx: &Ctx<'_>,
    tasks: &[PlannedTask],
    (index, tier): (usize, Tier),
    done: Done,
    tree: &mut Tree,
    result: &mut DesignPlanResult,
    halted: &mut Option<String>,
) -> State {
    let task = &tasks[index];
    let task_run = result.tasks[index].run_id.clone().unwrap_or_default();
    let mut end = done.end;
    if matches!(end, PipelineEnd::Completed | PipelineEnd::Answered(_))
        && let Some(worktree) = &done.worktree
        && let Err(why) = merge(ctx, task, &task_run, worktree, tree).await
    {
        end = PipelineEnd::Failed(why);
    }
    let Ending {
        mut status,
        mut abort_reason,
        label,
        why,
        answer,
    } = ending(&end);
    // The error that stopped the plan went to the plan; a budget still aborted this task.
    if let Some(reason) = done.budget {
        status = ResultStatus::Aborted;
        abort_reason = Some(reason);
    }
    ctx.bus.for_task(&task.id).emit(Event::reasoning(format!(
        "Task {} ({task_run}) {}{why}\n",
        task.id,
        label.as_str()
    )));
    if let Some(why) = halt_reason(&task.id, &end) {
        halted.get_or_insert(why);
    }
    let entry = &mut result.tasks[index];
    entry.status = label;
    entry.result = Some(PipelineResult {
        run_id: task_run,
        status,
        tier,
        iterations: done.iterations,
        stages: done.stages,
        usage: ctx.agent.meter.task_totals(&task.id),
        abort_reason,
        answer,
    });
    // Its work is in the plan's tree now, or discarded: the worktree goes either way.
    let mut tip = None;
    if let Some(worktree) = &done.worktree {
        tip = Some(resolve_tip(ctx, &tree.top, &worktree.branch).await);
        discard(ctx, worktree).await;
    }
    if label == TaskStatus::Completed {
        result.completed.push(task.id.clone());
        return State::Merged(tip.unwrap_or_default());
    }
    result.failed.push(task.id.clone());
    State::Failed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, deps: &[&str]) -> PlannedTask {
        PlannedTask {
            id: id.into(),
            title: id.into(),
            description: String::new(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn only_a_plan_with_independent_tasks_runs_side_by_side() {
        assert!(!any_side_by_side(&[task("A", &[])]));
        assert!(!any_side_by_side(&[
            task("A", &[]),
            task("B", &["A"]),
            task("C", &["B"])
        ]));
        assert!(any_side_by_side(&[task("A", &[]), task("B", &[])]));
        assert!(any_side_by_side(&[
            task("A", &[]),
            task("B", &["A"]),
            task("C", &["A"]),
            task("D", &["B", "C"])
        ]));
    }
}
