//! The hub: every configured server of a session or run, started in parallel, with its state,
//! its tools and its last error; tool calls go through it, and it ends (and reaps) every server.
//!
//! A failing server is local: it is marked failed, a [`HubNotice`] names it, and the other
//! servers and the run go on.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

use super::config::{ServerEntry, Source};
use super::tool::McpTool;
use crate::protocol::input::Image;

/// How long `initialize` and the first `tools/list` may take, unless `SPLICE_MCP_STARTUP_TIMEOUT_MS` says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one `tools/call` may take, unless `SPLICE_MCP_TOOL_TIMEOUT_MS` says.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
pub struct HubOptions {
    /// Where stdio servers start: the working root.
    pub cwd: PathBuf,
    /// The environment PATH, HOME and the locale are taken from (Splice's own); nothing else of
    /// it reaches a server.
    pub base_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Ready,
    /// Did not start, timed out, or died: `last_error` says why.
    Failed,
    /// A project server not (yet) approved: not started.
    Unapproved,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Failed => "failed",
            ServerState::Unapproved => "unapproved",
        }
    }
}

/// What `/mcp` and `splice mcp list` show of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub source: Source,
    /// The command line or URL, for a person to recognise it (header values left out).
    pub target: String,
    pub state: ServerState,
    /// Wire names of its tools (`mcp__<server>__<tool>`).
    pub tools: Vec<String>,
    pub last_error: Option<String>,
}

/// A progress notification for a call in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// `progress / total` when the server gave a total.
    pub fraction: Option<f64>,
    pub detail: Option<String>,
}

/// A call's result as Splice hands it on: text (resource links, embedded resources and
/// `structuredContent` rendered as text), images, and whether the server said `isError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpOutput {
    pub text: String,
    pub images: Vec<Image>,
    pub is_error: bool,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CallError {
    /// The server is not ready (failed, unapproved, gone) or has no such tool.
    #[error("MCP server `{server}` is unavailable: {reason}")]
    Unavailable { server: String, reason: String },
    #[error("MCP server `{server}` did not answer within {seconds} s")]
    Timeout { server: String, seconds: u64 },
    /// The server died or broke the protocol mid-call.
    #[error("MCP server `{server}` failed: {reason}")]
    Failed { server: String, reason: String },
}

/// Something that happened to a server outside any one call, for the run to report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HubNotice {
    /// It did not start, timed out, or died: a `warning` naming it.
    ServerFailed { server: String, message: String },
    /// `notifications/tools/list_changed`: its tools were listed again.
    ToolsChanged { server: String },
}

/// Shared by a session (the TUI) or a run (headless); cloning shares the same servers.
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<Inner>,
}

struct Inner {
    options: HubOptions,
}

impl McpHub {
    /// A hub with no servers yet.
    pub fn new(options: HubOptions) -> McpHub {
        McpHub {
            inner: Arc::new(Inner { options }),
        }
    }

    pub fn options(&self) -> &HubOptions {
        &self.inner.options
    }

    /// Start these servers in parallel and return when each is ready or has failed (bounded by
    /// the startup timeout). Project servers must have been approved by the caller.
    pub async fn start(&self, _servers: Vec<ServerEntry>) {}

    /// Record project servers that are not approved (shown, never started).
    pub fn record_unapproved(&self, _servers: Vec<ServerEntry>) {}

    /// Wait until no server is still starting.
    pub async fn ready(&self) {}

    /// Notices from now on (failures, tool list changes).
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<HubNotice> {
        tokio::sync::broadcast::channel(1).1
    }

    /// The tools of every ready server, in server then tool order.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        Vec::new()
    }

    /// The tool with this wire name, if a ready server has it.
    pub fn tool(&self, wire: &str) -> Option<Arc<McpTool>> {
        self.tools().into_iter().find(|t| t.wire == wire)
    }

    pub fn statuses(&self) -> Vec<ServerStatus> {
        Vec::new()
    }

    /// `tools/call`, bounded by the call timeout; `on_progress` gets the server's progress
    /// notifications. Dropping the future (the run interrupted) sends the server
    /// `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &McpTool,
        _args: Value,
        _on_progress: Box<dyn Fn(Progress) + Send + Sync>,
    ) -> Result<McpOutput, CallError> {
        Err(CallError::Unavailable {
            server: tool.server.clone(),
            reason: "not connected".into(),
        })
    }

    /// End every server: close, SIGTERM then SIGKILL its process group, reap. Idempotent.
    pub async fn shutdown(&self) {}
}
