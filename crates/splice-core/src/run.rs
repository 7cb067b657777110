//! The run lifecycle shared by every front end: `run_start` first, the tier's work, `final`,
//! `run_end` last, always, including input errors, provider failures and interrupts.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::agent::{Agent, AgentError, TextRoute, TurnSpec};
use crate::bus::Bus;
use crate::checkpoint::CheckpointStore;
use crate::exit::Exit;
use crate::git::snapshot::Snapshot;
use crate::mcp::run::{Plan, RunServers};
use crate::pipeline::plan::{self, PlanEnd};
use crate::pipeline::progress::StageLog;
use crate::pipeline::runner::{self, PipelineEnd};
use crate::pipeline::{Ctx, tiers};
use crate::protocol::input::Prompt;
use crate::protocol::result::{DesignPlanResult, PipelineResult, ResultStatus};
use crate::protocol::{ErrorCode, Event, WarningCode};
use crate::provider::{Message, Provider};
use crate::tools::registry::ToolRegistry;
use crate::tools::runner::{GateClosed, ToolGate, ToolRunner};
use crate::tools::transcribe::Settling;
use crate::usage::UsageMeter;
use crate::worktree::{self, Worktree, WorktreeError};

// The run's settings live in `settings`, which the pipeline reads too; named here as well so
// callers that start a run find everything in one place.
pub use crate::settings::{RunSettings, Tier};

const AGENT_PROMPT: &str = include_str!("../../../assets/prompts/agent.md");

/// A failure that ends a run: the `error` event's code and message, and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    pub code: ErrorCode,
    pub message: String,
    pub exit_code: Exit,
}

impl RunFailure {
    pub fn new(code: ErrorCode, message: impl Into<String>, exit_code: Exit) -> RunFailure {
        RunFailure {
            code,
            message: message.into(),
            exit_code,
        }
    }

    pub fn protocol(message: impl Into<String>) -> RunFailure {
        RunFailure::new(ErrorCode::ProtocolError, message, Exit::Usage)
    }

    pub fn usage(message: impl Into<String>) -> RunFailure {
        RunFailure::new(ErrorCode::UsageError, message, Exit::Usage)
    }
}

/// Longest wait for cancelled tool jobs at an interrupt: the CLI's cancel grace and its
/// SIGTERM grace, and a second more.
const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(16);

/// What the run's work shares with the lifecycle wrapper, so an interrupt can still report.
struct Shared {
    meter: Arc<UsageMeter>,
    /// Tool jobs an interrupt cut short, cancelled and waited for before the run ends.
    settling: Settling,
    tier: Mutex<Tier>,
    log: StageLog,
    /// Set by a design-plan run: then `final.text` is the design-plan result.
    plan: Mutex<Option<DesignPlanResult>>,
    /// A worktree run holds its `final` back until the merge is done (a run in a repository,
    /// until its git dir is put back), so that `final` still comes last and its status counts
    /// a failed merge.
    hold_final: AtomicBool,
    held_final: Mutex<Option<(ResultStatus, Option<String>)>>,
    /// The repository's git config and hooks as the run found them; put back when it ends,
    /// interrupted or not (its sandbox may write them).
    git_guard: Mutex<Option<Snapshot>>,
    /// The run's answer for the result document (`answer`).
    answer: Mutex<Option<String>>,
    /// What to say when an interrupt leaves a worktree run's work uncommitted.
    worktree_note: Mutex<Option<String>>,
    /// The run's MCP servers: ended before the run's end on every path (a session's hub is
    /// left running).
    mcp: Mutex<Option<RunServers>>,
    /// Design-plan tasks' git work, one piece at a time; an interrupt's cleanup waits for it.
    repo: crate::blocking::RunLock,
}

/// A run's request once read: its prompt, and the settings for this run alone when the request
/// asks for others (a custom command's `model` and `allowed-tools`).
pub struct Request {
    pub prompt: Prompt,
    pub settings: Option<RunSettings>,
}

impl From<Prompt> for Request {
    fn from(prompt: Prompt) -> Request {
        Request {
            prompt,
            settings: None,
        }
    }
}

pub fn run_start(settings: &RunSettings) -> Event {
    Event::RunStart {
        session_id: settings.session_id.clone(),
        cwd: settings.cwd.display().to_string(),
        provider: settings.provider.kind.name().to_string(),
        model: settings.provider.model.clone(),
        api_model: settings.provider.api_model.clone(),
    }
}

/// Run one request from start to end and return the exit code. `request` resolves the input
/// (it may read stdin, expand a custom command); `interrupt` completes on SIGINT/SIGTERM/SIGHUP
/// or a user's Ctrl-C.
pub async fn execute<P, I>(settings: &RunSettings, bus: &Bus, request: P, interrupt: I) -> Exit
where
    P: Future<Output = Result<Request, RunFailure>>,
    I: Future<Output = ()>,
{
    bus.emit(run_start(settings));
    let _network_reports = crate::permissions::network::report_to(bus);
    if let Some(hooks) = bus.hooks() {
        hooks.report_unapproved(bus);
    }
    let shared = Arc::new(Shared {
        meter: Arc::new(UsageMeter::new(
            settings.provider.kind.name(),
            &settings.provider.model,
            &settings.provider.api_model,
            settings.pricing.clone(),
            settings.budget,
        )),
        settling: Settling::default(),
        tier: Mutex::new(Tier::Light),
        log: StageLog::default(),
        plan: Mutex::new(None),
        hold_final: AtomicBool::new(false),
        held_final: Mutex::new(None),
        git_guard: Mutex::new(None),
        answer: Mutex::new(None),
        worktree_note: Mutex::new(None),
        mcp: Mutex::new(None),
        repo: crate::blocking::RunLock::default(),
    });
    let work = async {
        let request = match request.await {
            Ok(request) => request,
            Err(failure) => return report(bus, &failure),
        };
        let settings = match &request.settings {
            Some(turn) => {
                // `run_start` named the session's model before the request was read.
                let provider = &turn.provider;
                if *provider != settings.provider {
                    shared.meter.switch_model(
                        provider.kind.name(),
                        &provider.model,
                        &provider.api_model,
                    );
                }
                turn
            }
            None => settings,
        };
        run_tier(settings, bus, &shared, request.prompt).await
    };
    let code = tokio::select! {
        biased;
        () = interrupt => {
            // Every announced call gets its result, even one the interrupt cut short.
            bus.close_open_calls("interrupted before the tool finished");
            // A stage cut short still ends with its one `failed` marker, and the stages it
            // kept from starting are `skipped`.
            shared.log.interrupt(bus);
            // Design-plan tasks that ran side by side are failed now: their worktrees go.
            if let Some(plan) = shared.plan.lock().ok().and_then(|p| p.clone()) {
                // A task's merge or commit still running ends first, and none starts after.
                let _held = shared.repo.hold().await;
                crate::blocking::atomic(|| {
                    crate::pipeline::jobs::discard_all(bus, &settings.layout, &plan)
                });
            }
            // The servers the run started end first: they are not sandboxed, and what they
            // might still write to the git dir must be over before it is put back.
            crate::mcp::run::close(&shared.mcp).await;
            crate::blocking::atomic(|| put_back_git_dir(bus, &shared, Exit::Interrupted));
            // A worktree kept for `splice worktree recover` fires nothing planted there either.
            if let Some(record) = crate::worktree::take_own_record(bus.run_id()) {
                let restored = crate::blocking::atomic(|| record.restore());
                if let Err(message) = put_back_reporting(bus, &record, "the run", restored) {
                    bus.emit(Event::error(ErrorCode::GitConfigRestoreFailed, message));
                }
            }
            if let Some(note) = shared.worktree_note.lock().ok().and_then(|mut n| n.take()) {
                crate::worktree::release_live_lock(&settings.layout, bus.run_id());
                bus.emit(Event::warning(WarningCode::WorktreeInterrupted, note));
            }
            // A cancelled transcription gets to clean up (the CLI's cancel, then its SIGTERM
            // and SIGKILL escalation) before the process ends.
            shared.settling.wait(SETTLE_LIMIT).await;
            bus.emit(Event::error(ErrorCode::Interrupted, "the run was interrupted"));
            write_final(bus, &shared, ResultStatus::Aborted, Some("interrupted".into()));
            Exit::Interrupted
        }
        code = work => code,
    };
    // Already done on the paths that start servers; this holds for any other.
    crate::mcp::run::close(&shared.mcp).await;
    bus.emit(Event::run_end(code));
    code
}

/// Put back what the run changed in the repository's git config, hooks and attributes, saying
/// so; the exit code, made a failure when they could not be put back.
fn put_back_git_dir(bus: &Bus, shared: &Shared, exit: Exit) -> Exit {
    let Some(guard) = shared.git_guard.lock().ok().and_then(|mut g| g.take()) else {
        return exit;
    };
    match put_back_reporting(bus, &guard, "the run", guard.restore()) {
        Ok(()) => exit,
        Err(message) => {
            bus.emit(Event::error(ErrorCode::GitConfigRestoreFailed, message));
            exit.as_failure()
        }
    }
}

/// Report what putting back a git dir (`restored`) did, `who` having changed it: a warning
/// naming what was put back; when it could not be, the error's message (the caller fails).
pub(crate) fn put_back_reporting(
    bus: &Bus,
    guard: &Snapshot,
    who: &str,
    restored: Result<Vec<String>, std::io::Error>,
) -> Result<(), String> {
    let dir = guard.dir().display().to_string();
    match restored {
        Ok(changed) if changed.is_empty() => Ok(()),
        Ok(changed) => {
            bus.emit(Event::warning(
                WarningCode::GitConfigRestored,
                format!(
                    "{who} changed {} in {dir}, which can make git run programs; Splice put them back as they were",
                    changed.join(", ")
                ),
            ));
            Ok(())
        }
        Err(error) => Err(format!(
            "{who} changed the git config or hooks in {dir} and Splice could not put them back ({error}): check them before running git there"
        )),
    }
}

/// Write the `final` a run held back, failed when `exit` says the run failed after all.
fn release_final(bus: &Bus, shared: &Shared, exit: Exit) -> Exit {
    shared.hold_final.store(false, Ordering::SeqCst);
    let held = shared.held_final.lock().ok().and_then(|mut h| h.take());
    if let Some((mut status, reason)) = held {
        if exit != Exit::Success && status == ResultStatus::Completed {
            status = ResultStatus::Failed;
        }
        write_final(bus, shared, status, reason);
    }
    exit
}

fn set_answer(shared: &Shared, answer: &str) {
    set_slot(&shared.answer, Some(answer.to_string()));
}

fn set_slot<T>(slot: &Mutex<Option<T>>, value: Option<T>) {
    if let Ok(mut slot) = slot.lock() {
        *slot = value;
    }
}

fn report(bus: &Bus, failure: &RunFailure) -> Exit {
    bus.emit(Event::error(failure.code, failure.message.clone()));
    failure.exit_code
}

fn emit_final(bus: &Bus, shared: &Shared, status: ResultStatus, abort_reason: Option<String>) {
    if shared.hold_final.load(Ordering::SeqCst) {
        if let Ok(mut held) = shared.held_final.lock() {
            *held = Some((status, abort_reason));
        }
        return;
    }
    write_final(bus, shared, status, abort_reason);
}

fn write_final(bus: &Bus, shared: &Shared, status: ResultStatus, abort_reason: Option<String>) {
    let plan = shared.plan.lock().ok().and_then(|p| p.clone());
    let text = match plan {
        Some(mut plan) => {
            // The run's outcome (an interrupt included) overrides what the plan recorded.
            plan.settle_unfinished();
            plan.status = status;
            plan.abort_reason = abort_reason.or(plan.abort_reason);
            plan.usage = shared.meter.totals();
            serde_json::to_string(&plan)
        }
        None => serde_json::to_string(&PipelineResult {
            run_id: bus.run_id().to_string(),
            status,
            tier: shared.tier.lock().map(|t| *t).unwrap_or(Tier::Light),
            iterations: shared.log.iterations(),
            stages: shared.log.records(),
            usage: shared.meter.totals(),
            abort_reason,
            answer: shared.answer.lock().ok().and_then(|a| a.clone()),
        }),
    };
    bus.emit(Event::Final {
        text: text.unwrap_or_default(),
    });
}

async fn run_tier(settings: &RunSettings, bus: &Bus, shared: &Shared, prompt: Prompt) -> Exit {
    let provider = match Provider::new(settings.provider.clone()) {
        Ok(provider) => provider,
        Err(e) => {
            return report(
                bus,
                &RunFailure::new(ErrorCode::InternalError, e.to_string(), Exit::Failed),
            );
        }
    };
    if let Err(e) = provider.check_credentials() {
        return report(
            bus,
            &RunFailure::new(e.code(), e.to_string(), Exit::Provider),
        );
    }
    let tier = match settings.tier {
        Tier::Auto if settings.pipeline.design_plan => Tier::Standard,
        Tier::Auto => {
            let (tier, why) = tiers::classify(&prompt.text);
            bus.emit(Event::reasoning(format!(
                "Tier auto: {} ({why})\n",
                tier.as_str()
            )));
            tier
        }
        other => other,
    };
    if let Ok(mut shown) = shared.tier.lock() {
        *shown = tier;
    }
    if !settings.pipeline.worktree {
        // A sandboxed command may write the repository's git dir under the root: what it
        // changes there that makes git run programs is put back before `final`. Finding and
        // recording it (a git process, unless there is plainly no repository) overlaps the
        // first model request; tools wait for it.
        let gate: ToolGate = Arc::new(tokio::sync::SetOnce::new());
        shared.hold_final.store(true, Ordering::SeqCst);
        let cwd = settings.cwd.clone();
        let take_guard = async {
            // No repository: nothing to record. One whose git dirs cannot be recorded (past
            // the bounds, unreadable): nothing could be put back, so no tool runs.
            let taken = crate::blocking::detached(move || {
                crate::git::common_dir(&cwd)
                    .map(|dir| Snapshot::take(&dir))
                    .transpose()
            })
            .await;
            let opened = match taken {
                Some(Ok(guard)) => {
                    set_slot(&shared.git_guard, guard);
                    Ok(())
                }
                // Fail closed: without the record nothing could be put back.
                Some(Err(_)) | None => Err(GateClosed::GitNotRecorded),
            };
            let _ = gate.set(opened);
        };
        let work = run_work(
            settings,
            bus,
            shared,
            &provider,
            prompt,
            tier,
            Tools {
                writable: Vec::new(),
                gate: Some(gate.clone()),
                origin: settings.cwd.clone(),
            },
        );
        let ((), exit) = tokio::join!(take_guard, work);
        crate::mcp::run::close(&shared.mcp).await;
        let exit = crate::blocking::atomic(|| put_back_git_dir(bus, shared, exit));
        return release_final(bus, shared, exit);
    }
    // Git commands that change the repository: blocking, and not to be cut in half.
    let created =
        crate::blocking::atomic(|| Worktree::create(&settings.layout, &settings.cwd, bus.run_id()));
    let worktree = match created {
        Ok(worktree) => worktree,
        Err(error @ WorktreeError::NotARepo(_)) => {
            return report(bus, &RunFailure::usage(error.to_string()));
        }
        Err(error) => {
            return report(
                bus,
                &RunFailure::new(ErrorCode::ToolError, error.to_string(), Exit::Failed),
            );
        }
    };
    bus.emit(Event::reasoning(format!(
        "Working in worktree {} on branch {}\n",
        worktree.path.display(),
        worktree.branch
    )));
    let inside = RunSettings {
        cwd: worktree.root.clone(),
        ..settings.clone()
    };
    let request = prompt.text.clone();
    set_slot(&shared.worktree_note, Some(worktree.interrupted_note()));
    shared.hold_final.store(true, Ordering::SeqCst);
    let git_dir = worktree.git_dir();
    // The run's commands write only the worktree's own repository, never the source's git
    // dir; what makes git run programs there is recorded anyway and put back at the end
    // (person-approved commands and hooks run unconfined).
    let taken = crate::blocking::atomic(|| git_dir.as_deref().map(Snapshot::take));
    let guard = match (taken, &git_dir) {
        (Some(Ok(guard)), Some(_)) => Some(guard),
        (Some(Err(error)), Some(common)) => {
            bus.emit(Event::reasoning(format!(
                "Splice could not record the git config and hooks of {} ({error})\n",
                common.display()
            )));
            None
        }
        _ => None,
    };
    let writable = worktree.writable_git_paths();
    if let Ok(mut slot) = shared.git_guard.lock() {
        *slot = guard;
    }
    let tools = Tools {
        writable,
        gate: None,
        origin: settings.cwd.clone(),
    };
    let exit = run_work(&inside, bus, shared, &provider, prompt, tier, tools).await;
    crate::mcp::run::close(&shared.mcp).await;
    set_slot(&shared.worktree_note, None);
    let guard = shared.git_guard.lock().ok().and_then(|mut g| g.take());
    let merged_exit = crate::blocking::atomic(|| {
        worktree::finish(
            bus,
            &settings.layout,
            &worktree,
            settings.pipeline.merge_back,
            &request,
            exit,
            guard.as_ref(),
        )
    });
    release_final(bus, shared, merged_exit)
}

/// Where the run's tools may write beyond the root, and what they wait for first.
struct Tools {
    writable: Vec<PathBuf>,
    gate: Option<ToolGate>,
    /// The root the run was started in (a worktree run works elsewhere): its `.mcp.json`
    /// names the project's MCP servers.
    origin: PathBuf,
}

/// The tier's work in `settings.cwd`.
async fn run_work(
    settings: &RunSettings,
    bus: &Bus,
    shared: &Shared,
    provider: &Provider,
    prompt: Prompt,
    tier: Tier,
    tools: Tools,
) -> Exit {
    let instructions = crate::instructions::read(&settings.cwd);
    for skipped in instructions.skipped {
        bus.emit(Event::warning(WarningCode::InstructionsSkipped, skipped));
    }
    // Found once per run: the installed packages, the run's own, and the Node that runs them;
    // meanwhile the MCP servers start.
    let (layout, packages) = (settings.layout.clone(), settings.packages.clone());
    let offer = crate::blocking::detached(move || {
        crate::packages::offer::prepare(&layout, &packages.extra, packages.node.as_deref())
    });
    let ((offered, warnings), mcp) = tokio::join!(
        async { offer.await.unwrap_or_default() },
        mcp_servers(settings, bus, shared, &tools.origin)
    );
    for (code, message) in warnings {
        bus.emit(Event::warning(code, message));
    }
    let runner = ToolRunner {
        root: settings.cwd.clone(),
        policy: settings.policy.clone(),
        checkpoints: Arc::new(CheckpointStore::new(
            &settings.layout,
            bus.run_id(),
            &settings.cwd,
        )),
        bus: bus.clone(),
        writable: tools.writable,
        gate: tools.gate,
        tools: Arc::new(ToolRegistry::for_run(
            offered,
            crate::tools::transcribe::Transcriber::find(
                crate::scribiz::launch::own_env(),
                &settings.layout,
                bus.run_id(),
                Arc::clone(&shared.meter),
                shared.settling.clone(),
            ),
            mcp,
        )),
    };
    let agent = Agent {
        provider,
        runner: &runner,
        meter: &shared.meter,
        bus,
        instructions: instructions.section,
        subagents: None,
    };
    // Stages start fresh conversations, so earlier exchanges reach them as a recap.
    let request = settings.conversation.with_recap(&prompt.text);
    let pipeline = settings.pipeline.design_plan || matches!(tier, Tier::Standard | Tier::Full);
    if pipeline && !prompt.images.is_empty() {
        bus.emit(Event::warning(
            WarningCode::ImagesDropped,
            format!(
                "{} image(s) not sent: only the light tier gives images to the model; the {} \
                 pipeline's stages get the request's text",
                prompt.images.len(),
                tier.as_str()
            ),
        ));
    }
    if settings.pipeline.design_plan {
        return run_plan(settings, bus, shared, &agent, &request, tier).await;
    }
    match tier {
        Tier::Light | Tier::Auto => {
            run_light(settings, bus, shared, &agent, prompt, &tools.origin).await
        }
        Tier::Standard | Tier::Full => {
            let ctx = Ctx::new(settings, bus, &agent, &shared.log, shared.repo.clone());
            let end = runner::run(&ctx, tiers::stages(tier), &request).await;
            let (exit, summary) = finish_pipeline(bus, shared, end);
            settings.conversation.push_exchange(&prompt.text, &summary);
            exit
        }
    }
}

/// The hub whose tools the run offers: the session's, or one the run starts for the servers
/// configured (the user's, and the project's at `origin` once approved); none when there are
/// none. Servers start in `settings.cwd`.
async fn mcp_servers(
    settings: &RunSettings,
    bus: &Bus,
    shared: &Shared,
    origin: &std::path::Path,
) -> Option<crate::mcp::McpHub> {
    if let Some(hub) = &settings.mcp.hub {
        set_slot(&shared.mcp, Some(RunServers::shared(hub.clone())));
        return Some(hub.clone());
    }
    let (user, layout, trust) = (
        settings.mcp.servers.clone(),
        settings.layout.clone(),
        settings.mcp.trust_project,
    );
    let origin = origin.to_path_buf();
    // Reading `.mcp.json` and the approvals: blocking, and quick.
    let plan = crate::blocking::detached(move || Plan::make(user, &origin, &layout, trust))
        .await
        .unwrap_or_default();
    crate::mcp::run::start_own(plan, &settings.cwd, bus, &shared.mcp).await
}

/// Report a pipeline's end: an error when it did not complete, the human summary, `final`.
/// Returns the exit code and the summary.
fn finish_pipeline(bus: &Bus, shared: &Shared, end: PipelineEnd) -> (Exit, String) {
    let (status, reason, exit) = match end {
        PipelineEnd::Completed => (ResultStatus::Completed, None, Exit::Success),
        PipelineEnd::Answered(answer) => {
            // Nothing to change: the code writer's answer is the run's, as a light run's is.
            let mut answer = answer.replace('\u{0}', "");
            if !answer.ends_with('\n') {
                answer.push('\n');
            }
            bus.emit(Event::text(answer.clone()));
            set_answer(shared, &answer);
            emit_final(bus, shared, ResultStatus::Completed, None);
            return (Exit::Success, answer);
        }
        PipelineEnd::Stuck { detail, cause } => {
            bus.emit(Event::error(
                cause.code(),
                format!(
                    "the pipeline stopped in iteration {}, since no further iteration could pass: {detail}",
                    shared.log.iterations()
                ),
            ));
            (ResultStatus::Failed, None, Exit::Failed)
        }
        PipelineEnd::Failed(detail) | PipelineEnd::Refused(detail) => {
            bus.emit(Event::error(
                ErrorCode::PipelineFailed,
                format!(
                    "the pipeline did not pass after {} iteration(s): {detail}",
                    shared.log.iterations()
                ),
            ));
            (ResultStatus::Failed, None, Exit::Failed)
        }
        PipelineEnd::Stopped(error) => {
            let (status, reason, exit) = stop_status(&error);
            bus.emit(Event::error(error_code(&error), error.to_string()));
            (status, reason, exit)
        }
    };
    let summary = summary(shared, status);
    bus.emit(Event::text(summary.clone()));
    set_answer(shared, &summary);
    emit_final(bus, shared, status, reason);
    (exit, summary)
}

fn error_code(error: &AgentError) -> ErrorCode {
    match error {
        AgentError::Provider(e) => e.code(),
        AgentError::TurnLimit(_) => ErrorCode::TurnLimit,
        AgentError::Budget(_) => ErrorCode::BudgetExceeded,
    }
}

/// The result status, abort reason and exit code of a run that an agent error stopped.
fn stop_status(error: &AgentError) -> (ResultStatus, Option<String>, Exit) {
    match error {
        AgentError::Provider(_) => (ResultStatus::Failed, None, Exit::Provider),
        AgentError::TurnLimit(_) => (ResultStatus::Failed, None, Exit::Failed),
        AgentError::Budget(reason) => (ResultStatus::Aborted, Some(reason.clone()), Exit::Failed),
    }
}

/// One line a person reads: the outcome, iterations, and each stage of the last iteration.
fn summary(shared: &Shared, status: ResultStatus) -> String {
    let iterations = shared.log.iterations();
    let records = shared.log.records();
    let last: Vec<String> = records
        .iter()
        .filter(|r| r.iteration == iterations)
        .map(|r| format!("{} {}", r.name.name(), r.status.as_str()))
        .collect();
    let outcome = match status {
        ResultStatus::Completed => "completed",
        ResultStatus::Failed => "failed",
        ResultStatus::Aborted => "aborted",
    };
    let tier = shared.tier.lock().map(|t| t.as_str()).unwrap_or_default();
    format!(
        "Pipeline {outcome} after {iterations} iteration(s) (tier {tier}): {}.\n",
        last.join(", ")
    )
}

async fn run_plan(
    settings: &RunSettings,
    bus: &Bus,
    shared: &Shared,
    agent: &Agent<'_>,
    request: &str,
    tier: Tier,
) -> Exit {
    let ctx = Ctx::new(settings, bus, agent, &shared.log, shared.repo.clone());
    let end = plan::run(&ctx, request, tier, &shared.plan).await;
    let (status, reason, exit) = match end {
        PlanEnd::Invalid(detail) => {
            bus.emit(Event::error(ErrorCode::DesignPlanInvalid, detail));
            (ResultStatus::Failed, None, Exit::Failed)
        }
        PlanEnd::Stopped(error) => {
            bus.emit(Event::error(error_code(&error), error.to_string()));
            stop_status(&error)
        }
        PlanEnd::Finished => {
            let result = shared.plan.lock().ok().and_then(|p| p.clone());
            match result {
                Some(r) if r.failed.is_empty() && r.skipped.is_empty() => {
                    (ResultStatus::Completed, None, Exit::Success)
                }
                other => {
                    // As for a single pipeline: a run that did not complete says so.
                    let (failed, skipped) = other
                        .map(|r| (r.failed.join(", "), r.skipped.join(", ")))
                        .unwrap_or_default();
                    bus.emit(Event::error(
                        ErrorCode::DesignPlanFailed,
                        format!("tasks failed: [{failed}]; skipped: [{skipped}]"),
                    ));
                    (ResultStatus::Failed, None, Exit::Failed)
                }
            }
        }
    };
    let text = match shared.plan.lock().ok().and_then(|p| p.clone()) {
        Some(r) => format!(
            "Design plan {}: {} completed, {} failed, {} skipped.\n",
            if exit == Exit::Success {
                "completed"
            } else {
                "did not complete"
            },
            r.completed.len(),
            r.failed.len(),
            r.skipped.len()
        ),
        None => "Design plan could not be made.\n".to_string(),
    };
    bus.emit(Event::text(text));
    emit_final(bus, shared, status, reason);
    exit
}

/// The light tier: one conversation with the real tools; its prose is the answer.
async fn run_light(
    settings: &RunSettings,
    bus: &Bus,
    shared: &Shared,
    agent: &Agent<'_>,
    prompt: Prompt,
    origin: &std::path::Path,
) -> Exit {
    shared.log.set_iterations(1);
    // The `agent` tool: the definitions of the project and the user, read for this run; a
    // project's approvals are those of the checkout the run started in (`origin`), also when
    // it works in a worktree of it.
    let catalog = crate::subagents::Subagents::catalog(settings, bus, origin).await;
    let subagents = crate::subagents::Subagents::new(
        agent.provider,
        agent.meter,
        agent.runner,
        settings,
        agent.instructions.clone(),
        catalog,
        origin,
    );
    let agent = &Agent {
        provider: agent.provider,
        runner: agent.runner,
        meter: agent.meter,
        bus: agent.bus,
        instructions: agent.instructions.clone(),
        subagents: Some(&subagents),
    };
    let system = crate::instructions::system_prompt(
        AGENT_PROMPT,
        &settings.cwd,
        agent.instructions.as_deref(),
    );
    let mut messages = settings.conversation.messages();
    messages.push(Message::User {
        text: prompt.text,
        images: prompt.images,
    });
    let spec = TurnSpec {
        system: &system,
        tools: &crate::tools::REAL_TOOLS,
        packages: true,
        submit: None,
        stage: crate::agent::ANSWER_STAGE,
        iteration: 1,
        max_turns: settings.max_turns,
        text_route: TextRoute::Answer,
    };
    match agent.converse(&mut messages, &spec).await {
        Ok(outcome) => {
            set_answer(shared, &outcome.text.replace('\u{0}', ""));
            settings.conversation.replace(messages);
            emit_final(bus, shared, ResultStatus::Completed, None);
            Exit::Success
        }
        Err(error) => {
            let (status, reason, exit) = stop_status(&error);
            bus.emit(Event::error(error_code(&error), error.to_string()));
            emit_final(bus, shared, status, reason);
            exit
        }
    }
}
