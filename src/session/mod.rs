//! A session: one conversation, driven by a closed set of operations ([`Op`]) and reporting
//! everything on the bus. Front ends (the TUI, headless mode) submit operations and read
//! events; they never drive the provider, checkpoints or compaction themselves.
//!
//! The session's loop is a task of its own: a turn runs in a task of its own too, so an
//! operation (an interrupt, a permission answer) is taken while a turn blocks. Operations are
//! handled in the order submitted: a request sent after `/model` runs on the new model.

mod compact;
mod login;
mod model;
mod turn;
mod undo;

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::bus::{Answer, Bus, PermissionAsk, PermissionQuestion, Sink};
use crate::ids::new_run_id;
use crate::protocol::input::Prompt;
use crate::run::RunFailure;
use crate::settings::{RunSettings, Tier};

pub use compact::{Outcome as CompactOutcome, STAGE as COMPACT_STAGE, fill_after};
pub use login::LoginTarget;
pub use model::{ModelChoice, missing_key_hint, resolve_model, resolve_model_from_env};
pub use turn::{RunFuture, RunTurn, execute_turn};
pub use undo::Undone;

/// The share of the window, in percent, past which a run compacts its conversation on its own.
pub const COMPACT_AT_PERCENT: u64 = (crate::compaction::COMPACT_AT * 100.0) as u64;

/// The context window of the model the session runs now (it follows [`Op::SetModel`]), from
/// the price table the runs use (the built-in data with the user's pricing file over it), or
/// its default.
pub fn context_window(settings: &RunSettings) -> u64 {
    settings
        .pricing
        .context_window(settings.provider.kind.name(), &settings.provider.api_model)
}

/// What a `context_compacted` warning says was done, without its preamble.
pub fn compaction_outcome(message: &str) -> &str {
    message
        .strip_prefix(crate::compaction::FILLING)
        .unwrap_or(message)
}

/// What a turn's request is: given, or still being read (headless reads standard input while
/// the run starts, so `run_start` comes first and input that cannot be read is the run's
/// error).
pub enum Input {
    Prompt(Prompt),
    Reading(Pin<Box<dyn Future<Output = Result<Prompt, RunFailure>> + Send>>),
}

impl Input {
    pub fn text(text: impl Into<String>) -> Input {
        Input::Prompt(Prompt::from_text(text))
    }
}

/// Everything a front end can ask of a session.
pub enum Op {
    /// A request from the person (text and images): a run on the session's conversation. One
    /// submitted while a turn runs starts when it ends.
    UserTurn(Input),
    /// Stop the turn in progress (it ends as interrupted) and drop the requests queued behind
    /// it.
    Interrupt,
    /// Compact the conversation now: its older part is summarised by the model, the newest
    /// exchanges kept. Requests submitted meanwhile wait for it; an interrupt cancels it.
    Compact,
    /// Put back the files as they were before this checkpoint of a run (`/undo`); the model is
    /// told. Refused while a turn runs.
    Undo { run_id: String, sequence: u32 },
    /// The person's answer to the permission question `id` ([`SessionEvent::PermissionAsked`]).
    AnswerPermission { id: String, answer: Answer },
    /// Start these MCP servers on the session's hub, in the background.
    StartMcp(Vec<crate::mcp::ServerEntry>),
    /// The person approved this project server: remember the approval for the project, and
    /// start it.
    ApproveMcp(crate::mcp::ServerEntry),
    /// Start a device-code login (one already going is cancelled).
    Login(LoginTarget),
    /// Cancel the login going on: its task ends, nothing is saved.
    CancelLogin,
    /// Change the model the next turns use.
    SetModel(crate::provider::ProviderConfig),
    /// Change the tier the next turns use.
    SetTier(Tier),
    /// Change the permission mode the next turns use (session rules are kept).
    SetPermissionMode(crate::permissions::PermissionMode),
    /// End the session once the turn in progress has ended (interrupt it first to cut it
    /// short).
    Shutdown,
}

/// What a session reports besides a run's protocol events, to sinks that want it (the
/// stream-json and text writers ignore these: their output is the runs' events alone). Each
/// [`Op::UserTurn`] is answered by exactly one `TurnEnded` or `TurnDropped`, in the order the
/// turns were submitted; the run's own events (`run_start` first, `run_end` last) carry its
/// run id.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A turn ended, after all its events, with its exit code.
    TurnEnded { code: i32 },
    /// A request queued behind a turn was dropped by an interrupt, never started.
    TurnDropped,
    /// A tool call waits for the person's permission: answer with [`Op::AnswerPermission`]
    /// (an interrupt, or the turn's end, denies it).
    PermissionAsked(PermissionQuestion),
    /// A login started: its events follow ([`SessionEvent::Login`]).
    LoginStarted { service: String },
    /// A login could not start, and why.
    LoginRefused { reason: String },
    /// The login's next event; `None` when it ended without an outcome.
    Login(Option<crate::device_login::DeviceLoginEvent>),
    /// Something went wrong that the person should know of (an approval not saved).
    Warning { message: String },
    /// An operation was refused in the session's present state (a `/compact` during a turn).
    Refused { reason: String },
    /// A compaction's summary request is on its way to `model`.
    CompactStarted { model: String },
    /// A compaction ended (or had nothing to do, or was cancelled).
    CompactEnded(CompactOutcome),
    /// An undo put files back from this checkpoint.
    Undone(Undone),
    /// The checkpoint could not be used.
    UndoFailed {
        run_id: String,
        sequence: u32,
        error: String,
    },
}

/// How a front end attaches to a session.
pub struct Frontend {
    /// Every run's events, and the session's own.
    pub sinks: Vec<Arc<dyn Sink>>,
    /// Whether the front end answers permission prompts ([`SessionEvent::PermissionAsked`]);
    /// without it they are denied as headless.
    pub asks: bool,
    /// What a turn runs: [`execute_turn`] but in tests.
    pub turn: RunTurn,
}

impl Frontend {
    /// Sinks alone, real runs, prompts denied: headless mode.
    pub fn headless(sinks: Vec<Arc<dyn Sink>>) -> Frontend {
        Frontend {
            sinks,
            asks: false,
            turn: execute_turn(),
        }
    }
}

/// Submits operations to a session; cheap to clone.
#[derive(Clone)]
pub struct Handle {
    ops: mpsc::UnboundedSender<Op>,
}

impl Handle {
    /// Queue `op`; a session that has ended ignores it.
    pub fn submit(&self, op: Op) {
        let _ = self.ops.send(op);
    }
}

/// A running session.
pub struct Session {
    handle: Handle,
    task: tokio::task::JoinHandle<i32>,
}

impl Session {
    /// Start a session on `settings` (its conversation included) in a task of its own.
    pub fn spawn(settings: RunSettings, frontend: Frontend) -> Session {
        let (ops, receiver) = mpsc::unbounded_channel();
        let (asks, questions) = if frontend.asks {
            let (asks, questions) = mpsc::unbounded_channel();
            (Some(asks), Some(questions))
        } else {
            (None, None)
        };
        let core = Core::new(settings, frontend, asks);
        Session {
            handle: Handle { ops },
            task: tokio::spawn(core.serve(receiver, questions)),
        }
    }

    pub fn submit(&self, op: Op) {
        self.handle.submit(op);
    }

    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Wait for the session to end (after [`Op::Shutdown`], or when every handle is gone):
    /// the exit code of its last turn, 0 without one.
    pub async fn ended(self) -> i32 {
        let Session { handle, task } = self;
        drop(handle);
        task.await.unwrap_or(crate::exit::FAILED)
    }
}

/// A turn in progress: its task and the sender that interrupts it.
struct Running {
    task: tokio::task::JoinHandle<i32>,
    stop: Option<oneshot::Sender<()>>,
}

/// The session's state, owned by its loop.
struct Core {
    settings: RunSettings,
    frontend: Frontend,
    running: Option<Running>,
    compacting: Option<compact::PendingCompaction>,
    queued: VecDeque<Input>,
    last_code: i32,
    /// Where runs ask permission questions, when the front end answers them.
    asks: Option<mpsc::UnboundedSender<PermissionAsk>>,
    /// Questions asked and not yet answered, by id.
    waiting: HashMap<String, oneshot::Sender<Answer>>,
    /// The login going on; dropped (its task ended) when cancelled or over.
    login: Option<crate::device_login::DeviceLogin>,
    /// MCP servers starting on the hub (and approvals being saved): a warning each, or none.
    mcp_starts: tokio::task::JoinSet<Option<String>>,
}

impl Core {
    fn new(
        settings: RunSettings,
        frontend: Frontend,
        asks: Option<mpsc::UnboundedSender<PermissionAsk>>,
    ) -> Core {
        Core {
            asks,
            waiting: HashMap::new(),
            login: None,
            mcp_starts: tokio::task::JoinSet::new(),
            settings,
            frontend,
            running: None,
            compacting: None,
            queued: VecDeque::new(),
            last_code: crate::exit::SUCCESS,
        }
    }

    async fn serve(
        mut self,
        mut ops: mpsc::UnboundedReceiver<Op>,
        mut questions: Option<mpsc::UnboundedReceiver<PermissionAsk>>,
    ) -> i32 {
        let mut shutting_down = false;
        let mut open = true;
        loop {
            if shutting_down && self.running.is_none() && self.compacting.is_none() {
                break;
            }
            tokio::select! {
                op = ops.recv(), if open => match op {
                    Some(Op::Shutdown) => shutting_down = true,
                    Some(op) => self.handle(op).await,
                    None => {
                        // Every handle is gone: without a shutdown asked for first, nobody is
                        // left to read what the turn does, so it stops.
                        open = false;
                        if !shutting_down {
                            shutting_down = true;
                            self.interrupt();
                        }
                    }
                },
                event = login_event(&mut self.login) => {
                    if event.as_ref().is_none_or(|e| e.is_final()) {
                        self.login = None;
                    }
                    self.report(&SessionEvent::Login(event));
                }
                Some(done) = self.mcp_starts.join_next(), if !self.mcp_starts.is_empty() => {
                    if let Ok(Some(message)) = done {
                        self.report(&SessionEvent::Warning { message });
                    }
                }
                Some(ask) = next_question(&mut questions) => {
                    self.waiting.insert(ask.question.id.clone(), ask.reply);
                    self.report(&SessionEvent::PermissionAsked(ask.question));
                }
                code = turn_end(&mut self.running) => {
                    self.running = None;
                    self.deny_waiting();
                    self.last_code = code;
                    self.report(&SessionEvent::TurnEnded { code });
                    self.start_queued();
                }
                result = compact::finished(&mut self.compacting) => {
                    if let Some(pending) = self.compacting.take() {
                        let outcome = compact::finish(pending, result, &self.settings, &self.bus());
                        self.report(&SessionEvent::CompactEnded(outcome));
                    }
                    // Requests submitted meanwhile start now, on the compacted conversation.
                    self.start_queued();
                }
            }
        }
        self.mcp_starts.shutdown().await;
        self.last_code
    }

    async fn handle(&mut self, op: Op) {
        match op {
            Op::UserTurn(input) if self.busy() => self.queued.push_back(input),
            Op::UserTurn(input) => self.start_turn(input),
            Op::Interrupt => self.interrupt(),
            Op::Compact => self.compact(),
            Op::Undo { run_id, sequence } => self.undo(run_id, sequence).await,
            Op::Login(target) => {
                // Dropping a login going on ends it.
                self.login = None;
                let event = match login::start(&target) {
                    Ok((service, login)) => {
                        self.login = Some(login);
                        SessionEvent::LoginStarted { service }
                    }
                    Err(reason) => SessionEvent::LoginRefused { reason },
                };
                self.report(&event);
            }
            Op::CancelLogin => self.login = None,
            Op::StartMcp(servers) => self.start_mcp(servers),
            Op::ApproveMcp(entry) => self.approve_mcp(entry),
            Op::AnswerPermission { id, answer } => {
                if let Some(reply) = self.waiting.remove(&id) {
                    // The run may have ended meanwhile; then nobody waits for the answer.
                    let _ = reply.send(answer);
                }
            }
            Op::SetModel(provider) => self.settings.provider = provider,
            Op::SetTier(tier) => self.settings.tier = tier,
            Op::SetPermissionMode(mode) => {
                self.settings.policy = self.settings.policy.with_mode(mode);
            }
            Op::Shutdown => {}
        }
    }

    /// Start `servers` on the session's hub in a task of its own: the session never waits on a
    /// server. A start not yet begun at shutdown starts nothing; one begun has handed its
    /// servers to the hub, whose shutdown ends them.
    fn start_mcp(&mut self, servers: Vec<crate::mcp::ServerEntry>) {
        if let Some(hub) = self.settings.mcp.hub.clone() {
            self.mcp_starts.spawn(async move {
                hub.start(servers).await;
                None
            });
        }
    }

    /// The approval is written on the blocking pool while the server starts. A write that
    /// fails is a warning; the server still starts for this session, as the person asked.
    fn approve_mcp(&mut self, entry: crate::mcp::ServerEntry) {
        let (data, cwd) = (self.settings.data_dir.clone(), self.settings.cwd.clone());
        let saved = entry.clone();
        self.mcp_starts.spawn(async move {
            let name = saved.name.clone();
            let written = crate::blocking::detached(move || {
                crate::mcp::approval::approve(&data, &cwd, &saved)
            })
            .await;
            match written {
                Some(Ok(())) => None,
                Some(Err(e)) => Some(format!(
                    "approval of MCP server `{name}` not saved ({e}); it starts for this session \
                     and is asked about again next time"
                )),
                None => Some(format!("approval of MCP server `{name}` not saved")),
            }
        });
        self.start_mcp(vec![entry]);
    }

    /// A turn or a compaction is under way: requests wait.
    fn busy(&self) -> bool {
        self.running.is_some() || self.compacting.is_some()
    }

    fn start_queued(&mut self) {
        if !self.busy()
            && let Some(next) = self.queued.pop_front()
        {
            self.start_turn(next);
        }
    }

    fn compact(&mut self) {
        let refused = if self.running.is_some() {
            Some(
                "wait for the run to end (or press Esc) before /compact: the run is still adding to the conversation",
            )
        } else if self.compacting.is_some() {
            Some("already compacting (Esc cancels)")
        } else {
            None
        };
        if let Some(reason) = refused {
            return self.report(&SessionEvent::Refused {
                reason: reason.into(),
            });
        }
        let event = match compact::start(&self.settings) {
            Ok(pending) => {
                self.compacting = Some(pending);
                SessionEvent::CompactStarted {
                    model: self.settings.provider.model.clone(),
                }
            }
            Err(compact::NotStarted::Nothing(text)) => {
                SessionEvent::CompactEnded(CompactOutcome::nothing(text))
            }
            Err(compact::NotStarted::Failed(text)) => {
                SessionEvent::CompactEnded(CompactOutcome::failed(text))
            }
        };
        self.report(&event);
    }

    async fn undo(&mut self, run_id: String, sequence: u32) {
        if self.running.is_some() {
            return self.report(&SessionEvent::Refused {
                reason: "wait for the run to end (or press Esc) before /undo".into(),
            });
        }
        let data_dir = self.settings.data_dir.clone();
        let (run, at) = (run_id.clone(), sequence);
        // Restoring files blocks: on the blocking pool, the session waiting (no turn runs).
        let restored = crate::blocking::detached(move || undo::restore(&data_dir, &run, at)).await;
        let event = match restored {
            Some(Ok(undone)) => {
                if !undone.files.is_empty() {
                    // The model's write no longer stands: it is told.
                    self.settings
                        .conversation
                        .push_note(&crate::conversation::undo_note(&undone.files));
                }
                SessionEvent::Undone(undone)
            }
            failed => SessionEvent::UndoFailed {
                run_id,
                sequence,
                error: match failed {
                    Some(Err(error)) => error,
                    _ => "the restore stopped".into(),
                },
            },
        };
        self.report(&event);
    }

    /// Never leave a run waiting on a question nobody will answer.
    fn deny_waiting(&mut self) {
        for (_, reply) in self.waiting.drain() {
            let _ = reply.send(Answer::Deny);
        }
    }

    fn interrupt(&mut self) {
        self.deny_waiting();
        if self.compacting.take().is_some() {
            self.report(&SessionEvent::CompactEnded(CompactOutcome::nothing(
                "compaction cancelled; the conversation is unchanged".into(),
            )));
        }
        for _ in self.queued.drain(..).collect::<Vec<_>>() {
            self.report(&SessionEvent::TurnDropped);
        }
        if let Some(stop) = self.running.as_mut().and_then(|r| r.stop.take()) {
            let _ = stop.send(());
        }
    }

    /// A bus for one run (or one session request), to every sink.
    fn bus(&self) -> Bus {
        let sinks = self.frontend.sinks.clone();
        match &self.asks {
            Some(asks) => Bus::with_responder(new_run_id(), sinks, asks.clone()),
            None => Bus::new(new_run_id(), sinks),
        }
    }

    fn start_turn(&mut self, input: Input) {
        let (stop, stopped) = oneshot::channel();
        let future = (self.frontend.turn)(self.settings.clone(), self.bus(), input, stopped);
        // Its own task: whatever the run blocks on, the session keeps taking operations.
        self.running = Some(Running {
            task: tokio::spawn(future),
            stop: Some(stop),
        });
    }

    fn report(&self, event: &SessionEvent) {
        for sink in &self.frontend.sinks {
            sink.session(event);
        }
    }
}

/// The login's next event, or never while none goes on.
async fn login_event(
    login: &mut Option<crate::device_login::DeviceLogin>,
) -> Option<crate::device_login::DeviceLoginEvent> {
    match login {
        Some(login) => login.next().await,
        None => std::future::pending().await,
    }
}

/// The next question a run asks, or never when the front end answers none.
async fn next_question(
    questions: &mut Option<mpsc::UnboundedReceiver<PermissionAsk>>,
) -> Option<PermissionAsk> {
    match questions {
        Some(questions) => questions.recv().await,
        None => std::future::pending().await,
    }
}

/// The turn's exit code when its task ends (a turn that panicked failed), or never without one.
async fn turn_end(running: &mut Option<Running>) -> i32 {
    match running {
        Some(running) => (&mut running.task).await.unwrap_or(crate::exit::FAILED),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
