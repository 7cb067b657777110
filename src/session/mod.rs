//! A session: one conversation, driven by a closed set of operations ([`Op`]) and reporting
//! everything on the bus. Front ends (the TUI, headless mode) submit operations and read
//! events; they never drive the provider, checkpoints or compaction themselves.
//!
//! The session's loop is a task of its own: a turn runs in a task of its own too, so an
//! operation (an interrupt, a permission answer) is taken while a turn blocks. Operations are
//! handled in the order submitted: a request sent after `/model` runs on the new model.

mod turn;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::bus::{Bus, PermissionAsk, Sink};
use crate::ids::new_run_id;
use crate::protocol::input::Prompt;
use crate::run::RunFailure;
use crate::settings::{RunSettings, Tier};

pub use turn::{RunFuture, RunTurn, execute_turn};

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
/// stream-json and text writers ignore these: their output is the runs' events alone).
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A turn ended, after all its events, with its exit code.
    TurnEnded { code: i32 },
    /// A request queued behind a turn was dropped by an interrupt, never started.
    TurnDropped,
}

/// How a front end attaches to a session.
pub struct Frontend {
    /// Every run's events, and the session's own.
    pub sinks: Vec<Arc<dyn Sink>>,
    /// Who answers permission prompts; without one they are denied (headless).
    pub responder: Option<mpsc::UnboundedSender<PermissionAsk>>,
    /// What a turn runs: [`execute_turn`] but in tests.
    pub turn: RunTurn,
}

impl Frontend {
    /// Sinks alone, real runs, prompts denied: headless mode.
    pub fn headless(sinks: Vec<Arc<dyn Sink>>) -> Frontend {
        Frontend {
            sinks,
            responder: None,
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
        let core = Core::new(settings, frontend);
        Session {
            handle: Handle { ops },
            task: tokio::spawn(core.serve(receiver)),
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
    queued: VecDeque<Input>,
    last_code: i32,
}

impl Core {
    fn new(settings: RunSettings, frontend: Frontend) -> Core {
        Core {
            settings,
            frontend,
            running: None,
            queued: VecDeque::new(),
            last_code: crate::exit::SUCCESS,
        }
    }

    async fn serve(mut self, mut ops: mpsc::UnboundedReceiver<Op>) -> i32 {
        let mut shutting_down = false;
        let mut open = true;
        loop {
            if shutting_down && self.running.is_none() {
                break;
            }
            tokio::select! {
                op = ops.recv(), if open => match op {
                    Some(Op::Shutdown) => shutting_down = true,
                    Some(op) => self.handle(op),
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
                code = turn_end(&mut self.running) => {
                    self.running = None;
                    self.last_code = code;
                    self.report(&SessionEvent::TurnEnded { code });
                    if let Some(next) = self.queued.pop_front() {
                        self.start_turn(next);
                    }
                }
            }
        }
        self.last_code
    }

    fn handle(&mut self, op: Op) {
        match op {
            Op::UserTurn(input) if self.running.is_some() => self.queued.push_back(input),
            Op::UserTurn(input) => self.start_turn(input),
            Op::Interrupt => self.interrupt(),
            Op::SetModel(provider) => self.settings.provider = provider,
            Op::SetTier(tier) => self.settings.tier = tier,
            Op::SetPermissionMode(mode) => {
                self.settings.policy = self.settings.policy.with_mode(mode);
            }
            Op::Shutdown => {}
        }
    }

    fn interrupt(&mut self) {
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
        match &self.frontend.responder {
            Some(responder) => Bus::with_responder(new_run_id(), sinks, responder.clone()),
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

/// The turn's exit code when its task ends (a turn that panicked failed), or never without one.
async fn turn_end(running: &mut Option<Running>) -> i32 {
    match running {
        Some(running) => (&mut running.task).await.unwrap_or(crate::exit::FAILED),
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests;
