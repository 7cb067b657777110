//! A turn whose text invokes a custom command (`/review src/parser.rs`) is expanded here, once
//! its text is read and before anything is sent: the body becomes the request, a
//! `` !`command` `` runs as a `run_command` call of the run (the permission policy decides,
//! a question is asked where the front end answers them and denied headless, the sandbox
//! confines what no person allowed), and `model` and `allowed-tools` are this run's settings
//! alone. A project's command runs its commands and gets its rules only once approved
//! ([`super::slash_trust`]); a command an argument was put into is judged without the file's
//! rules, since part of it is the invoker's text (an editor's attachment, pasted text).
//! Hooks (`UserPromptSubmit`) belong beside this: they see the expanded request.

use std::sync::Arc;

use serde_json::json;

use crate::bus::Bus;
use crate::checkpoint::CheckpointStore;
use crate::exit::Exit;
use crate::git::snapshot::Snapshot;
use crate::protocol::Builtin;
use crate::protocol::input::Prompt;
use crate::protocol::{ErrorCode, ToolStatus};
use crate::provider::ToolCallRequest;
use crate::run::{Request, RunFailure};
use crate::settings::RunSettings;
use crate::slash::{self, Catalog, SlashError};
use crate::tools::runner::ToolRunner;

/// The request `prompt` makes: itself, or the custom command it invokes expanded, with the
/// settings that command asks for this run.
pub(super) async fn prepare(
    settings: &RunSettings,
    bus: &Bus,
    prompt: Prompt,
) -> Result<Request, RunFailure> {
    let Some(invocation) = slash::invocation(&prompt.text) else {
        return Ok(prompt.into());
    };
    let root = settings.cwd.clone();
    let catalog = crate::blocking::detached(move || {
        Catalog::load(&root, slash::user_commands_dir().as_deref())
    })
    .await
    .unwrap_or_default();
    let command = catalog.lookup(invocation.name).map_err(failure)?;
    // The command's rules hold for its own commands and for the turn, and no longer.
    let allow = slash::allow_rules(command).map_err(failure)?;
    // Without the file's rules: for the approval question, and for a command an argument
    // was put into.
    let plain = ToolRunner {
        root: settings.cwd.clone(),
        policy: settings.policy.clone(),
        checkpoints: Arc::new(CheckpointStore::new(
            &settings.layout,
            bus.run_id(),
            &settings.cwd,
        )),
        bus: bus.clone(),
        writable: Vec::new(),
        gate: None,
        tools: Arc::default(),
    };
    let trusted = super::slash_trust::trusted(settings, bus, &plain, command).await;
    let mut turn = settings.clone();
    if let Some(model) = &command.matter.model {
        turn.provider = super::resolve_model_from_env(&settings.provider, model)
            .map_err(|e| RunFailure::usage(format!("/{}: model `{model}`: {e}", command.name)))?;
    }
    if trusted && !allow.is_empty() {
        turn.policy = settings
            .policy
            .with_extra_rules(settings.policy.mode, allow);
    }
    let runner = ToolRunner {
        policy: turn.policy.clone(),
        ..plain.clone()
    };
    let mut guard: Option<Snapshot> = None;
    let mut unrecorded: Option<String> = None;
    let mut calls = 0;
    let root = settings.cwd.as_path();
    let expanded = slash::expand(command, invocation.arguments, root, trusted, |command| {
        calls += 1;
        // A sandboxed command may write the git dir under the root: what it changes there
        // that makes git run programs is put back below, as a run's tools' changes are.
        if guard.is_none() && unrecorded.is_none() {
            match crate::git::common_dir(&settings.cwd).map(|dir| Snapshot::take(&dir)) {
                Some(Ok(taken)) => guard = Some(taken),
                Some(Err(error)) => unrecorded = Some(error.to_string()),
                None => {}
            }
        }
        // Fail closed: what could not be recorded could not be put back.
        let refused = unrecorded.as_ref().map(|error| {
            format!("Splice could not record the repository's git config and hooks ({error}), so it runs no command")
        });
        let call = ToolCallRequest {
            id: format!("slash_{}_{calls}", bus.run_id()),
            name: Builtin::RunCommand.as_str().to_string(),
            arguments: json!({ "command": command.text }).to_string(),
        };
        let runner = if command.with_arguments {
            &plain
        } else {
            &runner
        };
        async move {
            if let Some(refused) = refused {
                return Err(refused);
            }
            let reply = runner.execute(&call, &[Builtin::RunCommand]).await;
            match reply.status {
                ToolStatus::Ok => Ok(strip_status(&reply.content)),
                _ => Err(reply.content.replacen('\n', ": ", 1)),
            }
        }
    })
    .await;
    // As at a run's end: what the commands changed that makes git run programs is put back,
    // and the request is not sent when it cannot be.
    if let Some(guard) = guard {
        let restored = crate::blocking::atomic(|| guard.restore());
        let who = "a command of the custom command";
        crate::run::put_back_reporting(bus, &guard, who, restored).map_err(|message| {
            RunFailure::new(ErrorCode::GitConfigRestoreFailed, message, Exit::Failed)
        })?;
    }
    let text = expanded.map_err(failure)?;
    Ok(Request {
        prompt: Prompt { text, ..prompt },
        settings: Some(turn),
    })
}

/// A command's output without the status line `run_command` puts first (`exit code 0`).
fn strip_status(content: &str) -> String {
    match content.split_once('\n') {
        Some((_, output)) => output.to_string(),
        None => String::new(),
    }
}

/// The run's error for a command that could not be expanded: the person's request or command
/// file is wrong (a usage error), or a command in it failed or was denied.
fn failure(error: SlashError) -> RunFailure {
    match error {
        SlashError::Command { .. } => {
            RunFailure::new(ErrorCode::ToolError, error.to_string(), Exit::Failed)
        }
        _ => RunFailure::usage(error.to_string()),
    }
}
