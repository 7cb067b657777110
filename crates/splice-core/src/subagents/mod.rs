//! Subagents in a light conversation: the `agent` tool starts a conversation of its own, with a
//! fresh context, the tools its definition allows (read-only by default) and its own turn limit
//! and timeout; its final answer is the call's result, and its turns never enter the parent's
//! context. Calls in one response run at once (up to `maxAgents`). A subagent has no `agent`
//! tool (depth 1). Its events carry `agentId` and `parentToolCallId`; its usage counts in the
//! run's usage and budgets. One that may write works in a git worktree of its own, and its
//! changes come back as a diff the parent applies through the permission policy (prompted,
//! checkpointed, restorable). Its tool calls go through a [`ToolRunner`] like the parent's:
//! the one dispatch path, with a bus that names the agent.

pub mod definition;
mod scratch;
mod tool;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::{Agent, AgentError, TextRoute, TurnSpec};
use crate::bus::{AgentScope, Answer, Bus, Preview};
use crate::checkpoint::CheckpointStore;
use crate::permissions::PermissionMode;
use crate::protocol::events::{Risk, ToolStatus};
use crate::protocol::{Builtin, Event, SideEffect, WarningCode};
use crate::provider::{Message, Provider, ProviderConfig};
use crate::settings::RunSettings;
use crate::tools::parse_args;
use crate::tools::runner::{AGENT_TOOL, Question, ToolRunner, answer_decision};
use crate::usage::UsageMeter;
pub use definition::{Catalog, Definition};
use scratch::Scratch;

const SUBAGENT_PROMPT: &str = include_str!("../../../../assets/prompts/subagent.md");

/// How an `agent` call ended: its status, what goes back to the model, and the files it
/// changed in the checkout (a writing subagent's diff, once applied).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Delegated {
    status: ToolStatus,
    output: String,
    changed_files: Option<Vec<String>>,
}

/// The `agent` tool's arguments.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentArgs {
    description: String,
    prompt: String,
    agent: Option<String>,
}

/// The `agent` tool of one light run: the definitions it offers, and what its subagents share
/// with the parent (the provider, the meter, the parent's runner and bus).
pub struct Subagents<'a> {
    pub provider: &'a Provider,
    pub meter: &'a UsageMeter,
    /// The parent's runner: a subagent's is made from it, and a writing subagent's diff is
    /// applied through it.
    pub parent: &'a ToolRunner,
    pub settings: &'a RunSettings,
    pub instructions: Option<String>,
    catalog: Catalog,
    limit: tokio::sync::Semaphore,
    timeout: Duration,
    next: AtomicU32,
    /// The checkout project approvals are keyed by: the source checkout's root in a
    /// `--worktree` run (not the worktree's), so an approval holds for both.
    project: std::path::PathBuf,
    /// Fingerprints of the project definitions the person approved "always" in this run.
    approved: Mutex<HashSet<String>>,
}

impl<'a> Subagents<'a> {
    pub fn new(
        provider: &'a Provider,
        meter: &'a UsageMeter,
        parent: &'a ToolRunner,
        settings: &'a RunSettings,
        instructions: Option<String>,
        catalog: Catalog,
        project: &std::path::Path,
    ) -> Subagents<'a> {
        let limit = usize::try_from(settings.pipeline.max_agents.max(1)).unwrap_or(1);
        Subagents {
            provider,
            meter,
            parent,
            settings,
            instructions,
            catalog,
            limit: tokio::sync::Semaphore::new(limit),
            timeout: settings.pipeline.agent_timeout,
            next: AtomicU32::new(1),
            project: project.to_path_buf(),
            approved: Mutex::default(),
        }
    }

    /// The definitions of the run's project and user, read beneath the root: warnings for the
    /// files skipped and for the project definitions not offered for want of an approval.
    /// A person who can answer prompts (`bus.has_responder()`) is asked when one is first used.
    /// `project`: the checkout approvals are keyed by (see [`Subagents::new`]).
    pub async fn catalog(settings: &RunSettings, bus: &Bus, project: &std::path::Path) -> Catalog {
        let (root, project, layout, ask) = (
            settings.cwd.clone(),
            project.to_path_buf(),
            settings.layout.clone(),
            bus.has_responder(),
        );
        let catalog = crate::blocking::detached(move || {
            Catalog::load(
                &root,
                &project,
                definition::user_agents_dir().as_deref(),
                &layout,
                ask,
            )
        })
        .await
        .unwrap_or_default();
        for (path, reason) in &catalog.skipped {
            bus.emit(Event::warning(
                WarningCode::AgentSkipped,
                format!(
                    "agent definition {} is not offered: {reason}",
                    path.display()
                ),
            ));
        }
        if !catalog.unapproved.is_empty() {
            let names: Vec<String> = catalog
                .unapproved
                .iter()
                .map(|d| format!("`{}`", d.name))
                .collect();
            bus.emit(Event::warning(
                WarningCode::AgentUnapproved,
                format!(
                    "project agent definitions {} may write files or run commands and were not \
                     approved, so the agent tool does not offer them; start them once in the \
                     interactive TUI to approve them",
                    names.join(", ")
                ),
            ));
        }
        catalog
    }

    async fn start(&self, call_id: &str, args: Value) -> Delegated {
        let args: AgentArgs = match parse_args(&args) {
            Ok(args) => args,
            Err(error) => return failed(error.to_string()),
        };
        let name = args.agent.as_deref().unwrap_or("general");
        let Some(definition) = self.catalog.offered.iter().find(|d| d.name == name) else {
            return failed(self.unknown(name));
        };
        if let Err(why) = self.approve(call_id, definition).await {
            return Delegated {
                status: ToolStatus::Denied,
                output: why,
                changed_files: None,
            };
        }
        // Calls beyond the limit wait here for a running subagent to end.
        let Ok(_slot) = self.limit.acquire().await else {
            return failed("the subagents were closed".into());
        };
        let id = format!("agent_{}", self.next.fetch_add(1, Ordering::SeqCst));
        let bus = self.parent.bus.for_agent(AgentScope {
            id: id.clone(),
            parent_call: call_id.to_string(),
            name: definition.name.clone(),
        });
        bus.emit(Event::reasoning(format!(
            "Subagent {id} ({}) started: {}\n",
            definition.name,
            args.description.trim()
        )));
        let ended = self.converse(&id, &bus, definition, args.prompt).await;
        // A subagent cut short (its time ran out) leaves no call without a result.
        bus.close_open_calls("the subagent ended before the tool finished");
        ended
    }

    /// The error for a call naming an agent that is not offered.
    fn unknown(&self, name: &str) -> String {
        if self.catalog.unapproved.iter().any(|d| d.name == name) {
            return format!(
                "agent `{name}` is a project definition that may write files or run commands, \
                 and nobody approved it; it can be approved in the interactive TUI"
            );
        }
        let known: Vec<&str> = self
            .catalog
            .offered
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        format!(
            "unknown agent `{name}`; the agents are: {}",
            known.join(", ")
        )
    }

    /// A project definition that writes, not approved yet: the person is asked (the first
    /// time; "always" remembers it for the project until the file changes, "yes" lets this
    /// call through only). The question shows everything the file decides (its tools, mode,
    /// model, turn limit and prompt), since the approval covers exactly that content.
    async fn approve(&self, call_id: &str, definition: &Definition) -> Result<(), String> {
        let layout = &self.settings.layout;
        let project = &self.project;
        if !definition.needs_approval()
            || self
                .approved
                .lock()
                .is_ok_and(|a| a.contains(&definition.fingerprint))
            || crate::mcp::approval::Approvals::load_file(layout, definition::APPROVALS_FILE)
                .is_approved_key(
                    &crate::mcp::approval::canonical_root(project),
                    &definition.name,
                    &definition.fingerprint,
                )
        {
            return Ok(());
        }
        let side_effect = if definition.tools.contains(&Builtin::RunCommand) {
            SideEffect::Execute
        } else {
            SideEffect::Write
        };
        let path = definition
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let tools: Vec<&str> = definition.tools.iter().map(|t| t.as_str()).collect();
        let mode = definition.mode.map_or_else(
            || format!("the run's ({})", self.parent.policy.mode.as_str()),
            |m| m.as_str().to_string(),
        );
        let reason = format!(
            "project agent `{}` ({path}) may {} (tools {}; permission mode {mode}); it has not \
             been approved for this project",
            definition.name,
            if side_effect == SideEffect::Execute {
                "run commands and write files"
            } else {
                "write files"
            },
            tools.join(", ")
        );
        let shown = format!(
            "{}\n\ntools: {}\npermissionMode: {mode}\nmodel: {}\nmaxTurns: {}\n\n{}",
            definition.description,
            tools.join(", "),
            definition.model.as_deref().unwrap_or("the run's"),
            definition
                .max_turns
                .map_or_else(|| "the run's".to_string(), |n| n.to_string()),
            definition.prompt
        );
        let parent = self.parent;
        let answer = parent
            .ask_person(Question {
                id: call_id,
                tool: AGENT_TOOL,
                side_effect,
                risk: Some(Risk::Medium),
                reason,
                rule: format!("agent {} in this project", definition.name),
                previews: vec![Preview::Note(shown)],
                // The approval is kept in the data dir (`definition::approve`).
                always: crate::bus::AlwaysScope::Kept,
            })
            .await;
        if answer == Some(Answer::AllowAlways) {
            let stored =
                crate::blocking::atomic(|| definition::approve(layout, project, definition));
            if let Err(error) = stored {
                parent.bus.emit(Event::warning(
                    WarningCode::AgentUnapproved,
                    format!(
                        "the approval of agent `{}` could not be saved ({error}); it is asked \
                         about again next time",
                        definition.name
                    ),
                ));
            }
            // For the rest of this run too, whether or not it could be saved.
            if let Ok(mut approved) = self.approved.lock() {
                approved.insert(definition.fingerprint.clone());
            }
        }
        parent.decide(call_id, AGENT_TOOL, answer_decision(answer.as_ref()))
    }

    /// One subagent's conversation, in its worktree when it may write; then its diff.
    async fn converse(
        &self,
        id: &str,
        bus: &Bus,
        definition: &Definition,
        prompt: String,
    ) -> Delegated {
        let parent = self.parent;
        let layout = &self.settings.layout;
        let scratch = if definition.writes() {
            let run = crate::ids::new_run_id();
            match crate::blocking::atomic(|| Scratch::create(layout, &parent.root, &run)) {
                Ok(scratch) => Some(scratch),
                Err(why) => {
                    return failed(format!(
                        "agent `{}` may write files or run commands, so it runs in a git \
                         worktree of its own, and none could be made: {why}",
                        definition.name
                    ));
                }
            }
        } else {
            None
        };
        let mut mode = match (parent.policy.mode, definition.mode) {
            // The person made the run read-only: no definition loosens that for its subagents.
            (PermissionMode::ReadOnly, _) => PermissionMode::ReadOnly,
            (run, own) => own.unwrap_or(run),
        };
        // Its file writes touch only its own worktree: they run unasked, and the diff is what
        // the person is asked about.
        if scratch.is_some() && mode == PermissionMode::Ask {
            mode = PermissionMode::AcceptEdits;
        }
        let mut writable = parent.writable.clone();
        let (root, checkpoints) = match &scratch {
            Some(scratch) => {
                // Its worktree's own repository only, not the parent's (a `--worktree` run's):
                // the repository's objects, hooks and config stay out of its commands' reach
                // (the checkout's root may not even hold them).
                writable = scratch.admin.iter().cloned().collect();
                let root = scratch.root().to_path_buf();
                // The id `Worktree::remove` drops the store by when the worktree goes.
                let own = crate::checkpoint::worktree_store_id(&scratch.worktree.run_id);
                let store = CheckpointStore::new(layout, &own, &root);
                (root, Arc::new(store))
            }
            None => (parent.root.clone(), Arc::clone(&parent.checkpoints)),
        };
        let runner = ToolRunner {
            root: root.clone(),
            policy: parent.policy.with_mode(mode),
            checkpoints,
            bus: bus.clone(),
            writable,
            tools: Arc::default(),
            ..parent.clone()
        };
        let (own, own_meter);
        let (provider, meter) = match &definition.model {
            None => (self.provider, self.meter),
            Some(model) => match self.provider_for(model) {
                Ok((provider, config)) => {
                    own = provider;
                    own_meter =
                        self.meter
                            .for_model(config.kind.name(), &config.model, &config.api_model);
                    (&own, &own_meter)
                }
                Err(why) => {
                    return failed(format!(
                        "agent `{}`: model `{model}`: {why}",
                        definition.name
                    ));
                }
            },
        };
        let agent = Agent {
            provider,
            runner: &runner,
            meter,
            bus,
            instructions: self.instructions.clone(),
            subagents: None,
        };
        let base = match definition.prompt.as_str() {
            "" => SUBAGENT_PROMPT.to_string(),
            own => format!("{SUBAGENT_PROMPT}\n{own}\n"),
        };
        let system =
            crate::instructions::system_prompt(&base, &root, agent.instructions.as_deref());
        let max_turns = definition.max_turns.unwrap_or(self.settings.max_turns);
        let spec = TurnSpec {
            system: &system,
            tools: &definition.tools,
            packages: false,
            submit: None,
            stage: "agent",
            iteration: 1,
            max_turns,
            text_route: TextRoute::Reasoning,
        };
        let mut messages = vec![Message::User {
            text: prompt,
            images: Vec::new(),
        }];
        let answer =
            match tokio::time::timeout(self.timeout, agent.converse(&mut messages, &spec)).await {
                Ok(Ok(outcome)) => outcome.text.replace('\u{0}', ""),
                Ok(Err(AgentError::TurnLimit(turns))) => {
                    return failed(format!(
                        "subagent {id} ({}) did not finish within its {turns} turns (maxTurns)",
                        definition.name
                    ));
                }
                Ok(Err(error)) => {
                    return failed(format!(
                        "subagent {id} ({}) failed: {error}",
                        definition.name
                    ));
                }
                Err(_) => {
                    return Delegated {
                        status: ToolStatus::Timeout,
                        output: format!(
                            "subagent {id} ({}) was stopped after {} s (agentTimeoutSecs)",
                            definition.name,
                            self.timeout.as_secs()
                        ),
                        changed_files: None,
                    };
                }
            };
        let answer = if answer.trim().is_empty() {
            "(the subagent gave no answer)".to_string()
        } else {
            answer
        };
        match &scratch {
            Some(scratch) => self.bring_back(scratch, answer, bus).await,
            None => Delegated {
                status: ToolStatus::Ok,
                output: answer,
                changed_files: None,
            },
        }
    }

    /// A writing subagent's changes, applied to the checkout through the parent's runner (the
    /// permission policy, a checkpoint, the write), named by the `agent` call.
    async fn bring_back(&self, scratch: &Scratch, answer: String, bus: &Bus) -> Delegated {
        let parent = self.parent;
        let changes = match crate::blocking::atomic(|| scratch.changes(&parent.root)) {
            Ok(changes) => changes,
            Err(why) => {
                return Delegated {
                    status: ToolStatus::Error,
                    output: format!("{answer}\n\n[Its changes were not applied: {why}]"),
                    changed_files: None,
                };
            }
        };
        if changes.is_empty() {
            return Delegated {
                status: ToolStatus::Ok,
                output: answer,
                changed_files: None,
            };
        }
        let call_id = bus
            .agent()
            .map(|a| a.parent_call.clone())
            .unwrap_or_default();
        match parent
            .write_changes(&call_id, Builtin::WriteFile, &changes)
            .await
        {
            Ok(files) => Delegated {
                status: ToolStatus::Ok,
                output: format!(
                    "{answer}\n\n[Its changes were applied: {}]",
                    files.join(", ")
                ),
                changed_files: Some(files),
            },
            Err((status, why)) => Delegated {
                status,
                output: format!("{answer}\n\n[Its changes were not applied: {why}]"),
                changed_files: None,
            },
        }
    }

    /// A provider for a definition's `model` (resolved as `/model` resolves a name): the
    /// run's provider, endpoint and key with that model. A name of another provider (`p/m`,
    /// or an alias of one) is refused: a definition (a project's needs no approval when it
    /// only reads) must not send the project's files to a service the person did not choose.
    fn provider_for(&self, model: &str) -> Result<(Provider, ProviderConfig), String> {
        let run = &self.settings.provider;
        let resolved =
            crate::session::resolve_model_from_env(run, model).map_err(|e| e.to_string())?;
        if resolved.kind != run.kind {
            return Err(format!(
                "it is a model of {}, and a subagent uses the run's provider ({})",
                resolved.kind.name(),
                run.kind.name()
            ));
        }
        let config = ProviderConfig {
            model: resolved.model,
            api_model: resolved.api_model,
            ..run.clone()
        };
        let provider = Provider::new(config.clone()).map_err(|e| e.to_string())?;
        provider.check_credentials().map_err(|e| e.to_string())?;
        Ok((provider, config))
    }
}

fn failed(output: String) -> Delegated {
    Delegated {
        status: ToolStatus::Error,
        output,
        changed_files: None,
    }
}
