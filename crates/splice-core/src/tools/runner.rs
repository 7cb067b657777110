//! Executing a model's tool call, the same steps for every tool: `tool_call`, the run's gate,
//! the `PreToolUse` hooks (and a check of what they rewrote), the tool's handler (its
//! permission question, checkpoint and sandbox through the services here), `tool_result`,
//! then the `PostToolUse` hooks. What a tool is and does is its handler's
//! ([`super::handler::ToolHandler`]).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::fs::apply;
use super::handler::{ToolHandler, ToolOutput};
use super::registry::{Offer, Resolved, ToolRegistry};
use super::{MAX_OUTPUT_BYTES, ToolError, cap_output};
use crate::bus::{Answer, Bus, PermissionQuestion, Preview};
use crate::checkpoint::CheckpointStore;
use crate::confine::change::FileChange;
use crate::hooks::{self, Permission, tool::HookedTool, tool::Pre};
use crate::permissions::policy::{Subject, exact_pattern};
use crate::permissions::sandbox;
use crate::permissions::shell;
use crate::permissions::{Effect, Policy, Rule, Verdict};
use crate::protocol::events::{Block, Risk, ToolStatus};
use crate::protocol::{Builtin, Event, SideEffect, ToolIdentity};
use crate::provider::ToolCallRequest;

/// Opened once the run may use its tools, with why it may not if so: a run in a repository
/// first records the git config and hooks it puts back at its end, and records them while its
/// first model request is under way rather than before it.
pub type ToolGate = Arc<tokio::sync::SetOnce<Result<(), GateClosed>>>;

/// Why a run's tools stay shut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GateClosed {
    /// Fail closed: without the record nothing could be put back.
    #[error(
        "Splice could not record the repository's git config and hooks before running tools, so it runs none"
    )]
    GitNotRecorded,
}

/// What goes back to the model for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolReply {
    pub content: String,
    pub is_error: bool,
    pub status: ToolStatus,
    /// Images the tool returned (an MCP tool's), for the model; `content` names each.
    pub images: Vec<crate::protocol::input::Image>,
    /// A command's exit code (`run_command`), when it exited rather than timed out or was
    /// killed by a signal.
    pub exit_code: Option<i32>,
}

/// The outcome of asking the policy about one call.
pub(crate) enum Permit {
    /// `confine`: granted by autonomy rather than by a person, so a command runs sandboxed.
    Granted {
        confine: bool,
    },
    Refused(ToolStatus, String),
}

#[derive(Clone)]
pub struct ToolRunner {
    pub root: PathBuf,
    pub policy: Policy,
    pub checkpoints: Arc<CheckpointStore>,
    pub bus: Bus,
    /// Places beyond the root a confined command may write (a worktree's git directory).
    pub writable: Vec<PathBuf>,
    /// What every call waits for before it runs (none: calls run at once).
    pub gate: Option<ToolGate>,
    /// The run's tools besides the built-ins (`transcribe`, MCP and package tools).
    pub tools: Arc<ToolRegistry>,
}

/// The name of the tool that starts a subagent.
pub const AGENT_TOOL: &str = "agent";

impl ToolRunner {
    /// Run a call that may name only the built-in tools `allowed`.
    pub async fn execute(&self, call: &ToolCallRequest, allowed: &[Builtin]) -> ToolReply {
        self.execute_offered(call, &Offer::builtins(allowed)).await
    }

    /// Run a call that may name the tools `offer` offers.
    pub async fn execute_offered(&self, call: &ToolCallRequest, offer: &Offer<'_>) -> ToolReply {
        let tool = self.tools.resolve(&call.name, offer);
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(e) => {
                self.emit_call(call, Value::String(call.arguments.clone()), tool.as_deref());
                let why = format!("arguments are not valid JSON: {e}");
                return self.finish(&call.id, ToolOutput::error(why));
            }
        };
        self.emit_call(call, args.clone(), tool.as_deref());
        let Some(tool) = tool else {
            let unknown = ToolError::Unknown(call.name.clone()).to_string();
            return self.finish(&call.id, ToolOutput::error(unknown));
        };
        if let Some(refused) = self.wait_for_gate(&call.id).await {
            return refused;
        }
        Box::pin(self.run_hooked(call, &tool, args)).await
    }

    /// A resolved call past its gate: its `PreToolUse` hooks, the call, its result and its
    /// `PostToolUse` hooks.
    async fn run_hooked(
        &self,
        call: &ToolCallRequest,
        tool: &Resolved<'_>,
        args: Value,
    ) -> ToolReply {
        let id = call.id.as_str();
        let name = tool.name().to_string();
        let hooked_tool = HookedTool {
            name: &name,
            claude: tool.claude(),
        };
        let (args, permission) =
            match hooks::tool::pre_tool(&self.bus, &self.root, id, hooked_tool, args).await {
                Pre::Refused(reason) => {
                    return self.finish(id, ToolOutput::new(ToolStatus::Denied, reason));
                }
                Pre::Run {
                    args: changed,
                    changed: true,
                    permission,
                } => match tool.check_input(&changed) {
                    Ok(()) => (changed, permission),
                    Err(why) => {
                        let text = format!(
                            "a PreToolUse hook changed the input of {name} into one the tool does \
                         not take ({why}); the call was not run"
                        );
                        return self.finish(id, ToolOutput::error(text));
                    }
                },
                Pre::Run {
                    args, permission, ..
                } => (args, permission),
            };
        // Kept for the `PostToolUse` hooks only when there are hooks: no copy otherwise.
        let hooked_args = self.bus.hooks().map(|_| args.clone());
        let hooked = hooks::tool::CallHooks {
            call: match &hooked_args {
                Some(args) => hooks::tool::call_fields(&self.root, hooked_tool, args),
                None => serde_json::Map::new(),
            },
            permission,
        };
        // Boxed, as the call's own future is large: the hooks' futures come on top of it.
        let mut output =
            Box::pin(hooks::tool::CALL.scope(hooked, tool.handle(self, id, args))).await;
        let post = hooked_args.filter(|_| output.status == ToolStatus::Ok);
        if tool.result_after_hooks() {
            if let Some(args) = post {
                let response = tool.hook_response(&output);
                let said =
                    hooks::tool::post_tool(&self.bus, &self.root, id, hooked_tool, &args, response);
                if let Some(feedback) = said.await {
                    output.output = format!("{}\n\n{feedback}", output.output);
                }
            }
            let (text, truncated) = cap_output(&output.output, MAX_OUTPUT_BYTES);
            return self.finish(
                id,
                ToolOutput {
                    output: text,
                    truncated,
                    ..output
                },
            );
        }
        let response = post.as_ref().map(|_| tool.hook_response(&output));
        let mut reply = self.finish(id, output);
        if let (Some(args), Some(response)) = (post, response) {
            let said =
                hooks::tool::post_tool(&self.bus, &self.root, id, hooked_tool, &args, response);
            if let Some(feedback) = said.await {
                reply.content = format!("{}\n\n{feedback}", reply.content);
            }
        }
        reply
    }

    /// Wait for what the run's tools wait on first (the record of the git dir); the call's
    /// error result when that failed, so nothing runs unrecorded.
    async fn wait_for_gate(&self, id: &str) -> Option<ToolReply> {
        let gate = self.gate.as_ref()?;
        let why = gate.wait().await.err()?;
        Some(self.finish(id, ToolOutput::error(why.to_string())))
    }

    fn emit_call(&self, call: &ToolCallRequest, args: Value, tool: Option<&dyn ToolHandler>) {
        self.bus.emit(Event::ToolCall {
            id: call.id.clone(),
            name: tool.map_or_else(|| call.name.clone(), |t| t.name().to_string()),
            args,
            side_effect: tool.map_or(SideEffect::None, |t| t.side_effect()),
        });
    }

    /// Pass planned changes through the policy, checkpoint them, and apply them. Used by the
    /// write tools and by the pipeline's `submit_code` / `submit_tests`.
    pub async fn write_changes(
        &self,
        id: &str,
        tool: Builtin,
        changes: &[FileChange],
    ) -> Result<Vec<String>, (ToolStatus, String)> {
        let targets: Vec<String> = changes.iter().map(|c| c.shown.clone()).collect();
        let risk = if changes.iter().any(|c| c.after.is_none()) {
            Risk::Medium
        } else {
            Risk::Low
        };
        let previews: Vec<Preview> = changes
            .iter()
            .map(|c| Preview::Write {
                path: c.shown.clone(),
                before: c
                    .before
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).into_owned()),
                after: c
                    .after
                    .as_ref()
                    .map(|a| String::from_utf8_lossy(a).into_owned()),
            })
            .collect();
        // Kept for the front end: a write allowed without a prompt (accept-edits) is shown
        // there all the same.
        let shown = previews.clone();
        if let Permit::Refused(status, reason) = self
            .permit(
                id,
                &tool.into(),
                SideEffect::Write,
                &targets,
                risk,
                previews,
            )
            .await
        {
            return Err((status, reason));
        }
        // Text written through the editor (an ACP client) lands in its buffers; deletions and
        // bytes that are not text go to disk as always.
        let through = self
            .bus
            .files()
            .filter(|f| f.writes())
            .filter(|_| super::fs::all_text(changes));
        // The checkpoint and the write are blocking work that must land together: an interrupt
        // takes effect after both, never between them.
        crate::blocking::atomic(|| {
            let info = self
                .checkpoints
                .save(tool.as_str(), changes)
                .map_err(|e| (ToolStatus::Error, e.to_string()))?;
            self.bus.emit(Event::Checkpoint { checkpoint: info });
            if through.is_some() {
                return Ok(());
            }
            apply(&self.root, changes).map_err(|e| (ToolStatus::Error, e.to_string()))
        })?;
        if let Some(files) = through {
            super::fs::write_through(&self.root, changes, files)
                .await
                .map_err(|e| (ToolStatus::Error, e.to_string()))?;
        }
        self.bus.show_changes(id, &shown);
        Ok(targets)
    }

    /// The permission policy's say on call `id` of `identity` (what it does to `targets`, at
    /// `risk`), with what its hooks said; a person is asked, shown `previews`, when the
    /// policy asks. Every tool's permission question goes through here.
    pub(crate) async fn permit(
        &self,
        id: &str,
        identity: &ToolIdentity,
        side_effect: SideEffect,
        targets: &[String],
        risk: Risk,
        previews: Vec<Preview>,
    ) -> Permit {
        let tool = identity.name();
        let mut verdict = self.policy.judge(&Subject {
            tool: identity,
            side_effect,
            targets,
            risk,
            // An MCP tool's side effect is its server's claim.
            claimed: matches!(identity, ToolIdentity::Mcp(_)),
        });
        // A command allowed only because it would be confined must not run unconfined: when
        // the sandbox is unavailable, a person has to approve it (headless: denied).
        if let Verdict::Allow { confine: true, .. } = verdict
            && side_effect == SideEffect::Execute
            && let Err(why) = sandbox::available()
        {
            verdict = Verdict::Prompt {
                reason: format!("{why}; without it this command would run unconfined"),
            };
        }
        // What the call's hooks said: `PreToolUse` may ask where the policy allows, and settle
        // a prompt; `PermissionRequest` hooks may settle it too. Rules that deny still deny.
        let hooked = hooks::tool::CALL.try_with(Clone::clone).unwrap_or_default();
        if let (Verdict::Allow { .. }, Some(Permission::Ask(reason))) =
            (&verdict, &hooked.permission)
        {
            verdict = Verdict::Prompt {
                reason: format!("a PreToolUse hook asks for a person's approval: {reason}"),
            };
        }
        if let Verdict::Prompt { .. } = verdict {
            let decided = match &hooked.permission {
                Some(Permission::Allow(reason)) => Some(Ok(reason.clone())),
                _ => {
                    let named = HookedTool {
                        name: tool,
                        claude: super::registry::claude_of(identity),
                    };
                    hooks::tool::permission_request(&self.bus, id, named, &hooked.call).await
                }
            };
            // A hook spares the person the prompt, never the sandbox: a command it allows runs
            // confined, as one the mode allows does; where nothing can confine it, its allow
            // is not taken and a person decides (headless: denied). Its deny always holds.
            let command = side_effect == SideEffect::Execute;
            if let Some(decided) = decided
                && (decided.is_err() || !command || sandbox::available().is_ok())
            {
                return self.hook_decided(id, tool, decided, command);
            }
        }
        let mode = self.policy.mode.as_str().to_string();
        let shown_risk = (side_effect != SideEffect::Read).then_some(risk);
        match verdict {
            Verdict::Allow { confine, reason } => {
                crate::logging::events::allowed(id, tool, &reason, confine);
                Permit::Granted { confine }
            }
            Verdict::Deny { reason } => {
                self.bus.emit(Event::Permission {
                    id: id.to_string(),
                    name: tool.to_string(),
                    action: crate::protocol::PermissionAction::Deny,
                    permission_mode: mode,
                    side_effect,
                    reason: reason.clone(),
                    risk: shown_risk,
                    block: None,
                });
                Permit::Refused(ToolStatus::Denied, format!("denied: {reason}"))
            }
            Verdict::Prompt { reason } => {
                let rules = always_rules(identity, targets);
                let answer = self
                    .ask_person(Question {
                        id,
                        tool,
                        side_effect,
                        risk: shown_risk,
                        reason,
                        rule: if rules.is_empty() {
                            "this command only".to_string()
                        } else {
                            rules.join(", ")
                        },
                        previews,
                        always: crate::bus::AlwaysScope::Session,
                    })
                    .await;
                let decision = match answer {
                    // A high-risk call is never allowed for the rest of the session.
                    Some(Answer::AllowAlways) if risk == Risk::High => {
                        Ok("approved once in TUI (high risk)".to_string())
                    }
                    Some(Answer::AllowAlways) => {
                        for rule in &rules {
                            if let Ok(rule) = Rule::parse(Effect::Allow, rule) {
                                self.policy.add_rule(rule);
                            }
                        }
                        answer_decision(answer.as_ref())
                    }
                    Some(Answer::DenyAlways) => {
                        for rule in &rules {
                            if let Ok(rule) = Rule::parse(Effect::Deny, rule) {
                                self.policy.add_rule(rule);
                            }
                        }
                        answer_decision(answer.as_ref())
                    }
                    _ => answer_decision(answer.as_ref()),
                };
                match self.decide(id, tool, decision) {
                    Ok(()) => Permit::Granted { confine: false },
                    Err(reason) => Permit::Refused(ToolStatus::Denied, reason),
                }
            }
        }
    }

    /// A hook's answer to a prompt; a command it allows runs confined when `confine`.
    fn hook_decided(
        &self,
        id: &str,
        tool: &str,
        decided: Result<String, String>,
        confine: bool,
    ) -> Permit {
        let decision = match decided {
            Ok(reason) if reason.is_empty() => Ok("allowed by a hook".to_string()),
            Ok(reason) => Ok(format!("allowed by a hook: {reason}")),
            Err(reason) => Err(format!("denied by a hook: {reason}")),
        };
        match self.decide(id, tool, decision) {
            Ok(()) => Permit::Granted { confine },
            Err(reason) => Permit::Refused(ToolStatus::Denied, reason),
        }
    }

    /// Ask the person about call `id`: a `permission_request`, then the prompt (naming the
    /// design-plan task or subagent whose call it is). `None`: nobody can answer (headless),
    /// which is a denial. The caller reports the outcome with [`ToolRunner::decide`]. The one
    /// path every prompt of a run takes (a tool's, a project agent's approval).
    pub(crate) async fn ask_person(&self, question: Question<'_>) -> Option<Answer> {
        self.bus.emit(Event::PermissionRequest {
            id: question.id.to_string(),
            name: question.tool.to_string(),
            action: crate::protocol::PermissionAction::Prompt,
            permission: "prompt".into(),
            permission_mode: self.policy.mode.as_str().to_string(),
            side_effect: question.side_effect,
            reason: question.reason.clone(),
            risk: question.risk,
        });
        let asked = PermissionQuestion {
            // The session mints it when it takes the question.
            token: String::new(),
            id: question.id.to_string(),
            tool: question.tool.to_string(),
            side_effect: question.side_effect,
            risk: question.risk,
            // Tasks of a plan side by side may each ask: the prompt names whose it is.
            reason: match (self.bus.task_id(), self.bus.agent()) {
                (Some(task), _) => format!("task {task}: {}", question.reason),
                // Subagents side by side may each ask: the prompt names whose it is.
                (None, Some(agent)) => {
                    format!(
                        "subagent {} ({}): {}",
                        agent.id, agent.name, question.reason
                    )
                }
                (None, None) => question.reason,
            },
            rule: question.rule,
            always: question.always,
            previews: question.previews,
        };
        if self.bus.has_responder() {
            let waiting = format!("Splice needs your permission to use {}", question.tool);
            hooks::notify(&self.bus, "permission_prompt", &waiting).await;
            self.bus.ask(asked).await
        } else {
            None
        }
    }

    /// Report how a question of [`ToolRunner::ask_person`] ended (`permission_decision`):
    /// `Ok(reason)` granted, `Err(reason)` denied; Err(`denied: …`) for the tool's result.
    pub(crate) fn decide(
        &self,
        id: &str,
        tool: &str,
        decision: Result<String, String>,
    ) -> Result<(), String> {
        let (granted, reason) = match &decision {
            Ok(reason) => (true, reason.clone()),
            Err(reason) => (false, reason.clone()),
        };
        self.bus.emit(Event::PermissionDecision {
            id: id.to_string(),
            name: tool.to_string(),
            action: if granted {
                crate::protocol::PermissionAction::Allow
            } else {
                crate::protocol::PermissionAction::Deny
            },
            permission_granted: granted,
            decision_reason: reason.clone(),
        });
        match decision {
            Ok(_) => Ok(()),
            Err(reason) => Err(format!("denied: {reason}")),
        }
    }

    /// A call refused before it runs because of the path it names: its `permission` event,
    /// and its result.
    pub(crate) fn block_tool(
        &self,
        id: &str,
        name: &str,
        side_effect: SideEffect,
        path: &str,
        kind: &str,
        reason: String,
    ) -> ToolOutput {
        self.bus.emit(Event::Permission {
            id: id.to_string(),
            name: name.to_string(),
            action: crate::protocol::PermissionAction::Block,
            permission_mode: self.policy.mode.as_str().into(),
            side_effect,
            reason: reason.clone(),
            risk: (side_effect == SideEffect::Write).then_some(Risk::High),
            block: Some(Block {
                kind: kind.into(),
                path: Some(path.to_string()),
            }),
        });
        ToolOutput::new(ToolStatus::Blocked, format!("blocked: {reason}"))
    }

    /// Report how call `id` ended (`tool_result`) and what goes back to the model.
    fn finish(&self, id: &str, output: ToolOutput) -> ToolReply {
        self.bus.emit(Event::ToolResult {
            id: id.to_string(),
            status: output.status,
            output: output.output.clone(),
            truncated: output.truncated,
            changed_files: output.changed_files,
            display: output.display,
        });
        ToolReply {
            content: output.output,
            is_error: output.status != ToolStatus::Ok,
            status: output.status,
            images: output.images,
            exit_code: output.exit_code,
        }
    }
}

/// One question for the person ([`ToolRunner::ask_person`]).
pub(crate) struct Question<'a> {
    pub id: &'a str,
    pub tool: &'a str,
    pub side_effect: SideEffect,
    pub risk: Option<Risk>,
    pub reason: String,
    /// What "allow always" covers, in words (a rule, or where an approval is kept).
    pub rule: String,
    pub previews: Vec<Preview>,
    /// How long "allow always" holds.
    pub always: crate::bus::AlwaysScope,
}

/// The decision an answer makes: granted (`Ok`) or denied (`Err`), with its reason.
pub(crate) fn answer_decision(answer: Option<&Answer>) -> Result<String, String> {
    match answer {
        Some(Answer::AllowOnce | Answer::AllowAlways | Answer::AllowAndSave) => {
            Ok("approved in TUI".to_string())
        }
        Some(Answer::Deny | Answer::DenyAlways) => Err(crate::bus::DENIED_IN_TUI.to_string()),
        None => Err("headless run has no interactive responder".to_string()),
    }
}

/// The rules "allow always" adds: the tool, or for a command each of its simple commands
/// exactly (glob characters escaped), so approving `ls *.py` does not approve `ls x; rm y`. A
/// command with substitutions gets none: no rule could judge it.
fn always_rules(tool: &ToolIdentity, targets: &[String]) -> Vec<String> {
    match targets.first() {
        Some(command) if tool.is(Builtin::RunCommand) => shell::split(command)
            .unwrap_or_default()
            .iter()
            .map(|part| format!("{tool}({})", exact_pattern(&part.text)))
            .collect(),
        _ => vec![tool.to_string()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::REAL_TOOLS;
    use serde_json::json;

    #[test]
    fn allow_always_rules_are_exact_and_per_part() {
        let command = Builtin::RunCommand.into();
        let rules = always_rules(&command, &["ls *.py && wc -l a.txt".to_string()]);
        assert_eq!(
            rules,
            ["run_command(ls \\*.py)", "run_command(wc -l a.txt)"]
        );
        assert!(always_rules(&command, &["echo $(id)".to_string()]).is_empty());
        assert_eq!(
            always_rules(&Builtin::WriteFile.into(), &["a.txt".to_string()]),
            ["write_file"]
        );
    }

    /// A responder that answers "allow always" to everything, as a TUI (or a future client)
    /// might: a high-risk call is granted once, and no rule outlives it.
    #[tokio::test]
    async fn allow_always_on_a_high_risk_call_adds_no_rule() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::bus::PermissionAsk>();
        tokio::spawn(async move {
            while let Some(ask) = rx.recv().await {
                let _ = ask.reply.send(Answer::AllowAlways);
            }
        });
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let runner = ToolRunner {
            root: dir.path().to_path_buf(),
            policy: Policy::new(crate::permissions::PermissionMode::Ask, vec![]),
            checkpoints: Arc::new(CheckpointStore::new(
                &crate::layout::Layout::at(dir.path()),
                "run_t",
                dir.path(),
            )),
            bus: Bus::with_responder("run_t", vec![], tx),
            writable: vec![],
            gate: None,
            tools: Arc::default(),
        };
        for (command, risk, rules) in [("rm -rf build", Risk::High, 0), ("ls", Risk::Low, 1)] {
            let permit = runner
                .permit(
                    "c1",
                    &Builtin::RunCommand.into(),
                    SideEffect::Execute,
                    &[command.to_string()],
                    risk,
                    vec![],
                )
                .await;
            assert!(matches!(permit, Permit::Granted { confine: false }));
            assert_eq!(runner.policy.session_rules().len(), rules, "{command}");
        }
    }

    /// A prompt of a design-plan task that runs beside others names the task.
    #[tokio::test]
    async fn a_tasks_prompt_names_the_task() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<crate::bus::PermissionAsk>();
        let asked = tokio::spawn(async move {
            let ask = rx.recv().await.expect("a prompt");
            let reason = ask.question.reason.clone();
            let _ = ask.reply.send(Answer::Deny);
            reason
        });
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let runner = ToolRunner {
            root: dir.path().to_path_buf(),
            policy: Policy::new(crate::permissions::PermissionMode::Ask, vec![]),
            checkpoints: Arc::new(CheckpointStore::new(
                &crate::layout::Layout::at(dir.path()),
                "run_t",
                dir.path(),
            )),
            bus: Bus::with_responder("run_t", vec![], tx).for_task("T2"),
            writable: vec![],
            gate: None,
            tools: Arc::default(),
        };
        let permit = runner
            .permit(
                "c1",
                &Builtin::RunCommand.into(),
                SideEffect::Execute,
                &["ls".to_string()],
                Risk::Low,
                vec![],
            )
            .await;
        assert!(matches!(permit, Permit::Refused(..)));
        let reason = asked.await.expect("the responder");
        assert!(reason.starts_with("task T2: "), "{reason}");
    }

    /// A write allowed without a prompt (accept-edits) still hands what it changed to the
    /// sinks that show it (the TUI's transcript), keyed by the call's id.
    #[tokio::test]
    async fn an_applied_write_shows_its_changes_to_the_sinks() {
        #[derive(Default)]
        struct Shown(std::sync::Mutex<Vec<(String, Vec<Preview>)>>);
        impl crate::bus::Sink for Shown {
            fn emit(&self, _: &str, _: &Event) {}
            fn changes(&self, _: &str, id: &str, changes: &[Preview]) {
                if let Ok(mut shown) = self.0.lock() {
                    shown.push((id.to_string(), changes.to_vec()));
                }
            }
        }
        let shown = Arc::new(Shown::default());
        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::write(dir.path().join("a.txt"), "old\n").expect("write a.txt");
        let runner = ToolRunner {
            root: dir.path().to_path_buf(),
            policy: Policy::new(crate::permissions::PermissionMode::AcceptEdits, vec![]),
            checkpoints: Arc::new(CheckpointStore::new(
                &crate::layout::Layout::at(dir.path()),
                "run_t",
                dir.path(),
            )),
            bus: Bus::new("run_t", vec![shown.clone() as Arc<dyn crate::bus::Sink>]),
            writable: vec![],
            gate: None,
            tools: Arc::default(),
        };
        let change = FileChange {
            path: dir.path().join("a.txt"),
            shown: "a.txt".into(),
            before: Some(b"old\n".to_vec()),
            after: Some(b"new\n".to_vec()),
        };
        let written = runner
            .write_changes("call_0", Builtin::SubmitCode, &[change])
            .await
            .unwrap_or_else(|(_, e)| panic!("{e}"));
        assert_eq!(written, ["a.txt"]);
        let shown = shown.0.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(
            shown,
            [(
                "call_0".to_string(),
                vec![Preview::Write {
                    path: "a.txt".into(),
                    before: Some("old\n".into()),
                    after: Some("new\n".into()),
                }]
            )]
        );
    }

    /// A call waits for the run's gate (the git guard being recorded) and runs once it opens;
    /// a gate opened with a refusal runs nothing.
    #[test]
    fn calls_wait_for_the_gate_and_a_refusing_gate_runs_nothing() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build");
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let gate: ToolGate = Arc::new(tokio::sync::SetOnce::new());
        let runner = ToolRunner {
            root: dir.path().to_path_buf(),
            policy: Policy::new(crate::permissions::PermissionMode::AcceptEdits, vec![]),
            checkpoints: Arc::new(CheckpointStore::new(
                &crate::layout::Layout::at(dir.path()),
                "run_t",
                dir.path(),
            )),
            bus: Bus::new("run_t", vec![]),
            writable: vec![],
            gate: Some(gate.clone()),
            tools: Arc::default(),
        };
        let write = |id: &str| ToolCallRequest {
            id: id.into(),
            name: "write_file".into(),
            arguments: json!({"path": "a.txt", "content": "x"}).to_string(),
        };
        runtime.block_on(async {
            let call = write("c1");
            let mut pending = std::pin::pin!(runner.execute(&call, &REAL_TOOLS));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            for _ in 0..10 {
                assert!(pending.as_mut().poll(&mut cx).is_pending());
                tokio::task::yield_now().await;
            }
            assert!(
                !dir.path().join("a.txt").exists(),
                "ran before the gate opened"
            );
            let _ = gate.set(Ok(()));
            let reply = pending.await;
            assert_eq!(reply.status, ToolStatus::Ok, "{}", reply.content);
            assert!(dir.path().join("a.txt").exists());
        });
        let refused: ToolGate = Arc::new(tokio::sync::SetOnce::new());
        let _ = refused.set(Err(GateClosed::GitNotRecorded));
        let runner = ToolRunner {
            gate: Some(refused),
            ..runner
        };
        std::fs::remove_file(dir.path().join("a.txt")).expect("remove a.txt");
        let reply = runtime.block_on(runner.execute(&write("c2"), &REAL_TOOLS));
        assert_eq!(reply.status, ToolStatus::Error);
        assert_eq!(reply.content, GateClosed::GitNotRecorded.to_string());
        assert!(
            reply
                .content
                .starts_with("Splice could not record the repository's git config")
        );
        assert!(!dir.path().join("a.txt").exists());
    }
}
