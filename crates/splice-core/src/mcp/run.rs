//! A run's MCP servers: which of the configured ones start (a project's only once approved, or
//! with `--trust-project-mcp`), the warnings that say which did not and why, and the end of
//! the servers a run started itself, on every path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::approval::{self, Approvals, Selection, canonical_root};
use super::config::{self, PROJECT_FILE, ServerEntry};
use super::hub::{HubNotice, HubOptions, McpHub, ServerState};
use crate::bus::Bus;
use crate::layout::Layout;
use crate::protocol::{Event, WarningCode, WarningDetail};

/// What a run does with the configured servers.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// The user's servers and the approved (or trusted) project servers.
    pub start: Vec<ServerEntry>,
    /// Project servers nobody approved: recorded, not started.
    pub unapproved: Vec<ServerEntry>,
    /// `mcp_server_failed` and `mcp_server_unapproved` warnings, in that order.
    pub warnings: Vec<(WarningCode, String)>,
    /// The canonical root whose `.mcp.json` was read: the project servers' files were pinned
    /// there.
    pub origin: PathBuf,
}

impl Plan {
    /// `user`: the config file's servers; `root`: the working root the run was started in
    /// (never a worktree's), whose `.mcp.json` names the project's servers.
    pub fn make(user: Vec<ServerEntry>, root: &Path, layout: &Layout, trust_project: bool) -> Plan {
        let mut warnings = Vec::new();
        let project = match config::load_project(root) {
            Ok(project) => project,
            Err(error) => {
                warnings.push((
                    WarningCode::McpServerFailed,
                    format!(
                        "{}: {error}; the run goes on without the project's MCP servers",
                        root.join(PROJECT_FILE).display()
                    ),
                ));
                Vec::new()
            }
        };
        let approvals = (!trust_project).then(|| Approvals::load(layout));
        let Selection {
            start, unapproved, ..
        } = approval::select(user, project, &canonical_root(root), approvals.as_ref());
        // A server approved before whose files changed since: said apart, naming the file.
        let mut fresh = Vec::new();
        for entry in &unapproved {
            match approvals
                .as_ref()
                .and_then(|a| a.changed_file(&canonical_root(root), entry))
            {
                Some(file) => warnings.push((
                    WarningCode::McpServerUnapproved,
                    changed_warning(&entry.name, &file),
                )),
                None => fresh.push(entry),
            }
        }
        if !fresh.is_empty() {
            let names: Vec<String> = fresh.iter().map(|e| format!("`{}`", e.name)).collect();
            warnings.push((
                WarningCode::McpServerUnapproved,
                format!(
                    "the project's MCP server(s) {} in {} did not start: a repository's servers \
                     run only once approved; approve them in the terminal UI (`splice` in this \
                     directory), or pass --trust-project-mcp to start them for this run",
                    names.join(", "),
                    root.join(PROJECT_FILE).display()
                ),
            ));
        }
        Plan {
            start,
            unapproved,
            warnings,
            origin: canonical_root(root),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.unapproved.is_empty()
    }
}

/// Why an approved project server did not start this time: `file`, which its config names,
/// changed since the approval (a pull, or something the model ran in an earlier session).
pub fn changed_warning(name: &str, file: &Path) -> String {
    format!(
        "the project's MCP server `{name}` did not start: {} changed since it was approved, so \
         it would not run what was approved; look at the change, then approve the server again \
         in the terminal UI (`splice` in this directory), or pass --trust-project-mcp to start \
         it for this run",
        file.display()
    )
}

/// The servers one run uses: the session's hub (left as it is at the end), or the run's own,
/// which [`RunServers::close`] ends.
pub struct RunServers {
    hub: McpHub,
    owned: bool,
    /// Turns the hub's notices into warnings while the run goes on; told to stop (after the
    /// notices already sent) by its sender.
    watcher: Option<(
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    )>,
}

impl RunServers {
    /// The session's hub, used as it is.
    pub fn shared(hub: McpHub) -> RunServers {
        RunServers {
            hub,
            owned: false,
            watcher: None,
        }
    }

    /// End what the run started: its hub's servers (closed, their process groups ended and
    /// reaped). A session's hub is left running. Idempotent through the slot it is taken from.
    pub async fn close(self) {
        // Failures already noticed are told before the run ends; ending the servers is not one.
        if let Some((stop, watcher)) = self.watcher {
            let _ = stop.send(());
            let _ = watcher.await;
        }
        if self.owned {
            self.hub.shutdown().await;
        }
    }
}

/// The run's own hub for `plan`, in `slot` before any server starts (so an interrupt finds it
/// and ends what did start), then started: every server in parallel, each ready or failed.
/// `None` when nothing is configured: then nothing MCP happens at all.
pub async fn start_own(
    plan: Plan,
    cwd: &Path,
    bus: &Bus,
    slot: &Mutex<Option<RunServers>>,
) -> Option<McpHub> {
    for (code, message) in &plan.warnings {
        bus.emit(Event::warning(*code, message.clone()));
    }
    if plan.is_empty() {
        return None;
    }
    // Checked when the run's settings were resolved (a usage error there); kept closed here.
    let options = match HubOptions::from_env(cwd.to_path_buf()) {
        Ok(options) => options,
        Err(error) => {
            bus.emit(Event::warning(
                WarningCode::McpServerFailed,
                format!("{error}; no MCP server was started"),
            ));
            return None;
        }
    };
    let hub = McpHub::new(options);
    let reported: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let watcher = tokio::spawn(watch(
        hub.subscribe(),
        stopped,
        bus.clone(),
        reported.clone(),
    ));
    if let Ok(mut slot) = slot.lock() {
        *slot = Some(RunServers {
            hub: hub.clone(),
            owned: true,
            watcher: Some((stop, watcher)),
        });
    }
    hub.record_unapproved(plan.unapproved);
    let here = canonical_root(cwd);
    let start = plan
        .start
        .into_iter()
        .map(|entry| rebased(entry, &plan.origin, &here))
        .collect();
    hub.start(start).await;
    // A failure the notices already told is not told again.
    for status in hub.statuses() {
        if status.state == ServerState::Failed {
            report_failure(
                bus,
                &reported,
                &status.name,
                status.last_error.as_deref().unwrap_or("it did not start"),
            );
        }
    }
    Some(hub)
}

/// `entry` as it runs in `here` (a `--worktree` run's worktree) when its files were pinned in
/// `origin`: a relative path names the file beneath `here`, so that is the file that must hold
/// what was approved (and that is kept from the model), not the one in `origin`.
fn rebased(mut entry: ServerEntry, origin: &Path, here: &Path) -> ServerEntry {
    if origin == here {
        return entry;
    }
    for pin in &mut entry.pins {
        if let Ok(inside) = pin.path.strip_prefix(origin) {
            pin.path = here.join(inside);
        }
    }
    entry
}

async fn watch(
    mut notices: tokio::sync::broadcast::Receiver<HubNotice>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
    bus: Bus,
    reported: Arc<Mutex<BTreeSet<String>>>,
) {
    use tokio::sync::broadcast::error::RecvError;
    let tell = |notice: HubNotice| {
        if let HubNotice::ServerFailed { server, message } = notice {
            report_failure(&bus, &reported, &server, &message);
        }
    };
    loop {
        tokio::select! {
            biased;
            received = notices.recv() => match received {
                Ok(notice) => tell(notice),
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
            _ = &mut stopped => {
                while let Ok(notice) = notices.try_recv() {
                    tell(notice);
                }
                return;
            }
        }
    }
}

/// One `mcp_server_failed` warning per server: it does not come back within a run.
fn report_failure(bus: &Bus, reported: &Mutex<BTreeSet<String>>, server: &str, why: &str) {
    let first = reported
        .lock()
        .map(|mut r| r.insert(server.to_string()))
        .unwrap_or(true);
    if first {
        bus.emit(Event::warning_with(
            WarningCode::McpServerFailed,
            format!("MCP server `{server}` failed: {why}; the run goes on without its tools"),
            WarningDetail::McpServer {
                server: server.to_string(),
            },
        ));
    }
}

/// Take the run's servers out of `slot` and end them (a session's hub is left running).
pub async fn close(slot: &Mutex<Option<RunServers>>) {
    let servers = slot.lock().ok().and_then(|mut s| s.take());
    if let Some(servers) = servers {
        servers.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Source;
    use crate::mcp::config::ServerConfig;

    fn entry(name: &str, command: &str, source: Source) -> ServerEntry {
        ServerEntry {
            name: name.into(),
            config: ServerConfig::Stdio {
                command: command.into(),
                args: vec![],
                env: Default::default(),
                env_passthrough: Vec::new(),
            },
            source,
            pins: Vec::new(),
        }
    }

    fn project(root: &Path, json: &str) {
        std::fs::write(root.join(PROJECT_FILE), json).expect("write");
    }

    /// A project's servers start only when approved for this root and config, or trusted; the
    /// rest are named in one warning that says how to allow them.
    #[test]
    fn project_servers_start_only_approved_or_trusted() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let (root, data) = (dir.path().join("repo"), dir.path().join("data"));
        std::fs::create_dir_all(&root).expect("create root");
        project(
            &root,
            r#"{"mcpServers": {"a": {"command": "touch"}, "b": {"command": "rm"}}}"#,
        );
        let user = vec![entry("mine", "node", Source::User)];
        let plan = Plan::make(
            user.clone(),
            &root,
            &crate::layout::Layout::at(&data),
            false,
        );
        assert_eq!(plan.start, user);
        assert_eq!(plan.unapproved.len(), 2);
        assert_eq!(plan.warnings.len(), 1);
        let (code, message) = &plan.warnings[0];
        assert_eq!(*code, WarningCode::McpServerUnapproved);
        assert!(message.contains("`a`, `b`"), "{message}");
        assert!(message.contains("--trust-project-mcp"), "{message}");
        let canonical = root.canonicalize().expect("canonicalize root");
        // As read from `.mcp.json`: `touch` beneath the root pinned (absent).
        let a = config::load_project(&root)
            .expect("load")
            .into_iter()
            .find(|e| e.name == "a")
            .expect("server a");
        assert!(!a.pins.is_empty());
        Approvals::load(&crate::layout::Layout::at(&data))
            .approve(&canonical, &a)
            .expect("approve canonical");
        let plan = Plan::make(
            user.clone(),
            &root,
            &crate::layout::Layout::at(&data),
            false,
        );
        let started: Vec<&str> = plan.start.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(started, ["mine", "a"]);
        assert_eq!(plan.unapproved.len(), 1);
        let trusted = Plan::make(user, &root, &crate::layout::Layout::at(&data), true);
        assert_eq!(trusted.start.len(), 3);
        assert!(trusted.warnings.is_empty());
    }

    /// A broken `.mcp.json` is a warning naming the file; the user's servers still start.
    #[test]
    fn a_broken_project_file_is_a_warning_and_the_rest_goes_on() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        project(dir.path(), "{ not json");
        let user = vec![entry("mine", "node", Source::User)];
        let plan = Plan::make(
            user.clone(),
            dir.path(),
            &crate::layout::Layout::at(dir.path()),
            true,
        );
        assert_eq!(plan.start, user);
        assert_eq!(plan.warnings.len(), 1);
        let (code, message) = &plan.warnings[0];
        assert_eq!(*code, WarningCode::McpServerFailed);
        assert!(message.contains(".mcp.json"), "{message}");
        assert!(message.contains("not JSON"), "{message}");
    }

    /// Nothing configured: nothing to start, nothing to say.
    #[test]
    fn no_servers_no_plan() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let plan = Plan::make(
            Vec::new(),
            dir.path(),
            &crate::layout::Layout::at(dir.path()),
            false,
        );
        assert!(plan.is_empty());
        assert!(plan.warnings.is_empty());
    }

    /// A failure noticed before the run ends is told when the watcher stops, once per server,
    /// even when the watcher had not got to it yet.
    #[test]
    fn failures_sent_before_the_stop_are_told_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build");
        let recorder = Arc::new(crate::bus::Recorder::default());
        let bus = Bus::new("run_t", vec![recorder.clone()]);
        let (notices, receiver) = tokio::sync::broadcast::channel(8);
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let failed = |server: &str| HubNotice::ServerFailed {
            server: server.into(),
            message: "it exited with status 3".into(),
        };
        runtime.block_on(async {
            let watcher = tokio::spawn(watch(receiver, stopped, bus, Arc::default()));
            // Sent and stopped before the watcher first runs (one thread: it has not yet).
            let _ = notices.send(failed("a"));
            let _ = notices.send(HubNotice::ToolsChanged { server: "b".into() });
            let _ = notices.send(failed("a"));
            let _ = notices.send(failed("c"));
            let _ = stop.send(());
            watcher.await.expect("finish watcher");
        });
        let messages: Vec<String> = recorder
            .events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Warning {
                    code: WarningCode::McpServerFailed,
                    message,
                    ..
                } => Some(message),
                _ => None,
            })
            .collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("`a`") && messages[0].contains("status 3"));
        assert!(messages[1].contains("`c`"));
    }

    /// A project server with a user server's name is left out: the user's config wins.
    #[test]
    fn a_project_server_cannot_take_a_user_servers_name() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        project(
            dir.path(),
            r#"{"mcpServers": {"mine": {"command": "evil"}}}"#,
        );
        let user = vec![entry("mine", "node", Source::User)];
        let plan = Plan::make(
            user.clone(),
            dir.path(),
            &crate::layout::Layout::at(dir.path()),
            true,
        );
        assert_eq!(plan.start, user);
    }
}
