//! Design plans: the model drafts tasks with ids and dependencies, one critique pass may revise
//! the plan once, then each task runs as an independent pipeline run in dependency order; a
//! task whose dependency did not complete is skipped.

use std::collections::HashSet;
use std::sync::Mutex;

use super::Ctx;
use super::jobs;
use super::progress::one_line;
use super::runner::{self, PipelineEnd};
use super::schema::{Critique, PlanSubmission, PlannedTask, SubmitTool};
use super::stages::{StageCall, Stuck, submit};
use super::tiers;
use crate::agent::AgentError;
use crate::checkpoint::{self, CheckpointError};
use crate::ids::new_run_id;
use crate::protocol::result::{
    DesignPlanResult, PipelineResult, PlanTask, ResultStatus, TaskStatus, UsageTotals,
};
use crate::protocol::{Event, WarningCode};
use crate::settings::Tier;

const PLAN_PROMPT: &str = include_str!("../../../../assets/prompts/design_plan.md");
const CRITIQUE_PROMPT: &str = include_str!("../../../../assets/prompts/design_critique.md");

/// How a design-plan run ended; the result is also kept in `slot` as it grows, so that an
/// interrupted run can still report it.
pub enum PlanEnd {
    Finished,
    /// The plan could not be made (bad submission, invalid plan).
    Invalid(String),
    Stopped(AgentError),
}

pub async fn run(
    ctx: &Ctx<'_>,
    request: &str,
    tier: Tier,
    slot: &Mutex<Option<DesignPlanResult>>,
) -> PlanEnd {
    let mut result = DesignPlanResult {
        kind: "design_plan".into(),
        run_id: ctx.bus.run_id().to_string(),
        status: ResultStatus::Failed,
        completed: Vec::new(),
        failed: Vec::new(),
        skipped: Vec::new(),
        tasks: Vec::new(),
        usage: ctx.agent.meter.totals(),
        abort_reason: None,
    };
    // From here on `final` is a design-plan result, even if no plan comes about.
    store(slot, &result);
    let tasks = match draft_and_critique(ctx, request).await {
        Ok(Ok(tasks)) => tasks,
        Ok(Err(detail)) => return PlanEnd::Invalid(detail),
        Err(error) => return PlanEnd::Stopped(error),
    };
    result.tasks = tasks
        .iter()
        .map(|t| PlanTask {
            id: t.id.clone(),
            title: t.title.clone(),
            depends_on: t.depends_on.clone(),
            status: TaskStatus::Pending,
            run_id: None,
            result: None,
            rolled_back: Vec::new(),
            rollback_skipped: Vec::new(),
        })
        .collect();
    store(slot, &result);
    let task_tier = if tier == Tier::Full {
        Tier::Full
    } else {
        Tier::Standard
    };
    // Side by side only when it can matter: more than one job, and tasks that need not wait
    // for each other.
    if ctx.settings.pipeline.jobs() > 1 && jobs::any_side_by_side(&tasks) {
        let root = ctx.root().clone();
        match crate::blocking::atomic(|| crate::worktree::clean_checkout(&root)) {
            Ok((top, base)) => {
                let stopped = jobs::run(
                    ctx,
                    request,
                    &tasks,
                    task_tier,
                    top,
                    base,
                    &mut result,
                    slot,
                )
                .await;
                return conclude(ctx, result, stopped, slot);
            }
            Err(why) => ctx.bus.emit(Event::warning(
                WarningCode::TasksSerial,
                format!("the plan's tasks run one at a time in the checkout: {why}"),
            )),
        }
    }
    let mut stopped = None;
    // Why no later task starts: the policy refused a task's writes (or test command), and would
    // refuse every later one the same way (no request spent per task on a sure refusal); or a
    // failed task's changes could not be rolled back, and a task must not build on them.
    let mut halted: Option<String> = None;
    for (index, task) in tasks.iter().enumerate() {
        let blocked = task
            .depends_on
            .iter()
            .find(|dep| !result.completed.contains(dep));
        if stopped.is_none() {
            if let Some(why) = &halted {
                ctx.bus.emit(Event::reasoning(format!(
                    "Task {} skipped: {why}\n",
                    task.id
                )));
            } else if let Some(dep) = blocked {
                ctx.bus.emit(Event::reasoning(format!(
                    "Task {} skipped: its dependency {dep} did not complete\n",
                    task.id
                )));
            }
        }
        if blocked.is_some() || stopped.is_some() || halted.is_some() {
            result.tasks[index].status = TaskStatus::Skipped;
            result.skipped.push(task.id.clone());
            store(slot, &result);
            continue;
        }
        let task_run = new_run_id();
        ctx.bus.emit(Event::reasoning(format!(
            "Task {} ({}/{}) runs as {task_run}: {}\n",
            task.id,
            index + 1,
            tasks.len(),
            task.title
        )));
        result.tasks[index].run_id = Some(task_run.clone());
        store(slot, &result);
        let before = ctx.agent.meter.totals();
        let text = task_text(task, request);
        // The task's writes are checkpointed as its own, so it can be rolled back alone.
        ctx.agent.runner.checkpoints.begin_task(Some(&task_run));
        let end = runner::run(ctx, tiers::stages(task_tier), &text).await;
        ctx.agent.runner.checkpoints.begin_task(None);
        let (stages, iterations) = ctx.log.take();
        let Ending {
            status,
            abort_reason,
            label,
            why,
            answer,
        } = ending(&end);
        ctx.bus.emit(Event::reasoning(format!(
            "Task {} ({task_run}) {}{why}\n",
            task.id,
            label.as_str()
        )));
        result.tasks[index].status = label;
        result.tasks[index].result = Some(PipelineResult {
            run_id: task_run.clone(),
            status,
            tier: task_tier,
            iterations,
            stages,
            usage: usage_since(&before, &ctx.agent.meter.totals()),
            abort_reason,
            answer,
        });
        if label == TaskStatus::Completed {
            result.completed.push(task.id.clone());
        } else {
            result.failed.push(task.id.clone());
        }
        if let Some(why) = halt_reason(&task.id, &end) {
            halted = Some(why);
        }
        if let PipelineEnd::Stopped(error) = end {
            stopped = Some(error);
        }
        // A failed task that the run goes on past leaves the tree as it found it; a stopped
        // run (interrupt, budget, provider) ends here, its writes restorable by the task's id.
        if label == TaskStatus::Failed && stopped.is_none() {
            let entry = &mut result.tasks[index];
            if let Err(why) = rollback(ctx, &task.id, &task_run, entry) {
                halted.get_or_insert(why);
            }
        }
        result.usage = ctx.agent.meter.totals();
        store(slot, &result);
    }
    conclude(ctx, result, stopped, slot)
}

/// The plan's status from how its tasks ended, and how the run goes on.
fn conclude(
    ctx: &Ctx<'_>,
    mut result: DesignPlanResult,
    stopped: Option<AgentError>,
    slot: &Mutex<Option<DesignPlanResult>>,
) -> PlanEnd {
    result.status = match &stopped {
        Some(AgentError::Budget(reason)) => {
            result.abort_reason = Some(reason.clone());
            ResultStatus::Aborted
        }
        _ if result.failed.is_empty() && result.skipped.is_empty() => ResultStatus::Completed,
        _ => ResultStatus::Failed,
    };
    result.usage = ctx.agent.meter.totals();
    store(slot, &result);
    match stopped {
        Some(error) => PlanEnd::Stopped(error),
        None => PlanEnd::Finished,
    }
}

/// What a task's pipeline is asked: the task, and the request the plan is for.
pub(super) fn task_text(task: &PlannedTask, request: &str) -> String {
    format!(
        "{}\n\n{}\n\nThis is task {} of a plan for the request:\n{request}\n",
        task.title, task.description, task.id
    )
}

/// How a task's pipeline ended, for its result and the reasoning line that ends it.
pub(super) struct Ending {
    pub status: ResultStatus,
    pub abort_reason: Option<String>,
    pub label: TaskStatus,
    /// `: <why it failed>`, or empty.
    pub why: String,
    pub answer: Option<String>,
}

pub(super) fn ending(end: &PipelineEnd) -> Ending {
    let (status, abort_reason, label) = match end {
        PipelineEnd::Completed | PipelineEnd::Answered(_) => {
            (ResultStatus::Completed, None, TaskStatus::Completed)
        }
        PipelineEnd::Failed(_) | PipelineEnd::Refused(_) | PipelineEnd::Stuck { .. } => {
            (ResultStatus::Failed, None, TaskStatus::Failed)
        }
        PipelineEnd::Stopped(AgentError::Budget(reason)) => (
            ResultStatus::Aborted,
            Some(reason.clone()),
            TaskStatus::Failed,
        ),
        PipelineEnd::Stopped(_) => (ResultStatus::Failed, None, TaskStatus::Failed),
    };
    // Why a task failed, and a task's answer, are said where a person reads the run.
    let (why, answer) = match end {
        PipelineEnd::Answered(answer) => (String::new(), Some(answer.clone())),
        PipelineEnd::Failed(detail)
        | PipelineEnd::Refused(detail)
        | PipelineEnd::Stuck { detail, .. } => (format!(": {}", one_line(detail)), None),
        PipelineEnd::Stopped(error) => (format!(": {}", one_line(&error.to_string())), None),
        PipelineEnd::Completed => (String::new(), None),
    };
    Ending {
        status,
        abort_reason,
        label,
        why,
        answer,
    }
}

/// Why no later task may start after task `id` ended so: the policy refused its writes (or its
/// test command), and would refuse every later one the same way; or its test command cannot
/// run here.
pub(super) fn halt_reason(id: &str, end: &PipelineEnd) -> Option<String> {
    match end {
        PipelineEnd::Refused(_) => Some(format!(
            "the permission policy refused task {id}'s changes, and would refuse this one's"
        )),
        PipelineEnd::Stuck {
            cause: Stuck::Environment,
            ..
        } => Some(format!(
            "task {id}'s test command cannot run here, nor would this one's"
        )),
        _ => None,
    }
}

/// Put back what failed task `id` wrote, from its checkpoints, as `splice restore <task run>`
/// would (a file changed since Splice wrote it is left alone and named); a `restore` event per
/// checkpoint and a `warning` naming the task and the files. Err: why no later task may start.
fn rollback(ctx: &Ctx<'_>, id: &str, task_run: &str, entry: &mut PlanTask) -> Result<(), String> {
    let layout = &ctx.settings.layout;
    let reports = match crate::blocking::atomic(|| checkpoint::restore(layout, task_run, 1, false))
    {
        Ok(reports) => reports,
        // It wrote nothing.
        Err(CheckpointError::UnknownRun(_)) => return Ok(()),
        Err(error) => {
            let why = format!("task {id}'s changes could not be rolled back ({error})");
            ctx.bus.emit(Event::warning(
                WarningCode::TaskRolledBack,
                format!("{why}; no later task starts"),
            ));
            return Err(why);
        }
    };
    for report in reports {
        entry
            .rolled_back
            .extend(report.files_restored.iter().cloned());
        entry
            .rolled_back
            .extend(report.files_deleted.iter().cloned());
        entry
            .rollback_skipped
            .extend(report.skipped.iter().cloned());
        ctx.bus.emit(Event::Restore { checkpoint: report });
    }
    if entry.rolled_back.is_empty() && entry.rollback_skipped.is_empty() {
        return Ok(());
    }
    let mut message =
        format!("task {id} failed; its changes were rolled back before the next task");
    if !entry.rolled_back.is_empty() {
        message.push_str(&format!(": {}", entry.rolled_back.join(", ")));
    }
    if !entry.rollback_skipped.is_empty() {
        message.push_str(&format!(
            "; left alone (changed after Splice wrote them, or now leading outside the root or into .git): {}",
            entry.rollback_skipped.join(", ")
        ));
    }
    ctx.bus
        .emit(Event::warning(WarningCode::TaskRolledBack, message));
    Ok(())
}

pub(super) fn store(slot: &Mutex<Option<DesignPlanResult>>, result: &DesignPlanResult) {
    if let Ok(mut slot) = slot.lock() {
        *slot = Some(result.clone());
    }
}

/// The usage of one task: the meter's totals now minus before it started.
fn usage_since(before: &UsageTotals, now: &UsageTotals) -> UsageTotals {
    let cost = match (before.cost_usd, now.cost_usd) {
        (Some(a), Some(b)) => Some(((b - a) * 1_000_000.0).round() / 1_000_000.0),
        _ => None,
    };
    UsageTotals {
        requests: now.requests - before.requests,
        prompt_tokens: now.prompt_tokens - before.prompt_tokens,
        completion_tokens: now.completion_tokens - before.completion_tokens,
        total_tokens: now.total_tokens - before.total_tokens,
        cost_usd: cost,
        cost_status: now.cost_status,
    }
}

/// Draft the plan, critique it once, and use the revision when the critic rejects it.
async fn draft_and_critique(
    ctx: &Ctx<'_>,
    request: &str,
) -> Result<Result<Vec<PlannedTask>, String>, AgentError> {
    ctx.bus
        .emit(Event::reasoning("Design plan: drafting the tasks\n"));
    // Neither the draft nor the critique is retried: a plan that cannot be had ends the run
    // (`design_plan_invalid`), and a critique that cannot be had keeps the draft.
    let draft = submit::<PlanSubmission>(
        ctx,
        StageCall::reviewing("design_plan", 1, SubmitTool::Plan, PLAN_PROMPT),
        format!("Request:\n{request}\n"),
    )
    .await?;
    let drafted = match draft.valid() {
        Ok((_, plan)) => plan.tasks,
        Err(detail) => return Ok(Err(format!("the design plan is invalid: {detail}"))),
    };
    // A draft whose order does not hold (a cycle, an unknown dependency) still goes to the
    // critique, which may repair it; only a plan that stays broken fails.
    let (tasks, problem) = match order(drafted.clone()) {
        Ok(tasks) => (tasks, None),
        Err(detail) => (drafted, Some(detail)),
    };
    let mut review = format!(
        "Request:\n{request}\n\nPlan:\n{}\n",
        serde_json::to_string_pretty(&tasks_json(&tasks)).unwrap_or_default()
    );
    match &problem {
        Some(detail) => {
            ctx.bus.emit(Event::reasoning(format!(
                "Design plan: invalid as drafted ({detail})\nDesign critique: reviewing the plan\n"
            )));
            review.push_str(&format!(
                "\nThe plan cannot run as drafted: {detail}. Revise it.\n"
            ));
        }
        None => ctx.bus.emit(Event::reasoning(format!(
            "Design plan: {}\nDesign critique: reviewing the plan\n",
            describe(&tasks)
        ))),
    }
    let critique = submit::<Critique>(
        ctx,
        StageCall::reviewing("design_critique", 1, SubmitTool::Critique, CRITIQUE_PROMPT),
        review,
    )
    .await?;
    // Past this match the plan was not revised; `reason` says why.
    let reason = match critique.valid() {
        Err(detail) => format!("Design critique unusable ({detail})"),
        Ok((_, c)) if c.approved && problem.is_none() => {
            ctx.bus
                .emit(Event::reasoning("Design critique: plan approved\n"));
            return Ok(Ok(tasks));
        }
        Ok((_, c)) => match c.tasks.map(order) {
            Some(Ok(revised)) => {
                ctx.bus.emit(Event::reasoning(format!(
                    "Design critique: revised the plan ({}): {}\n",
                    c.issues.join("; "),
                    describe(&revised)
                )));
                return Ok(Ok(revised));
            }
            Some(Err(detail)) => format!("Design critique's revision is invalid ({detail})"),
            None => format!(
                "Design critique raised issues without a revision ({})",
                c.issues.join("; ")
            ),
        },
    };
    if let Some(detail) = problem {
        return Ok(Err(format!(
            "the design plan is invalid: {detail}; {reason}"
        )));
    }
    ctx.bus
        .emit(Event::reasoning(format!("{reason}; keeping the plan\n")));
    Ok(Ok(tasks))
}

fn describe(tasks: &[PlannedTask]) -> String {
    tasks
        .iter()
        .map(|t| {
            if t.depends_on.is_empty() {
                format!("{} {}", t.id, t.title)
            } else {
                format!("{} {} (after {})", t.id, t.title, t.depends_on.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn tasks_json(tasks: &[PlannedTask]) -> serde_json::Value {
    serde_json::Value::Array(
        tasks
            .iter()
            .map(|t| {
                serde_json::json!({"id": t.id, "title": t.title,
                    "description": t.description, "depends_on": t.depends_on})
            })
            .collect(),
    )
}

/// Check ids and dependencies and put the tasks in dependency order (stable otherwise).
fn order(tasks: Vec<PlannedTask>) -> Result<Vec<PlannedTask>, String> {
    if tasks.is_empty() {
        return Err("the plan has no tasks".into());
    }
    let mut ids = HashSet::new();
    for task in &tasks {
        if task.id.trim().is_empty() || !ids.insert(task.id.clone()) {
            return Err(format!("task id `{}` is empty or repeated", task.id));
        }
    }
    for task in &tasks {
        if let Some(dep) = task.depends_on.iter().find(|d| !ids.contains(*d)) {
            return Err(format!("task {} depends on unknown task `{dep}`", task.id));
        }
    }
    let mut placed: HashSet<String> = HashSet::new();
    let mut ordered = Vec::new();
    let mut rest: Vec<PlannedTask> = tasks;
    while !rest.is_empty() {
        let position = rest
            .iter()
            .position(|t| t.depends_on.iter().all(|d| placed.contains(d)))
            .ok_or_else(|| {
                let cycle: Vec<&str> = rest.iter().map(|t| t.id.as_str()).collect();
                format!("dependency cycle among {}", cycle.join(", "))
            })?;
        let task = rest.remove(position);
        placed.insert(task.id.clone());
        ordered.push(task);
    }
    Ok(ordered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(tasks: &[PlannedTask]) -> std::collections::HashMap<String, usize> {
        tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect()
    }

    fn task(id: &str, deps: &[&str]) -> PlannedTask {
        PlannedTask {
            id: id.into(),
            title: id.into(),
            description: String::new(),
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn orders_by_dependency_and_rejects_cycles() {
        let ordered =
            order(vec![task("T2", &["T1"]), task("T1", &[]), task("T3", &[])]).expect("order");
        let positions = ids(&ordered);
        assert!(positions["T1"] < positions["T2"]);
        assert!(order(vec![task("A", &["B"]), task("B", &["A"])]).is_err());
        assert!(order(vec![task("A", &["Z"])]).is_err());
        assert!(order(vec![task("A", &[]), task("A", &[])]).is_err());
        assert!(order(vec![]).is_err());
    }
}
