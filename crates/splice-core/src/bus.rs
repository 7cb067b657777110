//! The event bus: every event of a run goes to every sink, and permission questions go to the
//! one responder a front end installs (the TUI); without one, headless runs answer "denied".

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use crate::protocol::Event;
use crate::protocol::events::{Risk, SideEffect};

/// Something that consumes events: the stream-json writer, the text printer, the TUI.
pub trait Sink: Send + Sync {
    fn emit(&self, run_id: &str, event: &Event);

    /// An event of design-plan task `task` (None: of the run itself). Sinks that show tasks
    /// apart override this; the others see the event as the run's.
    fn emit_in(&self, run_id: &str, task: Option<&str>, event: &Event) {
        let _ = task;
        self.emit(run_id, event);
    }

    /// An event of subagent `agent` (started by the `agent` tool). Sinks that fold a
    /// subagent's events under its call override this; the others see it as the run's.
    fn emit_agent(&self, run_id: &str, task: Option<&str>, agent: &AgentScope, event: &Event) {
        let _ = agent;
        self.emit_in(run_id, task, event);
    }

    /// What an allowed write of call `id` changed, for a front end that shows it (the TUI's
    /// transcript shows a submission's diff). Not an event of the protocol: other sinks ignore
    /// it.
    fn changes(&self, _run_id: &str, _id: &str, _changes: &[Preview]) {}
}

/// The subagent whose events a bus handle emits: `agentId` and `parentToolCallId` on its
/// events, and the definition it runs (`name`), for front ends that show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentScope {
    pub id: String,
    pub parent_call: String,
    pub name: String,
}

/// What a permission prompt shows besides the tool name.
#[derive(Debug, Clone, PartialEq)]
pub enum Preview {
    Command(String),
    /// A write: path, contents before (None when the file is new), contents after (None: delete).
    Write {
        path: String,
        before: Option<String>,
        after: Option<String>,
    },
    /// A call of a tool that is not a shell command: its name (on its MCP server, if it has
    /// one) and its input as text.
    Call {
        tool: String,
        server: Option<String>,
        input: String,
    },
    /// Something to know before answering: what the call sends away, what it costs.
    Note(String),
    None,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PermissionQuestion {
    /// The session's own name for this question, minted when it asks it and never used for
    /// another: the one thing an answer names (`id` is the tool call's, which the model
    /// chooses and may use again in a later run). Empty until the session asks it.
    pub token: String,
    pub id: String,
    pub tool: String,
    pub side_effect: SideEffect,
    pub risk: Option<Risk>,
    pub reason: String,
    /// The rule `a` (allow always) adds, e.g. `write_file` or `run_command(cargo test)`.
    pub rule: String,
    pub previews: Vec<Preview>,
    /// What "allow always" does, as the prompt says it.
    pub always: AlwaysScope,
}

/// How long "allow always" holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlwaysScope {
    /// The rest of the session (a tool's rule).
    Session,
    /// Later sessions too: the asker keeps the approval (a project's command file, an agent).
    Kept,
    /// The rest of the session; or, "always, saved", this written to the user's config file
    /// too (a blocked host).
    SessionOrSaved(ConfigSave),
}

impl AlwaysScope {
    /// What "always, saved" writes, where it is offered.
    pub fn save(&self) -> Option<&ConfigSave> {
        match self {
            AlwaysScope::SessionOrSaved(save) => Some(save),
            AlwaysScope::Session | AlwaysScope::Kept => None,
        }
    }
}

/// A setting an answer adds to the user's config file (see `config::save`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSave {
    /// A host for `sandbox.network.allowedDomains`.
    AllowedDomain(String),
}

/// The decision reason of a call the person denied in the TUI's prompt (in
/// `permission_decision` events; the transcript says it in words of its own).
pub const DENIED_IN_TUI: &str = "denied in TUI";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    AllowOnce,
    /// Allow now and add the question's rule for the rest of the session.
    AllowAlways,
    /// As `AllowAlways`, and write the question's `always.save()` to the user's config file. Only a
    /// front end sends it: the session saves and hands the asker `AllowAlways`.
    AllowAndSave,
    Deny,
    /// Deny now and add the question's rule as a deny rule for the rest of the session (an
    /// editor's "reject always").
    DenyAlways,
}

/// Text files as the front end's editor holds them (an ACP client's `fs/read_text_file` and
/// `fs/write_text_file`): unsaved buffers are read, writes land in the editor. Paths are
/// absolute and already checked beneath the run's root; checkpoints are still taken first.
pub trait ClientFiles: Send + Sync {
    /// Whether reads go through the editor.
    fn reads(&self) -> bool;
    /// Whether writes go through the editor.
    fn writes(&self) -> bool;
    /// The whole text of `path`, or why not.
    fn read(&self, path: PathBuf) -> FilesFuture<String>;
    /// Replace the text of `path` (created when new).
    fn write(&self, path: PathBuf, text: String) -> FilesFuture<()>;
}

/// What a [`ClientFiles`] call comes to: its result, or the client's error as text.
pub type FilesFuture<T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send>>;

#[derive(Debug)]
pub struct PermissionAsk {
    pub question: PermissionQuestion,
    pub reply: oneshot::Sender<Answer>,
}

struct Inner {
    run_id: String,
    sinks: Vec<Arc<dyn Sink>>,
    responder: Option<mpsc::UnboundedSender<PermissionAsk>>,
    /// Tool calls announced without a result yet (and the subagent that made each), so an
    /// interrupt can close them.
    open_calls: std::sync::Mutex<Vec<(String, Option<Arc<AgentScope>>)>>,
    /// Every tool call id of the run, so each is used once.
    call_ids: std::sync::Mutex<CallIds>,
    log: crate::logging::events::EventLog,
    /// The editor's files, when the front end has them (ACP).
    files: Option<Arc<dyn ClientFiles>>,
}

/// Tool call ids handed out in a run. Providers may omit ids or repeat them (some compatible
/// servers number calls per response), but events pair calls with results by id.
#[derive(Default)]
struct CallIds {
    used: std::collections::HashSet<String>,
    minted: u64,
}

impl CallIds {
    fn claim(&mut self, proposed: &str) -> String {
        // Kept as sent when fresh and plain, since providers check the id sent back.
        let plain = !proposed.is_empty()
            && proposed.len() <= 64
            && proposed
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        let mut id = proposed.to_string();
        while !plain && id == proposed || self.used.contains(&id) {
            self.minted += 1;
            id = format!("call_splice_{}", self.minted);
        }
        self.used.insert(id.clone());
        id
    }
}

/// A run's handle on its listeners. Cheap to clone.
#[derive(Clone)]
pub struct Bus {
    inner: Arc<Inner>,
    /// The design-plan task whose events this handle emits (`taskId`), if any.
    task: Option<Arc<str>>,
    /// The subagent whose events this handle emits (`agentId`), if any.
    agent: Option<Arc<AgentScope>>,
    /// The hooks of the run, which every tool path on this bus fires.
    hooks: Option<Arc<crate::hooks::Hooks>>,
}

impl Bus {
    pub fn new(run_id: impl Into<String>, sinks: Vec<Arc<dyn Sink>>) -> Bus {
        Bus {
            inner: Arc::new(Inner {
                run_id: run_id.into(),
                sinks,
                responder: None,
                open_calls: Default::default(),
                call_ids: Default::default(),
                log: Default::default(),
                files: None,
            }),
            task: None,
            agent: None,
            hooks: None,
        }
    }

    pub fn with_responder(
        run_id: impl Into<String>,
        sinks: Vec<Arc<dyn Sink>>,
        responder: mpsc::UnboundedSender<PermissionAsk>,
    ) -> Bus {
        Bus {
            inner: Arc::new(Inner {
                run_id: run_id.into(),
                sinks,
                responder: Some(responder),
                open_calls: Default::default(),
                call_ids: Default::default(),
                log: Default::default(),
                files: None,
            }),
            task: None,
            agent: None,
            hooks: None,
        }
    }

    /// The editor's files, when the front end offers them.
    pub fn files(&self) -> Option<&Arc<dyn ClientFiles>> {
        self.inner.files.as_ref()
    }

    /// This new bus, its runs' file tools reading and writing through `files`. Set before the
    /// bus is shared (a run's clones see what it had then); on a shared one it changes nothing.
    pub fn with_files(mut self, files: Option<Arc<dyn ClientFiles>>) -> Bus {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.files = files;
        }
        self
    }

    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// The same run's bus for design-plan task `id`: its events carry the task's id.
    pub fn for_task(&self, id: &str) -> Bus {
        Bus {
            inner: Arc::clone(&self.inner),
            task: Some(Arc::from(id)),
            agent: None,
            hooks: self.hooks.clone(),
        }
    }

    /// The same run's bus for a subagent: its events carry the agent's id and its call's.
    pub fn for_agent(&self, scope: AgentScope) -> Bus {
        Bus {
            inner: Arc::clone(&self.inner),
            task: self.task.clone(),
            agent: Some(Arc::new(scope)),
            // A subagent's tools fire the run's hooks like the parent's.
            hooks: self.hooks.clone(),
        }
    }

    /// The subagent of this handle, if any.
    pub fn agent(&self) -> Option<&AgentScope> {
        self.agent.as_deref()
    }

    /// The same bus, its calls and stages firing `hooks`.
    pub(crate) fn with_hooks(&self, hooks: Arc<crate::hooks::Hooks>) -> Bus {
        Bus {
            hooks: Some(hooks),
            ..self.clone()
        }
    }

    /// The run's hooks, if it has any.
    pub(crate) fn hooks(&self) -> Option<&Arc<crate::hooks::Hooks>> {
        self.hooks.as_ref()
    }

    /// The design-plan task of this handle, if any.
    pub fn task_id(&self) -> Option<&str> {
        self.task.as_deref()
    }

    pub fn emit(&self, event: Event) {
        self.inner.log.record(&self.inner.run_id, &event);
        if let Ok(mut open) = self.inner.open_calls.lock() {
            match &event {
                Event::ToolCall { id, .. } => open.push((id.clone(), self.agent.clone())),
                Event::ToolResult { id, .. } => open.retain(|(o, _)| o != id),
                // Progress belongs between a call and its result: a late report (a program
                // still talking after its result) would read as a call that is still running.
                Event::ToolProgress { id, .. } if !open.iter().any(|(o, _)| o == id) => return,
                _ => {}
            }
        }
        for sink in &self.inner.sinks {
            match self.agent() {
                Some(agent) => sink.emit_agent(&self.inner.run_id, self.task_id(), agent, &event),
                None => sink.emit_in(&self.inner.run_id, self.task_id(), &event),
            }
        }
    }

    /// Hand the changes call `id` made to the sinks that show them (see [`Sink::changes`]).
    pub fn show_changes(&self, id: &str, changes: &[Preview]) {
        for sink in &self.inner.sinks {
            sink.changes(&self.inner.run_id, id, changes);
        }
    }

    /// A run-unique id for a tool call the provider named `proposed`: the same id when it is
    /// new and plain, a fresh one otherwise.
    pub fn claim_call_id(&self, proposed: &str) -> String {
        match self.inner.call_ids.lock() {
            Ok(mut ids) => ids.claim(proposed),
            Err(_) => proposed.to_string(),
        }
    }

    /// Ids of the tool calls that have a `tool_call` but no `tool_result` yet, oldest first.
    pub fn open_calls(&self) -> Vec<String> {
        self.inner
            .open_calls
            .lock()
            .map(|open| open.iter().map(|(id, _)| id.clone()).collect())
            .unwrap_or_default()
    }

    /// Give every call still open an error result saying `why`, each on the bus of whoever
    /// made it (a subagent's calls carry its id), a subagent's calls before the call that
    /// started it. On a subagent's handle: that subagent's calls only (it was cut short).
    pub fn close_open_calls(&self, why: &str) {
        let mut open = self
            .inner
            .open_calls
            .lock()
            .map(|open| open.clone())
            .unwrap_or_default();
        if let Some(mine) = &self.agent {
            open.retain(|(_, agent)| agent.as_ref().is_some_and(|a| a.id == mine.id));
        }
        // Stable: the subagents' calls first, each group oldest first.
        open.sort_by_key(|(_, agent)| agent.is_none());
        for (id, agent) in open {
            let bus = Bus {
                inner: Arc::clone(&self.inner),
                task: self.task.clone(),
                agent,
                hooks: None,
            };
            bus.emit(Event::ToolResult {
                id,
                status: crate::protocol::events::ToolStatus::Error,
                output: why.to_string(),
                truncated: false,
                changed_files: None,
                display: None,
            });
        }
    }

    /// Whether someone can answer a permission prompt.
    pub fn has_responder(&self) -> bool {
        self.inner.responder.is_some()
    }

    /// Ask the responder; `None` when there is none or it went away (both mean "denied").
    pub async fn ask(&self, question: PermissionQuestion) -> Option<Answer> {
        let responder = self.inner.responder.as_ref()?;
        let (reply, answer) = oneshot::channel();
        responder.send(PermissionAsk { question, reply }).ok()?;
        answer.await.ok()
    }
}

/// A sink that keeps every event; used by tests and by the benchmark.
#[derive(Default)]
pub struct Recorder {
    events: std::sync::Mutex<Vec<Event>>,
}

impl Recorder {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl Sink for Recorder {
    fn emit(&self, _run_id: &str, event: &Event) {
        if let Ok(mut events) = self.events.lock() {
            events.push(event.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_ids_are_unique_in_a_run() {
        let bus = Bus::new("run_1", Vec::new());
        assert_eq!(bus.claim_call_id("call_abc"), "call_abc");
        let repeated = bus.claim_call_id("call_abc");
        assert_ne!(repeated, "call_abc");
        let empty = bus.claim_call_id("");
        let odd = bus.claim_call_id("call with spaces");
        let ids = ["call_abc", &repeated, &empty, &odd];
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), 4, "{ids:?}");
        assert!(ids.iter().all(|id| !id.is_empty() && !id.contains(' ')));
        // A provider id that looks minted is never minted again.
        assert_eq!(bus.claim_call_id("call_splice_4"), "call_splice_4");
        assert_eq!(bus.claim_call_id(""), "call_splice_5");
    }

    #[test]
    fn a_subagents_handle_closes_its_own_calls_only() {
        let recorder = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
        let bus = Bus::new("run_1", vec![recorder.clone() as Arc<dyn Sink>]);
        let call = |bus: &Bus, id: &str| {
            bus.emit(Event::ToolCall {
                id: id.into(),
                name: "read_file".into(),
                args: serde_json::json!({}),
                side_effect: crate::protocol::SideEffect::Read,
            })
        };
        let scope = |id: &str| AgentScope {
            id: id.into(),
            parent_call: "call_p".into(),
            name: "general".into(),
        };
        let (one, two) = (
            bus.for_agent(scope("agent_1")),
            bus.for_agent(scope("agent_2")),
        );
        assert_eq!(one.agent().map(|a| a.id.as_str()), Some("agent_1"));
        call(&bus, "call_p");
        call(&one, "call_1");
        call(&two, "call_2");
        one.close_open_calls("cut short");
        assert_eq!(bus.open_calls(), ["call_p", "call_2"]);
        bus.close_open_calls("interrupted");
        assert!(bus.open_calls().is_empty());
        let closed: Vec<String> = recorder
            .0
            .lock()
            .map(|events| {
                events
                    .iter()
                    .filter_map(|e| match e {
                        Event::ToolResult { id, output, .. } => Some(format!("{id}: {output}")),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        // The subagent's call is closed before the call that started it.
        assert_eq!(
            closed,
            [
                "call_1: cut short",
                "call_2: interrupted",
                "call_p: interrupted"
            ]
        );
    }

    struct Recorder(std::sync::Mutex<Vec<Event>>);

    impl Sink for Recorder {
        fn emit(&self, _run_id: &str, event: &Event) {
            if let Ok(mut events) = self.0.lock() {
                events.push(event.clone());
            }
        }
    }

    #[test]
    fn progress_passes_only_while_its_call_runs() {
        let recorder = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
        let bus = Bus::new("run_1", vec![recorder.clone() as Arc<dyn Sink>]);
        let progress = |id: &str| Event::tool_progress(id, Some("upload"), Some(0.5), None);
        bus.emit(progress("call_1"));
        bus.emit(Event::ToolCall {
            id: "call_1".into(),
            name: "transcribe".into(),
            args: serde_json::json!({}),
            side_effect: crate::protocol::SideEffect::Network,
        });
        bus.emit(progress("call_1"));
        bus.emit(Event::ToolResult {
            id: "call_1".into(),
            status: crate::protocol::events::ToolStatus::Ok,
            output: String::new(),
            truncated: false,
            changed_files: None,
            display: None,
        });
        bus.emit(progress("call_1"));
        let kinds: Vec<&str> = recorder
            .0
            .lock()
            .map(|events| {
                events
                    .iter()
                    .map(|e| match e {
                        Event::ToolCall { .. } => "call",
                        Event::ToolProgress { .. } => "progress",
                        Event::ToolResult { .. } => "result",
                        _ => "other",
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(kinds, ["call", "progress", "result"]);
    }
}
