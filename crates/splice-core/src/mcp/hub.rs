//! The hub: every configured server of a session or run, started in parallel, with its state,
//! its tools and its last error; tool calls go through it, and it ends (and reaps) every server.
//!
//! A failing server is local: it is marked failed, a [`HubNotice`] names it, and the other
//! servers and the run go on.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    Request, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::Value;
use thiserror::Error;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinHandle;

use super::client::Client;
use super::config::{ServerEntry, Source};
use super::connect;
use super::secrets::{self, scrub};
use super::supervise;
use super::tool::McpTool;
use crate::protocol::input::Image;
use crate::sanitize::redact::Redactor;
use crate::sanitize::redact::is_secret_name;
use crate::sanitize::terminal::strip_controls;

/// Overrides [`DEFAULT_STARTUP_TIMEOUT`], in milliseconds.
pub const STARTUP_TIMEOUT_ENV: &str = "SPLICE_MCP_STARTUP_TIMEOUT_MS";
/// Overrides [`DEFAULT_CALL_TIMEOUT`], in milliseconds.
pub const CALL_TIMEOUT_ENV: &str = "SPLICE_MCP_TOOL_TIMEOUT_MS";

/// How long `initialize` and the first `tools/list` may take, unless `SPLICE_MCP_STARTUP_TIMEOUT_MS` says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one `tools/call` may take, unless `SPLICE_MCP_TOOL_TIMEOUT_MS` says.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
pub struct HubOptions {
    /// Where stdio servers start: the working root.
    pub cwd: PathBuf,
    /// The environment a stdio server's inherited variables are taken from (Splice's own, less
    /// every name that says secret): PATH, HOME, the locale, the default proxy and CA set and
    /// the server's `envPassthrough` (see [`super::stdio::inherited`]); nothing else of it reaches a
    /// server.
    pub base_env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub startup_timeout: Duration,
    pub call_timeout: Duration,
}

#[derive(Debug, Error, PartialEq, Eq)]
#[error("{name} must be a whole number of milliseconds greater than 0, not `{value}`")]
pub struct TimeoutEnvError {
    pub name: &'static str,
    pub value: String,
}

impl HubOptions {
    /// Options for servers started in `cwd`, from Splice's own environment: the variables a
    /// server may inherit (no secret-named one is kept), and the two timeout variables.
    pub fn from_env(cwd: PathBuf) -> Result<HubOptions, TimeoutEnvError> {
        HubOptions::from_vars(cwd, std::env::vars_os().collect())
    }

    /// [`HubOptions::from_env`] with the environment given.
    pub fn from_vars(
        cwd: PathBuf,
        vars: Vec<(OsString, OsString)>,
    ) -> Result<HubOptions, TimeoutEnvError> {
        let millis = |name: &'static str, default: Duration| {
            let Some((_, value)) = vars.iter().find(|(k, _)| k == name) else {
                return Ok(default);
            };
            let text = value.to_string_lossy();
            match text.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
                _ => Err(TimeoutEnvError {
                    name,
                    value: strip_controls(&text).into_owned(),
                }),
            }
        };
        Ok(HubOptions {
            startup_timeout: millis(STARTUP_TIMEOUT_ENV, DEFAULT_STARTUP_TIMEOUT)?,
            call_timeout: millis(CALL_TIMEOUT_ENV, DEFAULT_CALL_TIMEOUT)?,
            base_env: vars
                .into_iter()
                .filter(|(k, _)| k.to_str().is_some_and(|k| !is_secret_name(k)))
                .collect(),
            cwd,
        })
    }
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

/// Something that happened to a server outside any one call, for the run to report. A server
/// that fails while [`McpHub::start`] runs sends one too (subscribe first to see it; its
/// status says the same).
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

pub(super) struct Inner {
    options: HubOptions,
    /// In the order they were started or recorded.
    servers: Mutex<Vec<Server>>,
    pub(super) notices: broadcast::Sender<HubNotice>,
    /// Bumped on every change of a server's state.
    changed: watch::Sender<u64>,
    /// One supervisor per started server: a sender to tell it to end, and its task.
    supervisors: Mutex<Vec<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

pub(super) struct Server {
    name: String,
    /// Scrubs the secrets of its config from what it says (results, errors, progress).
    pub(super) redactor: Arc<Redactor>,
    source: Source,
    target: String,
    pub(super) state: ServerState,
    pub(super) tools: Vec<Arc<McpTool>>,
    pub(super) last_error: Option<String>,
    /// While ready: how to reach it.
    pub(super) link: Option<Link>,
}

#[derive(Clone)]
pub(super) struct Link {
    pub(super) peer: Peer<RoleClient>,
    pub(super) client: Client,
}

impl Inner {
    fn servers(&self) -> MutexGuard<'_, Vec<Server>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(super) fn update(&self, name: &str, change: impl FnOnce(&mut Server)) {
        if let Some(server) = self.servers().iter_mut().find(|s| s.name == name) {
            change(server);
        }
        self.bump();
    }

    /// The server is gone: failed, its tools withdrawn, and a notice naming it.
    pub(super) fn fail(&self, name: &str, message: String) {
        let message = match self.servers().iter().find(|s| s.name == name) {
            Some(server) => scrub(&server.redactor, message),
            None => message,
        };
        let message = cap_message(message);
        tracing::warn!(server = name, reason = message, "mcp server failed");
        self.update(name, |s| {
            s.state = ServerState::Failed;
            s.tools.clear();
            s.link = None;
            s.last_error = Some(message.clone());
        });
        let _ = self.notices.send(HubNotice::ServerFailed {
            server: name.to_string(),
            message,
        });
    }
}

impl McpHub {
    /// A hub with no servers yet.
    pub fn new(options: HubOptions) -> McpHub {
        McpHub {
            inner: Arc::new(Inner {
                options,
                servers: Mutex::new(Vec::new()),
                notices: broadcast::channel(64).0,
                changed: watch::channel(0).0,
                supervisors: Mutex::new(Vec::new()),
            }),
        }
    }

    pub fn options(&self) -> &HubOptions {
        &self.inner.options
    }

    /// Start these servers in parallel and return when each is ready or has failed (bounded by
    /// the startup timeout). Project servers must have been approved by the caller. A name
    /// already started (and not failed) is left as it is.
    pub async fn start(&self, servers: Vec<ServerEntry>) {
        for ready in self.launch(servers) {
            let _ = ready.await;
        }
    }

    /// As [`start`](Self::start), without waiting: the servers are `starting` when this
    /// returns (so a turn's [`ready`](Self::ready) waits for them); each receiver ends when its
    /// server is ready or has failed.
    pub fn launch(&self, servers: Vec<ServerEntry>) -> Vec<oneshot::Receiver<()>> {
        let mut started = Vec::new();
        for entry in servers {
            {
                let mut list = self.inner.servers();
                let status = Server {
                    name: entry.name.clone(),
                    redactor: Arc::new(secrets::redactor(&entry.config)),
                    source: entry.source,
                    target: connect::target(&entry.config),
                    state: ServerState::Starting,
                    tools: Vec::new(),
                    last_error: None,
                    link: None,
                };
                match list.iter_mut().find(|s| s.name == entry.name) {
                    Some(s) if matches!(s.state, ServerState::Starting | ServerState::Ready) => {
                        continue;
                    }
                    Some(s) => *s = status,
                    None => list.push(status),
                }
            }
            // An approved project server runs unsandboxed: from now on the model cannot change
            // the files it runs (its next start, a restart, the next session would run them).
            crate::permissions::pinned::protect(&entry.pins);
            tracing::info!(server = entry.name, "mcp server starting");
            let (ready_tx, ready_rx) = oneshot::channel();
            let (end_tx, end_rx) = oneshot::channel();
            let task = tokio::spawn(supervise::supervise(
                Arc::downgrade(&self.inner),
                self.inner.options.clone(),
                entry,
                ready_tx,
                end_rx,
            ));
            self.lock_supervisors().push((end_tx, task));
            started.push(ready_rx);
        }
        self.inner.bump();
        started
    }

    fn lock_supervisors(&self) -> MutexGuard<'_, Vec<(oneshot::Sender<()>, JoinHandle<()>)>> {
        self.inner
            .supervisors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Record project servers that are not approved (shown, never started).
    pub fn record_unapproved(&self, servers: Vec<ServerEntry>) {
        {
            let mut list = self.inner.servers();
            for entry in servers {
                if list.iter().any(|s| s.name == entry.name) {
                    continue;
                }
                list.push(Server {
                    redactor: Arc::new(secrets::redactor(&entry.config)),
                    name: entry.name,
                    source: entry.source,
                    target: connect::target(&entry.config),
                    state: ServerState::Unapproved,
                    tools: Vec::new(),
                    last_error: None,
                    link: None,
                });
            }
        }
        self.inner.bump();
    }

    /// Wait until no server is still starting.
    pub async fn ready(&self) {
        let mut changed = self.inner.changed.subscribe();
        loop {
            let starting = self
                .inner
                .servers()
                .iter()
                .any(|s| s.state == ServerState::Starting);
            if !starting || changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// Notices from now on (failures, tool list changes).
    pub fn subscribe(&self) -> broadcast::Receiver<HubNotice> {
        self.inner.notices.subscribe()
    }

    /// The tools of every ready server, in server then tool order.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.inner
            .servers()
            .iter()
            .filter(|s| s.state == ServerState::Ready)
            .flat_map(|s| s.tools.iter().cloned())
            .collect()
    }

    /// The tool with this wire name, if a ready server has it.
    pub fn tool(&self, wire: &str) -> Option<Arc<McpTool>> {
        self.tools().into_iter().find(|t| t.wire == wire)
    }

    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.inner
            .servers()
            .iter()
            .map(|s| ServerStatus {
                name: s.name.clone(),
                source: s.source,
                target: s.target.clone(),
                state: s.state,
                tools: s.tools.iter().map(|t| t.wire.clone()).collect(),
                last_error: s.last_error.clone(),
            })
            .collect()
    }

    /// `tools/call`, bounded by the call timeout; `on_progress` gets the server's progress
    /// notifications. Dropping the future (the run interrupted) sends the server
    /// `notifications/cancelled`. A JSON-RPC error from the server (an unknown tool, bad
    /// arguments) is a result with `is_error`, since the server itself is fine.
    pub async fn call(
        &self,
        tool: &McpTool,
        args: Value,
        on_progress: Box<dyn Fn(Progress) + Send + Sync>,
    ) -> Result<McpOutput, CallError> {
        let server = tool.server.clone();
        let link = {
            let list = self.inner.servers();
            let found = list.iter().find(|s| s.name == server);
            match found {
                Some(s) if s.state == ServerState::Ready => {
                    if !s.tools.iter().any(|t| t.name == tool.name) {
                        return Err(CallError::Unavailable {
                            server,
                            reason: format!("it has no tool `{}` now", tool.name),
                        });
                    }
                    s.link.clone().map(|link| (link, s.redactor.clone()))
                }
                Some(s) => {
                    return Err(CallError::Unavailable {
                        reason: s
                            .last_error
                            .clone()
                            .unwrap_or_else(|| format!("it is {}", s.state.as_str())),
                        server,
                    });
                }
                None => None,
            }
        };
        let Some((link, redactor)) = link else {
            return Err(CallError::Unavailable {
                server,
                reason: "it is not configured in this session".into(),
            });
        };
        let progress_redactor = redactor.clone();
        let gate = Mutex::new(ProgressGate::default());
        let on_progress = move |progress: Progress| {
            let progress = Progress {
                detail: progress.detail.map(|d| scrub(&progress_redactor, d)),
                ..progress
            };
            let admitted = gate.lock().map(|mut g| g.admit(&progress)).unwrap_or(false);
            if admitted {
                on_progress(progress);
            }
        };
        let answer = self.send_call(&server, tool, args, link, on_progress).await;
        // What the server said may quote its own configured secrets.
        match answer {
            Ok(output) => Ok(McpOutput {
                text: scrub(&redactor, output.text),
                ..output
            }),
            Err(CallError::Failed { server, reason }) => Err(CallError::Failed {
                server,
                reason: cap_message(scrub(&redactor, reason)),
            }),
            Err(other) => Err(other),
        }
    }

    /// The `tools/call` itself, on a ready server's link.
    async fn send_call(
        &self,
        server: &str,
        tool: &McpTool,
        args: Value,
        link: Link,
        on_progress: impl Fn(Progress) + Send + Sync + 'static,
    ) -> Result<McpOutput, CallError> {
        let server = server.to_string();
        let arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Ok(McpOutput {
                    text: format!("the arguments must be a JSON object, not {other}"),
                    images: Vec::new(),
                    is_error: true,
                });
            }
        };
        let mut params = CallToolRequestParams::new(tool.name.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let timeout = self.inner.options.call_timeout;
        let handle = match link
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
        {
            Ok(handle) => handle,
            Err(e) => return Err(self.broken(&server, e).await),
        };
        let _route = link
            .client
            .route(handle.progress_token.clone(), Arc::new(on_progress));
        let mut abandoned = CancelOnDrop {
            peer: link.peer.clone(),
            id: Some(handle.id.clone()),
        };
        let answer = handle.await_response().await;
        // Answered, timed out (rmcp sent the cancel) or broken: nothing more to cancel.
        abandoned.id = None;
        // rmcp handles notifications on tasks of their own: let one the server sent just before
        // its answer reach the route before it closes.
        tokio::task::yield_now().await;
        match answer {
            Ok(ServerResult::CallToolResult(result)) => Ok(super::content::output(result)),
            Ok(ServerResult::EmptyResult(_)) => Ok(McpOutput {
                text: String::new(),
                images: Vec::new(),
                is_error: false,
            }),
            Ok(_) => Err(CallError::Failed {
                server,
                reason: "it answered tools/call with something other than a tool result".into(),
            }),
            Err(ServiceError::Timeout { .. }) => Err(CallError::Timeout {
                server,
                seconds: timeout.as_secs_f64().ceil() as u64,
            }),
            Err(ServiceError::McpError(error)) => Ok(McpOutput {
                text: format!(
                    "the server refused the call (error {}): {}",
                    error.code.0,
                    strip_controls(&error.message)
                ),
                images: Vec::new(),
                is_error: true,
            }),
            Err(e) => Err(self.broken(&server, e).await),
        }
    }

    /// The call broke because the connection did: wait a moment for the supervisor to say
    /// why (the exit status, stderr), so the error names the cause.
    async fn broken(&self, server: &str, error: ServiceError) -> CallError {
        let mut changed = self.inner.changed.subscribe();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            let (failed, target) = {
                let list = self.inner.servers();
                let found = list.iter().find(|s| s.name == server);
                (
                    found
                        .filter(|s| s.state == ServerState::Failed)
                        .and_then(|s| s.last_error.clone()),
                    found.map(|s| s.target.clone()).unwrap_or_default(),
                )
            };
            if let Some(reason) = failed {
                return CallError::Failed {
                    server: server.to_string(),
                    reason,
                };
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => continue,
                _ => {
                    // An HTTP error may quote the URL: shown as the target instead.
                    let message = strip_controls(&error.to_string()).into_owned();
                    let reason = if target.starts_with("http") {
                        connect::http_error(&message, &target)
                    } else {
                        message
                    };
                    return CallError::Failed {
                        server: server.to_string(),
                        reason,
                    };
                }
            }
        }
    }

    /// End every server: close, SIGTERM then SIGKILL its process group, reap. Idempotent.
    pub async fn shutdown(&self) {
        let supervisors: Vec<_> = self.lock_supervisors().drain(..).collect();
        tracing::debug!(servers = supervisors.len(), "mcp servers shutting down");
        let mut tasks = Vec::with_capacity(supervisors.len());
        for (end, task) in supervisors {
            let _ = end.send(());
            tasks.push(task);
        }
        for task in tasks {
            let _ = task.await;
        }
        {
            let mut list = self.inner.servers();
            for s in list.iter_mut() {
                s.link = None;
                s.tools.clear();
                if matches!(s.state, ServerState::Ready | ServerState::Starting) {
                    s.state = ServerState::Failed;
                    s.last_error = Some("shut down".into());
                }
            }
        }
        self.inner.bump();
    }
}

/// Most characters of a server's failure or last error: it may quote what the server said.
pub const MAX_MESSAGE_CHARS: usize = 2000;

/// `message` cut at [`MAX_MESSAGE_CHARS`], ending in `…` when cut.
pub(super) fn cap_message(message: String) -> String {
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &message[..cut]),
        None => message,
    }
}

/// Most progress reports one call passes on.
pub const MAX_PROGRESS_REPORTS: usize = 1000;

/// A call's progress reports as passed on: only those that change what is shown (the whole
/// percent, or the message), and at most [`MAX_PROGRESS_REPORTS`], so a server writing them as
/// fast as it can does not flood the event stream.
#[derive(Default)]
struct ProgressGate {
    passed: usize,
    last: Option<(Option<i64>, Option<String>)>,
}

impl ProgressGate {
    fn admit(&mut self, progress: &Progress) -> bool {
        let shown = (
            progress.fraction.map(|f| (f * 100.0).floor() as i64),
            progress.detail.clone(),
        );
        if self.passed >= MAX_PROGRESS_REPORTS || self.last.as_ref() == Some(&shown) {
            return false;
        }
        self.passed += 1;
        self.last = Some(shown);
        true
    }
}

/// Sends `notifications/cancelled` for a call whose future was dropped before its answer.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("the call was interrupted".into()),
            ));
            let _ = peer.send_notification(notification.into()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launched server is `starting` before `launch` returns, so a turn submitted right
    /// after waits for its tools (a start that ran later let the first request go without
    /// them). A server that never answers still ends with the hub.
    #[tokio::test]
    async fn launched_servers_are_starting_before_launch_returns() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let mut options =
            HubOptions::from_vars(dir.path().to_path_buf(), Vec::new()).expect("from vars");
        options.startup_timeout = Duration::from_secs(30);
        let hub = McpHub::new(options);
        let entry = ServerEntry {
            name: "silent".into(),
            config: crate::mcp::ServerConfig::Stdio {
                command: "sleep".into(),
                args: vec!["30".into()],
                env: Default::default(),
                env_passthrough: Vec::new(),
            },
            source: crate::mcp::Source::User,
            pins: Vec::new(),
        };
        let pending = hub.launch(vec![entry]);
        assert_eq!(pending.len(), 1);
        let states: Vec<ServerState> = hub.statuses().into_iter().map(|s| s.state).collect();
        assert_eq!(states, [ServerState::Starting]);
        hub.shutdown().await;
    }

    #[test]
    fn messages_are_capped_on_a_char_boundary() {
        assert_eq!(cap_message("short".into()), "short");
        let long = "é".repeat(MAX_MESSAGE_CHARS + 5);
        let capped = cap_message(long);
        assert_eq!(capped.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(capped.ends_with('…'));
    }

    #[test]
    fn progress_passes_on_changes_only_and_at_most_the_cap() {
        let report = |fraction: f64, detail: &str| Progress {
            fraction: Some(fraction),
            detail: Some(detail.to_string()),
        };
        let mut gate = ProgressGate::default();
        assert!(gate.admit(&report(0.101, "a")));
        assert!(
            !gate.admit(&report(0.105, "a")),
            "the same percent and message"
        );
        assert!(gate.admit(&report(0.11, "a")));
        assert!(gate.admit(&report(0.11, "b")));
        let mut passed = 3;
        for i in 0..5000 {
            if gate.admit(&report(0.5, &i.to_string())) {
                passed += 1;
            }
        }
        assert_eq!(passed, MAX_PROGRESS_REPORTS);
    }
}
