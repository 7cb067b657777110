//! Hooks: commands the person configured (in Claude Code's shape, so hooks written for it run
//! unchanged) that run at points of a session — a request, a tool call, a permission prompt, a
//! stop, a compaction, a pipeline stage's end — and may block, change or add to what happens.
//!
//! The hooks a run uses travel on its bus ([`crate::bus::Bus::hooks`]), so every tool path
//! that reports on that bus fires them: the runner's calls (built-in, package, MCP and
//! `transcribe`, the pipeline's own commands), the pipeline's submissions, stages' ends.
//! Hooks run as the person, unsandboxed, each in a process group of its own ([`process`]).
//! A project's hooks run only once approved ([`approval`]); those not approved are reported
//! with a warning at every run's start, never silently skipped.

pub mod approval;
pub mod claude;
pub mod config;
mod decision;
mod event;
mod lifecycle;
mod matcher;
use crate::permissions::pinned;
mod process;
pub mod tool;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value, json};

pub use config::{HookConfig, HookConfigError, ProjectHooks};
pub use decision::Permission;
pub use event::HookEvent;
pub use lifecycle::{
    StopVerdict, before_request, notify, pre_compact, session_end, stage_end, stop,
};

use crate::bus::Bus;
use crate::protocol::{Event, WarningCode};

/// The hooks a session is started with: the user's, the project's (approved or not), and
/// whether `--trust-project-hooks` runs the project's without an approval.
#[derive(Debug, Clone, Default)]
pub struct HookSettings {
    pub user: HookConfig,
    pub project: Option<ProjectHooks>,
    pub trust_project: bool,
    /// Set once the session's `SessionStart` hooks ran: shared by every turn's copy.
    started: Arc<AtomicBool>,
    /// `SessionStart`'s source when the session starts again (`clear`), if it did.
    restarted: Arc<std::sync::Mutex<Option<&'static str>>>,
}

impl HookSettings {
    /// The user's hooks and those of the project at `root` (read now: an invalid
    /// `.splice/settings.json` is an error before anything runs).
    pub fn resolve(
        user: HookConfig,
        root: &Path,
        trust_project: bool,
    ) -> Result<HookSettings, HookConfigError> {
        Ok(HookSettings {
            user,
            project: config::project_hooks(root)?,
            trust_project,
            started: Arc::default(),
            restarted: Arc::default(),
        })
    }

    fn is_empty(&self) -> bool {
        self.user.is_empty() && self.project.as_ref().is_none_or(|p| p.config.is_empty())
    }

    /// Whether the session's `SessionStart` hooks ran (so its `SessionEnd` hooks run too).
    pub fn started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    /// Whether this is the first time it is asked since the session (re)started: its
    /// `SessionStart` hooks are due, with the source of a restart if it was one.
    fn first_start(&self) -> Option<Option<&'static str>> {
        if self.started.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(
            self.restarted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        )
    }

    /// The session starts again (`/clear`, `source`): its `SessionStart` hooks run again
    /// before its next request, with that source.
    pub fn restart(&self, source: &'static str) {
        *self.restarted.lock().unwrap_or_else(|e| e.into_inner()) = Some(source);
        self.started.store(false, Ordering::SeqCst);
    }
}

/// The hooks a run uses, and what its hooks are told about the session.
#[derive(Debug)]
pub struct Hooks {
    config: HookConfig,
    /// The project's hooks that no approval covers: not run.
    unapproved: Vec<(HookEvent, String)>,
    /// The project's settings files that configure hooks.
    project_files: Vec<PathBuf>,
    root: PathBuf,
    session_id: String,
    transcript_path: String,
    permission_mode: String,
    settings: HookSettings,
}

/// What the hooks of one event decided, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Blocked, with the reason (the first hook that blocked; later ones did not run).
    pub block: Option<String>,
    pub permission: Option<Permission>,
    /// The tool input as the last hook that changed it left it.
    pub updated_input: Option<Value>,
    /// Text for the model, one entry per hook that gave some.
    pub context: Vec<String>,
    /// `continue: false`, with its reason for the person.
    pub stop: Option<String>,
}

impl Hooks {
    /// The hooks of a run on `settings`, or none when nothing is configured. Reads the
    /// approvals (a small file): the project's hooks run when trusted or approved as they are.
    pub fn for_run(settings: &crate::settings::RunSettings) -> Option<Arc<Hooks>> {
        let hooks = &settings.hooks;
        if hooks.is_empty() {
            return None;
        }
        let root = crate::mcp::approval::canonical_root(&settings.cwd);
        let mut config = hooks.user.clone();
        let mut unapproved = Vec::new();
        if let Some(project) = &hooks.project {
            if hooks.trust_project
                || approval::is_approved(&settings.layout, &root, &project.fingerprint)
            {
                // From now on the model cannot change what they run, nor the files that
                // configure them (which the next run reads), one still absent included.
                pinned::protect(&project.pins);
                let files: Vec<PathBuf> = config::PROJECT_FILES
                    .iter()
                    .map(|name| crate::permissions::own::resolved(&settings.cwd.join(name)))
                    .collect();
                crate::permissions::own::protect_hook_files(&files);
                config = config.merged(project.config.clone());
            } else {
                unapproved = project.config.commands();
            }
        }
        // Where a terminal UI session's log is written (`<data dir>/sessions/<id>.jsonl`).
        let transcript = settings.layout.session_log(&settings.session_id);
        Some(Arc::new(Hooks {
            config,
            unapproved,
            project_files: hooks
                .project
                .as_ref()
                .map(|p| p.settings.clone())
                .unwrap_or_default(),
            root: settings.cwd.clone(),
            session_id: settings.session_id.clone(),
            transcript_path: transcript.display().to_string(),
            permission_mode: settings.policy.mode.as_str().to_string(),
            settings: hooks.clone(),
        }))
    }

    /// A `hooks_unapproved` warning naming each project hook that will not run, if any, and a
    /// `hook_failed` one for the events of Claude Code's settings that Splice does not have.
    pub fn report_unapproved(&self, bus: &Bus) {
        let unknown = self
            .settings
            .project
            .as_ref()
            .map(|p| p.unknown_events.as_slice())
            .unwrap_or_default();
        if !unknown.is_empty() {
            let list: Vec<String> = unknown
                .iter()
                .map(|(event, file)| format!("{event} (in {})", file.display()))
                .collect();
            bus.emit(Event::warning(
                WarningCode::HookFailed,
                format!(
                    "the project's hooks of events Splice does not have never run: {}",
                    list.join(", ")
                ),
            ));
        }
        if self.unapproved.is_empty() {
            return;
        }
        let file = self
            .project_files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let list: Vec<String> = self
            .unapproved
            .iter()
            .map(|(event, command)| format!("{event}: {command}"))
            .collect();
        bus.emit(Event::warning(
            WarningCode::HooksUnapproved,
            format!(
                "the project's hooks in {file} were not run, since nobody approved them: {}; \
                 approve them in the terminal UI, or pass --trust-project-hooks to run them",
                list.join("; ")
            ),
        ));
    }

    /// Run the hooks of `event` whose matcher takes one of `names`, one after another, each
    /// with the common fields and `fields` on stdin. A hook that blocks or stops ends the
    /// series; a hook's changed tool input is what the next one sees. What blocked or changed
    /// something is reported in a `hook` event; a hook that failed, in a `hook_failed` warning.
    ///
    /// Boxed: a hook's process is a large future, and the tool calls and turns that wait for
    /// it must not grow by it (on the stack of a debug build).
    pub fn fire<'a>(
        &'a self,
        bus: &'a Bus,
        event: HookEvent,
        names: &'a [&'a str],
        fields: Map<String, Value>,
        call_id: Option<&'a str>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Verdict> + Send + 'a>> {
        Box::pin(self.fire_all(bus, event, names, fields, call_id, None))
    }

    /// [`Hooks::fire`] for a tool call: a hook's changed `tool_input` (Claude Code's shape) is
    /// given to the next hook with Splice's own input beside it, as `back` maps it.
    pub(crate) fn fire_call<'a>(
        &'a self,
        bus: &'a Bus,
        event: HookEvent,
        names: &'a [&'a str],
        fields: Map<String, Value>,
        call_id: Option<&'a str>,
        back: &'a (dyn Fn(Value) -> Value + Send + Sync),
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Verdict> + Send + 'a>> {
        Box::pin(self.fire_all(bus, event, names, fields, call_id, Some(back)))
    }

    async fn fire_all(
        &self,
        bus: &Bus,
        event: HookEvent,
        names: &[&str],
        fields: Map<String, Value>,
        call_id: Option<&str>,
        back: Option<&(dyn Fn(Value) -> Value + Send + Sync)>,
    ) -> Verdict {
        let mut verdict = Verdict::default();
        let commands = self.config.matching(event, names);
        if commands.is_empty() {
            return verdict;
        }
        let mut input = json!({
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": self.root.display().to_string(),
            "hook_event_name": event.as_str(),
            "permission_mode": self.permission_mode,
        });
        if let Value::Object(input) = &mut input {
            input.extend(fields);
        }
        for hook in commands {
            // Nor one whose command cannot be pinned: what it runs is known only when it runs.
            if let Some(reason) = pinned::refused(&hook.pins) {
                bus.emit(Event::warning(
                    WarningCode::HooksUnapproved,
                    format!(
                        "the project's {event} hook `{}` was not run: what it runs cannot be \
                         pinned ({reason}), so the model could change it; name its script by a \
                         path Splice can read (such as \"$CLAUDE_PROJECT_DIR\"/.splice/hooks/x.sh)",
                        hook.command
                    ),
                ));
                continue;
            }
            // A project hook runs only while the files it names hold what was approved.
            if let Some(file) = pinned::changed(&hook.pins) {
                bus.emit(Event::warning(
                    WarningCode::HooksUnapproved,
                    format!(
                        "the project's {event} hook `{}` was not run: {} changed since its hooks \
                         were approved (or, with --trust-project-hooks, since the session \
                         started), so it would not run what was approved; look at the change, \
                         then approve the hooks again in a new session",
                        hook.command,
                        file.display()
                    ),
                ));
                continue;
            }
            let bytes = input.to_string().into_bytes();
            let ran = process::run(&hook.command, &self.root, &bytes, hook.timeout).await;
            let outcome = decision::read(event, &ran);
            let report = |decision: &str, reason: Option<&str>| {
                bus.emit(Event::Hook {
                    event: event.as_str().to_string(),
                    command: hook.command.clone(),
                    decision: decision.to_string(),
                    reason: reason.filter(|r| !r.is_empty()).map(str::to_string),
                    id: call_id.map(str::to_string),
                });
            };
            if let Some(error) = &outcome.error {
                bus.emit(Event::warning(
                    WarningCode::HookFailed,
                    format!("{event} hook `{}` {error}", hook.command),
                ));
            }
            if let Some(message) = &outcome.message {
                report("message", Some(message));
            }
            if let Some(context) = outcome.context {
                report("context", None);
                verdict.context.push(context);
            }
            if let Some(updated) = outcome.updated_input {
                report("update", None);
                if let Value::Object(input) = &mut input {
                    input.insert("tool_input".into(), updated.clone());
                    if let Some(back) = back {
                        input.insert("splice_tool_input".into(), back(updated.clone()));
                    }
                }
                verdict.updated_input = Some(updated);
            }
            if let Some(permission) = outcome.permission {
                match &permission {
                    Permission::Allow(reason) => report("allow", Some(reason)),
                    Permission::Ask(reason) => report("ask", Some(reason)),
                }
                verdict.permission = Some(permission);
            }
            if let Some(reason) = outcome.stop {
                report("stop", Some(&reason));
                verdict.stop = Some(reason);
                break;
            }
            if let Some(reason) = outcome.block {
                report("block", Some(&reason));
                verdict.block = Some(reason);
                break;
            }
        }
        verdict
    }
}

/// `bus`, carrying the hooks of a run on `settings` when there are any.
pub fn attach(settings: &crate::settings::RunSettings, bus: Bus) -> Bus {
    match Hooks::for_run(settings) {
        Some(hooks) => bus.with_hooks(hooks),
        None => bus,
    }
}

/// The fields of a JSON object, for [`Hooks::fire`].
pub(crate) fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
