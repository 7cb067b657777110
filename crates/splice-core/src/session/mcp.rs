//! The session's MCP servers. A session that lives across turns (the TUI) owns one hub for all
//! of them: it builds it, starts and records servers on it by operation, and ends it when the
//! session ends. A one-turn session (headless) leaves the servers to its turn, which starts the
//! configured ones and reports them in its own events. Either way no front end builds a hub or
//! changes one; a front end reads the servers' state through an [`McpView`].

use std::path::Path;

use tokio::sync::broadcast;

use crate::mcp::{HubNotice, HubOptions, McpHub, ServerStatus};

pub use crate::mcp::hub::TimeoutEnvError;

/// Where a session's MCP servers run.
#[derive(Debug, Clone)]
pub enum McpScope {
    /// Each turn starts the configured servers and ends them; its events report them.
    PerTurn,
    /// One hub for the whole session, with these options: servers start by
    /// [`super::Op::StartMcp`] and end when the session ends.
    Session(HubOptions),
}

impl McpScope {
    /// One hub for the session, its servers started in `cwd`, with the timeouts of Splice's
    /// environment (`SPLICE_MCP_*_TIMEOUT_MS`); a value that is no timeout is refused.
    pub fn session_from_env(cwd: &Path) -> Result<McpScope, TimeoutEnvError> {
        HubOptions::from_env(cwd.to_path_buf()).map(McpScope::Session)
    }

    /// The session's hub, for [`McpScope::Session`].
    pub(super) fn hub(self) -> Option<McpHub> {
        match self {
            McpScope::PerTurn => None,
            McpScope::Session(options) => Some(McpHub::new(options)),
        }
    }
}

/// What a front end may know of the session's servers: their state and their notices; it
/// cannot start, record or end one.
#[derive(Clone)]
pub struct McpView(McpHub);

impl McpView {
    pub(super) fn new(hub: McpHub) -> McpView {
        McpView(hub)
    }

    /// Every server the session started or recorded, in that order, as it is now.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.0.statuses()
    }

    /// The hub's notices from now on (a server failed, its tools changed).
    pub fn subscribe(&self) -> broadcast::Receiver<HubNotice> {
        self.0.subscribe()
    }
}
