//! Executing a model's tool call: `tool_call`, the permission policy (and a prompt when it asks),
//! a checkpoint before any write, the tool itself, and `tool_result`, in that order.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::fs::{apply, plan_edit, plan_write, read_file};
use super::search::{list_files, search_files};
use super::transcribe::{self, TranscribeArgs, Transcriber};
use super::{MAX_OUTPUT_BYTES, ToolError, ToolId, ToolName, cap_output, command, parse_args};
use crate::bus::{Answer, Bus, PermissionQuestion, Preview};
use crate::checkpoint::CheckpointStore;
use crate::confine::change::FileChange;
use crate::hooks::{self, Permission, tool::Pre};
use crate::packages::offer::{Offered, PackageTool, write_reaching_git_dir};
use crate::packages::runtime::{self, CallErrorCode, CallRequest};
use crate::permissions::policy::{Subject, exact_pattern};
use crate::permissions::risk::command_risk;
use crate::permissions::sandbox;
use crate::permissions::shell;
use crate::permissions::{Effect, Policy, Rule, Verdict};
use crate::protocol::events::{Block, Risk, ToolStatus};
use crate::protocol::{Builtin, Event, SideEffect, ToolIdentity};
use crate::provider::ToolCallRequest;

mod mcp;

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
enum Permit {
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
    /// The package tools offered to the run, and the Node that runs them.
    pub packages: Arc<Offered>,
    /// The `transcribe` tool, when a Scribiz CLI can be run: offered where package tools are.
    pub transcriber: Option<Arc<Transcriber>>,
    /// The MCP servers' tools (`mcp__<server>__<tool>`), offered where package tools are.
    pub mcp: Option<crate::mcp::McpHub>,
}

/// The name of the tool that starts a subagent.
pub const AGENT_TOOL: &str = "agent";

/// What runs an `agent` call: the light conversation's subagents. The runner announces the
/// call and reports its result like any other tool's; the subagent's own tools come back
/// through a runner of its own (the same dispatch, a bus that names the agent).
pub trait Delegate: Sync {
    /// The `agent` tool as the model is offered it (the agents it may start, described).
    fn spec(&self) -> crate::provider::ToolSpec;

    fn run<'a>(
        &'a self,
        call_id: &'a str,
        args: Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Delegated> + Send + 'a>>;
}

/// How an `agent` call ended: its status, what goes back to the model, and the files it
/// changed in the checkout (a writing subagent's diff, once applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegated {
    pub status: ToolStatus,
    pub output: String,
    pub changed_files: Option<Vec<String>>,
}

/// Most bytes of a failed package call's logs handed back with its error.
const MAX_LOG_BYTES: usize = 4 * 1024;

impl ToolRunner {
    /// Run a call that may name only the built-in tools `allowed`.
    pub async fn execute(&self, call: &ToolCallRequest, allowed: &[ToolName]) -> ToolReply {
        self.execute_offered(call, allowed, false).await
    }

    /// Run a call that may name the built-in tools `allowed` and, with `packages`, the run's
    /// package tools (by their wire name).
    pub async fn execute_offered(
        &self,
        call: &ToolCallRequest,
        allowed: &[ToolName],
        packages: bool,
    ) -> ToolReply {
        self.execute_delegating(call, allowed, packages, None).await
    }

    /// As [`ToolRunner::execute_offered`], and with `delegate` the call may name the `agent`
    /// tool, which it runs.
    pub async fn execute_delegating(
        &self,
        call: &ToolCallRequest,
        allowed: &[ToolName],
        packages: bool,
        delegate: Option<&dyn Delegate>,
    ) -> ToolReply {
        if let Some(delegate) = delegate
            && call.name == AGENT_TOOL
        {
            return self.run_agent(call, delegate).await;
        }
        let tool = self.resolve(&call.name, allowed, packages);
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(e) => {
                self.emit_call(call, Value::String(call.arguments.clone()), tool.as_ref());
                return self.finish(
                    &call.id,
                    ToolStatus::Error,
                    format!("arguments are not valid JSON: {e}"),
                    false,
                    None,
                    None,
                );
            }
        };
        self.emit_call(call, args.clone(), tool.as_ref());
        let Some(tool) = tool else {
            return self.finish(
                &call.id,
                ToolStatus::Error,
                ToolError::Unknown(call.name.clone()).to_string(),
                false,
                None,
                None,
            );
        };
        if let Some(refused) = self.wait_for_gate(&call.id).await {
            return refused;
        }
        // The one place every call passes: its `PreToolUse` hooks, the call, its
        // `PostToolUse` hooks.
        let name = tool.name().to_string();
        let (args, permission) =
            match hooks::tool::pre_tool(&self.bus, &self.root, &call.id, &name, args).await {
                Pre::Refused(reason) => {
                    return self.finish(&call.id, ToolStatus::Denied, reason, false, None, None);
                }
                Pre::Run {
                    args: changed,
                    changed: true,
                    permission,
                } => match check_input(&tool, &changed) {
                    Ok(()) => (changed, permission),
                    Err(why) => {
                        let text = format!(
                            "a PreToolUse hook changed the input of {name} into one the tool does \
                         not take ({why}); the call was not run"
                        );
                        return self.finish(&call.id, ToolStatus::Error, text, false, None, None);
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
                Some(args) => hooks::tool::call_fields(&self.root, &name, args),
                None => serde_json::Map::new(),
            },
            permission,
        };
        // Boxed, as the call's own future is large: the hooks' futures come on top of it.
        let mut reply =
            Box::pin(hooks::tool::CALL.scope(hooked, self.run_tool(call, tool, args))).await;
        if reply.status == ToolStatus::Ok
            && let Some(args) = hooked_args
        {
            let response = json!({
                "success": true,
                "status": reply.status,
                "output": reply.content,
                "exitCode": reply.exit_code,
            });
            let said =
                hooks::tool::post_tool(&self.bus, &self.root, &call.id, &name, &args, response);
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
        Some(self.finish(id, ToolStatus::Error, why.to_string(), false, None, None))
    }

    /// A resolved call, once its hooks let it run.
    async fn run_tool(&self, call: &ToolCallRequest, tool: ToolId<'_>, args: Value) -> ToolReply {
        let tool = match tool {
            ToolId::Builtin(tool) => tool,
            ToolId::Package(tool) => return self.run_package(&call.id, tool, args).await,
            ToolId::Transcribe => return self.run_transcribe(&call.id, &args).await,
            ToolId::Mcp(tool) => return self.run_mcp(&call.id, &tool, args).await,
        };
        match self.dispatch(&call.id, tool, &args).await {
            Ok(reply) => reply,
            Err(ToolError::OutsideRoot(path)) => self.block(call, tool, &path, "outside_root"),
            Err(ToolError::Protected(path)) => self.block(call, tool, &path, "protected_path"),
            Err(error) => self.finish(
                &call.id,
                ToolStatus::Error,
                error.to_string(),
                false,
                None,
                None,
            ),
        }
    }

    /// `agent`: announced (its own permission questions are its tools'), then the subagent.
    async fn run_agent(&self, call: &ToolCallRequest, delegate: &dyn Delegate) -> ToolReply {
        let args: Value = match serde_json::from_str(&call.arguments) {
            Ok(args) => args,
            Err(e) => {
                self.emit_agent_call(call, Value::String(call.arguments.clone()));
                let why = format!("arguments are not valid JSON: {e}");
                return self.finish(&call.id, ToolStatus::Error, why, false, None, None);
            }
        };
        self.emit_agent_call(call, args.clone());
        if let Some(refused) = self.wait_for_gate(&call.id).await {
            return refused;
        }
        // Its hooks, as for every call (Claude Code's `Task` matches it too): a block means
        // no subagent starts; a rewrite is checked by the subagent's own reading of it.
        let args =
            match hooks::tool::pre_tool(&self.bus, &self.root, &call.id, AGENT_TOOL, args).await {
                Pre::Refused(reason) => {
                    return self.finish(&call.id, ToolStatus::Denied, reason, false, None, None);
                }
                Pre::Run { args, .. } => args,
            };
        let done = Box::pin(delegate.run(&call.id, args.clone())).await;
        let mut output = done.output;
        if done.status == ToolStatus::Ok && self.bus.hooks().is_some() {
            let response = json!({"success": true, "status": done.status, "output": output});
            let said = hooks::tool::post_tool(
                &self.bus, &self.root, &call.id, AGENT_TOOL, &args, response,
            );
            if let Some(feedback) = said.await {
                output = format!("{output}\n\n{feedback}");
            }
        }
        let (output, truncated) = cap_output(&output, MAX_OUTPUT_BYTES);
        self.finish(
            &call.id,
            done.status,
            output,
            truncated,
            done.changed_files,
            None,
        )
    }

    fn emit_agent_call(&self, call: &ToolCallRequest, args: Value) {
        self.bus.emit(Event::ToolCall {
            id: call.id.clone(),
            name: AGENT_TOOL.to_string(),
            args,
            side_effect: SideEffect::None,
        });
    }

    /// The tool a call names: a built-in in `allowed`, else (with `packages`) `transcribe`,
    /// an MCP tool a ready server lists now, or a package tool.
    fn resolve(&self, name: &str, allowed: &[ToolName], packages: bool) -> Option<ToolId<'_>> {
        if let Some(tool) = ToolName::parse(name).filter(|t| allowed.contains(t)) {
            return Some(ToolId::Builtin(tool));
        }
        if packages && name == transcribe::NAME && self.transcriber.is_some() {
            return Some(ToolId::Transcribe);
        }
        if packages
            && name.starts_with(crate::mcp::tool::WIRE_PREFIX)
            && let Some(tool) = self.mcp.as_ref().and_then(|hub| hub.tool(name))
        {
            return Some(ToolId::Mcp(tool));
        }
        packages
            .then(|| self.packages.by_wire(name))
            .flatten()
            .map(ToolId::Package)
    }

    fn emit_call(&self, call: &ToolCallRequest, args: Value, tool: Option<&ToolId<'_>>) {
        self.bus.emit(Event::ToolCall {
            id: call.id.clone(),
            name: tool.map_or_else(|| call.name.clone(), |t| t.name().to_string()),
            args,
            side_effect: tool.map_or(SideEffect::None, |t| t.side_effect()),
        });
    }

    /// A package tool: the permission policy as for a built-in (rules name it by its dotted
    /// name; a pattern is matched against the input as compact JSON), then one sandboxed Node
    /// process. The output JSON is the result; a failure is `CODE: message` with its logs.
    async fn run_package(&self, id: &str, tool: &PackageTool, input: Value) -> ToolReply {
        let permissions = &tool.package.manifest.permissions;
        if let Some(path) = write_reaching_git_dir(&self.root, permissions) {
            return self.block_package(id, tool, &path);
        }
        let input_text = input.to_string();
        let risk = if tool.side_effect == SideEffect::Network {
            Risk::Medium
        } else {
            Risk::Low
        };
        let (shown, _) = cap_output(&input_text, 2_000);
        // A tool call, not a command line: the prompt names the tool and shows its input.
        let preview = vec![Preview::Call {
            tool: tool.dotted.clone(),
            server: None,
            input: shown.to_string(),
        }];
        if let Permit::Refused(status, reason) = self
            .permit(
                id,
                &ToolId::Package(tool).identity(),
                tool.side_effect,
                &[input_text],
                risk,
                preview,
            )
            .await
        {
            return self.finish(id, status, reason, false, None, None);
        }
        let Some(node) = &self.packages.node else {
            let missing = "NODE_MISSING: no Node to run package tools".to_string();
            return self.finish(id, ToolStatus::Error, missing, false, None, None);
        };
        let outcome = runtime::call(CallRequest {
            package: &tool.package,
            tool: &tool.tool,
            input,
            project_root: &self.root,
            node,
        })
        .await;
        match outcome.result {
            Ok(output) => {
                let (text, truncated) = cap_output(&output.to_string(), MAX_OUTPUT_BYTES);
                self.finish(id, ToolStatus::Ok, text, truncated, None, None)
            }
            Err(error) => {
                let status = if error.code == CallErrorCode::Timeout {
                    ToolStatus::Timeout
                } else {
                    ToolStatus::Error
                };
                let mut text = error.to_string();
                if !outcome.logs.is_empty() {
                    let (logs, _) = cap_output(&outcome.logs.join("\n"), MAX_LOG_BYTES);
                    text.push_str("\nlogs:\n");
                    text.push_str(&logs);
                }
                self.finish(id, status, text, false, None, None)
            }
        }
    }

    /// `transcribe`: the path checked (beneath the root, not in `.git`: blocked otherwise),
    /// the permission policy as for any network tool, then the Scribiz CLI.
    async fn run_transcribe(&self, id: &str, args: &Value) -> ToolReply {
        let fail = |text: String| self.finish(id, ToolStatus::Error, text, false, None, None);
        let Some(transcriber) = &self.transcriber else {
            return fail(ToolError::Unknown(transcribe::NAME.into()).to_string());
        };
        let args: TranscribeArgs = match parse_args(args) {
            Ok(args) => args,
            Err(error) => return fail(error.to_string()),
        };
        let input = match crate::blocking::atomic(|| transcribe::input(&self.root, &args.path)) {
            Ok(input) => input,
            Err(ToolError::OutsideRoot(path)) => {
                let reason = format!("`{path}` is outside the working root");
                return self.block_tool(
                    id,
                    transcribe::NAME,
                    SideEffect::Network,
                    &path,
                    "outside_root",
                    reason,
                );
            }
            Err(ToolError::Protected(path)) => {
                let reason = format!("`{path}` is inside .git, which tools do not hand out");
                return self.block_tool(
                    id,
                    transcribe::NAME,
                    SideEffect::Network,
                    &path,
                    "protected_path",
                    reason,
                );
            }
            Err(error) => return fail(error.to_string()),
        };
        let preview = transcribe::previews(&args.path, &input);
        if let Permit::Refused(status, reason) = self
            .permit(
                id,
                &ToolId::Transcribe.identity(),
                SideEffect::Network,
                std::slice::from_ref(&args.path),
                Risk::Medium,
                preview,
            )
            .await
        {
            return self.finish(id, status, reason, false, None, None);
        }
        match transcriber.run(&self.bus, &self.root, id, &input).await {
            Ok((text, truncated)) => self.finish(id, ToolStatus::Ok, text, truncated, None, None),
            Err(why) => fail(why.to_string()),
        }
    }

    async fn dispatch(
        &self,
        id: &str,
        tool: ToolName,
        args: &Value,
    ) -> Result<ToolReply, ToolError> {
        let root = &self.root;
        match tool {
            ToolName::ReadFile | ToolName::ListFiles | ToolName::SearchFiles => {
                let target = args
                    .get("path")
                    .and_then(Value::as_str)
                    .unwrap_or(".")
                    .to_string();
                if let Permit::Refused(status, reason) = self
                    .permit(
                        id,
                        &tool.builtin().into(),
                        SideEffect::Read,
                        &[target],
                        Risk::Low,
                        vec![],
                    )
                    .await
                {
                    return Ok(self.finish(id, status, reason, false, None, None));
                }
                // The editor's buffer, unsaved changes included, when the client offers it.
                if tool == ToolName::ReadFile
                    && let Some(files) = self.bus.files().filter(|f| f.reads())
                {
                    let args: super::ReadArgs = parse_args(args)?;
                    let (output, truncated) = super::fs::read_through(root, &args, files).await?;
                    return Ok(self.finish(id, ToolStatus::Ok, output, truncated, None, None));
                }
                // Walking a large tree is blocking work: off the runtime's thread, so the TUI
                // keeps drawing while a search runs.
                let (root, args) = (root.clone(), args.clone());
                let (output, truncated) = tokio::task::spawn_blocking(move || match tool {
                    ToolName::ReadFile => read_file(&root, &parse_args(&args)?),
                    ToolName::ListFiles => list_files(&root, &parse_args(&args)?),
                    _ => search_files(&root, &parse_args(&args)?),
                })
                .await
                .map_err(|e| ToolError::Failed(format!("the tool stopped: {e}")))??;
                Ok(self.finish(id, ToolStatus::Ok, output, truncated, None, None))
            }
            ToolName::WriteFile | ToolName::EditFile => {
                let editor = self.bus.files().filter(|f| f.reads());
                let changes = match editor {
                    // An edit applies to the editor's buffer, as the person sees it.
                    Some(files) if tool == ToolName::EditFile => {
                        super::fs::plan_edit_through(root, &parse_args(args)?, files).await?
                    }
                    // Planning reads the file: blocking work, off the runtime's threads.
                    _ => crate::blocking::atomic(|| {
                        if tool == ToolName::WriteFile {
                            plan_write(root, &parse_args(args)?)
                        } else {
                            plan_edit(root, &parse_args(args)?)
                        }
                    })?,
                };
                match self.write_changes(id, tool.builtin(), &changes).await {
                    Ok(changed) => {
                        let summary = format!("wrote {}", changed.join(", "));
                        Ok(self.finish(id, ToolStatus::Ok, summary, false, Some(changed), None))
                    }
                    Err((status, reason)) => Ok(self.finish(id, status, reason, false, None, None)),
                }
            }
            ToolName::RunCommand => {
                let args: super::CommandArgs = parse_args(args)?;
                let risk = command_risk(&args.command);
                let preview = vec![Preview::Command(args.command.clone())];
                let targets = [args.command.clone()];
                let permit = self
                    .permit(
                        id,
                        &tool.builtin().into(),
                        SideEffect::Execute,
                        &targets,
                        risk,
                        preview,
                    )
                    .await;
                let confine = match permit {
                    Permit::Granted { confine } => confine,
                    Permit::Refused(status, reason) => {
                        return Ok(self.finish(id, status, reason, false, None, None));
                    }
                };
                let timeout = command::timeout_for(args.timeout_ms);
                let outcome =
                    command::run(root, &args.command, timeout, confine, &self.writable).await?;
                let status = match (outcome.timed_out, outcome.exit_code) {
                    (true, _) => ToolStatus::Timeout,
                    (false, Some(0)) => ToolStatus::Ok,
                    _ => ToolStatus::Error,
                };
                // A timed-out or signalled command has no exit code: no `display`, never null.
                let display = outcome.exit_code.map(|code| json!({"exitCode": code}));
                let reply = self.finish(
                    id,
                    status,
                    outcome.render(timeout),
                    outcome.truncated,
                    None,
                    display,
                );
                Ok(ToolReply {
                    exit_code: outcome.exit_code,
                    ..reply
                })
            }
        }
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

    async fn permit(
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
                _ => hooks::tool::permission_request(&self.bus, id, tool, &hooked.call).await,
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

    /// A package tool whose declared writes reach the git dir: blocked before it runs, as the
    /// file tools are.
    fn block_package(&self, id: &str, tool: &PackageTool, path: &str) -> ToolReply {
        let reason = format!(
            "{} may write `{path}`, which reaches the git dir, which tools do not write",
            tool.package.id()
        );
        self.bus.emit(Event::Permission {
            id: id.to_string(),
            name: tool.dotted.clone(),
            action: crate::protocol::PermissionAction::Block,
            permission_mode: self.policy.mode.as_str().into(),
            side_effect: tool.side_effect,
            reason: reason.clone(),
            risk: Some(Risk::High),
            block: Some(Block {
                kind: "protected_path".into(),
                path: Some(path.to_string()),
            }),
        });
        self.finish(
            id,
            ToolStatus::Blocked,
            format!("blocked: {reason}"),
            false,
            None,
            None,
        )
    }

    fn block(&self, call: &ToolCallRequest, tool: ToolName, path: &str, kind: &str) -> ToolReply {
        let reason = if kind == "outside_root" {
            format!("`{path}` is outside the working root")
        } else {
            format!("`{path}` is inside .git, which file tools do not write")
        };
        self.block_tool(&call.id, &call.name, tool.side_effect(), path, kind, reason)
    }

    /// A call refused before it runs because of the path it names.
    fn block_tool(
        &self,
        id: &str,
        name: &str,
        side_effect: SideEffect,
        path: &str,
        kind: &str,
        reason: String,
    ) -> ToolReply {
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
        self.finish(
            id,
            ToolStatus::Blocked,
            format!("blocked: {reason}"),
            false,
            None,
            None,
        )
    }

    fn finish(
        &self,
        id: &str,
        status: ToolStatus,
        output: String,
        truncated: bool,
        changed_files: Option<Vec<String>>,
        display: Option<Value>,
    ) -> ToolReply {
        self.bus.emit(Event::ToolResult {
            id: id.to_string(),
            status,
            output: output.clone(),
            truncated,
            changed_files,
            display,
        });
        ToolReply {
            content: output,
            is_error: status != ToolStatus::Ok,
            status,
            images: Vec::new(),
            exit_code: None,
        }
    }
}

/// Whether `input` (a hook's `updatedInput`) fits the schema `tool` declares; the problems
/// otherwise.
fn check_input(tool: &ToolId<'_>, input: &Value) -> Result<(), String> {
    if !input.is_object() {
        return Err("it is not a JSON object".into());
    }
    let schema = match tool {
        ToolId::Builtin(tool) => tool.spec().parameters,
        ToolId::Package(tool) => tool.spec().parameters,
        ToolId::Transcribe => transcribe::spec().parameters,
        ToolId::Mcp(tool) => tool.spec().parameters,
    };
    // As far as the schema is in the subset Splice checks; a built-in's arguments are checked
    // again, whole, when they are parsed.
    let (schema, _) = crate::packages::schema::compile_partial(&schema, "input");
    let issues = schema.validate(input, "input");
    if issues.is_empty() {
        return Ok(());
    }
    let issues: Vec<String> = issues.iter().map(ToString::to_string).collect();
    Err(issues.join("; "))
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
            packages: Arc::default(),
            transcriber: None,
            mcp: None,
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
            packages: Arc::default(),
            transcriber: None,
            mcp: None,
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
            packages: Arc::default(),
            transcriber: None,
            mcp: None,
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
            packages: Arc::default(),
            transcriber: None,
            mcp: None,
        };
        let write = |id: &str| ToolCallRequest {
            id: id.into(),
            name: "write_file".into(),
            arguments: json!({"path": "a.txt", "content": "x"}).to_string(),
        };
        runtime.block_on(async {
            let call = write("c1");
            let mut pending = std::pin::pin!(runner.execute(&call, &ToolName::ALL));
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
        let reply = runtime.block_on(runner.execute(&write("c2"), &ToolName::ALL));
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
