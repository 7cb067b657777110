//! A session: one conversation, driven by a closed set of operations ([`Op`]) and reporting
//! everything on the bus. Front ends (the TUI, headless mode) submit operations and read
//! events; they never drive the provider, checkpoints or compaction themselves.
//!
//! The session's loop is a task of its own: a turn runs in a task of its own too, so an
//! operation (an interrupt, a permission answer) is taken while a turn blocks. Operations are
//! handled in the order submitted: a request sent after `/model` runs on the new model.

mod approval_questions;
mod compact;
mod core_loop;
pub mod log;
mod login;
mod mcp;
pub mod mcp_plan;
mod model;
mod ops;
mod rules;
mod slash;
mod slash_trust;
mod turn;
mod undo;

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::bus::Sink;
use crate::exit::Exit;
use crate::settings::RunSettings;

pub use crate::compaction::Compacted;
pub use approval_questions::project_hooks_to_ask;
pub use compact::{Outcome as CompactOutcome, STAGE as COMPACT_STAGE, fill_after};
pub use login::LoginTarget;
pub use mcp::{McpScope, McpView, TimeoutEnvError};
pub use model::{ModelChoice, missing_key_hint, resolve_model, resolve_model_from_env};
pub use ops::{Input, Op, SessionEvent, Withdrawal};
pub use rules::{RulesOp, RulesReport};
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

/// Where the session's own reports go besides runs' events (a turn's end, a `/compact`'s
/// outcome): a front end that shows them. Not events of the protocol: the writers take none.
pub trait ReportSink: Send + Sync {
    fn session(&self, event: &SessionEvent);
}

/// How a front end attaches to a session.
pub struct Frontend {
    /// Every run's events.
    pub sinks: Vec<Arc<dyn Sink>>,
    /// The session's own reports.
    pub reports: Vec<Arc<dyn ReportSink>>,
    /// Whether the front end answers permission prompts ([`SessionEvent::PermissionAsked`]);
    /// without it they are denied as headless.
    pub asks: bool,
    /// What a turn runs: [`execute_turn`] but in tests.
    pub turn: RunTurn,
    /// Where the session's MCP servers run.
    pub mcp: McpScope,
}

impl Frontend {
    /// Sinks alone (the session's reports go nowhere), real runs, prompts denied: headless mode.
    pub fn headless(sinks: Vec<Arc<dyn Sink>>) -> Frontend {
        Frontend {
            sinks,
            reports: Vec::new(),
            asks: false,
            turn: execute_turn(),
            mcp: McpScope::PerTurn,
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
    task: tokio::task::JoinHandle<Exit>,
    mcp: Option<McpView>,
}

impl Session {
    /// Start a session on `settings` in a task of its own. The session owns its conversation:
    /// it starts from a copy of the one in `settings` (a reopened session's, replayed), which
    /// nothing outside it shares; its changes are reported ([`SessionEvent::Memory`]). With
    /// [`McpScope::Session`] it builds the hub its turns share, and ends it when it ends.
    pub fn spawn(settings: RunSettings, frontend: Frontend) -> Session {
        Session::spawn_with_files(settings, frontend, None)
    }

    /// [`Session::spawn`], its runs' file tools reading and writing through `files` (an ACP
    /// client's editor) when given.
    pub fn spawn_with_files(
        mut settings: RunSettings,
        frontend: Frontend,
        files: Option<Arc<dyn crate::bus::ClientFiles>>,
    ) -> Session {
        settings.conversation = settings.conversation.detached();
        let hub = frontend.mcp.clone().hub();
        settings.mcp.hub = hub.clone();
        let mcp = hub.map(McpView::new);
        let (ops, receiver) = mpsc::unbounded_channel();
        let (asks, questions) = if frontend.asks {
            let (asks, questions) = mpsc::unbounded_channel();
            (Some(asks), Some(questions))
        } else {
            (None, None)
        };
        let core = core_loop::Core::new(settings, frontend, asks, files);
        Session {
            handle: Handle { ops },
            task: tokio::spawn(core.serve(receiver, questions)),
            mcp,
        }
    }

    /// The session's MCP servers, when it has a hub of its own ([`McpScope::Session`]).
    pub fn mcp(&self) -> Option<McpView> {
        self.mcp.clone()
    }

    pub fn submit(&self, op: Op) {
        self.handle.submit(op);
    }

    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Wait for the session to end (after [`Op::Shutdown`], or when every handle is gone):
    /// the exit code of its last turn, 0 without one.
    pub async fn ended(self) -> Exit {
        let Session { handle, task, .. } = self;
        drop(handle);
        task.await.unwrap_or(crate::exit::Exit::Failed)
    }
}

#[cfg(test)]
pub(crate) mod test_settings;
#[cfg(test)]
mod tests;
