//! test_runner: the repository's real test command (`--test-command`, or detected) as a
//! `run_command` execution; its exit code and failing output are the result.

use serde_json::json;

use super::{StageOutcome, Stuck, cannot_run};
use crate::pipeline::runner::Iteration;
use crate::pipeline::{Ctx, detect};
use crate::protocol::Builtin;
use crate::protocol::events::ToolStatus;
use crate::protocol::{Event, WarningCode};
use crate::provider::ToolCallRequest;

/// Failing output kept as evidence for the next iteration (the tail holds the summary).
const MAX_EVIDENCE: usize = 8 * 1024;

pub async fn test_runner(ctx: &Ctx<'_>, it: &mut Iteration) -> StageOutcome {
    let command = ctx
        .settings
        .pipeline
        .test_command
        .clone()
        .or_else(|| detect::test_command(ctx.root()));
    let Some(command) = command else {
        ctx.bus.emit(Event::warning(
            WarningCode::NoTestCommand,
            "no test command detected; pass --test-command to run the tests",
        ));
        it.test_report = Some("no test command detected; no tests were run".into());
        return StageOutcome::Done {
            detail: Some("no test command detected; nothing run".into()),
        };
    };
    let runner = ctx.runner_allowing(std::slice::from_ref(&command));
    let call = ToolCallRequest {
        id: ctx.call_id("test_runner"),
        name: Builtin::RunCommand.as_str().into(),
        arguments: json!({"command": command, "timeout_ms": 600_000}).to_string(),
    };
    let reply = runner.execute(&call, &[Builtin::RunCommand]).await;
    if matches!(reply.status, ToolStatus::Denied | ToolStatus::Blocked) {
        // Another iteration would be refused the same way: stop instead of retrying.
        return StageOutcome::Refused {
            detail: format!(
                "the test command `{command}` was refused: {}",
                reply.content
            ),
        };
    }
    let status_line = reply.content.lines().next().unwrap_or("").to_string();
    let (tail, _) = crate::tools::cap_output(&reply.content, MAX_EVIDENCE);
    it.test_report = Some(format!("$ {command}\n{tail}"));
    if !reply.is_error {
        return StageOutcome::Done {
            detail: Some(format!("`{command}` passed ({status_line})")),
        };
    }
    let summary = reply
        .content
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .to_string();
    if let Some(why) = cannot_run(reply.exit_code) {
        // The shell could not run the command (the sandbox refused it, it is not executable,
        // it is not installed): no change to the code mends that, so no iteration is spent.
        return StageOutcome::Stuck {
            detail: format!(
                "the test command `{command}` cannot run here ({status_line}: {why}): {summary}"
            ),
            cause: Stuck::Environment,
        };
    }
    StageOutcome::Failed {
        detail: format!("`{command}` failed ({status_line}): {summary}"),
        evidence: format!("The test command `{command}` failed:\n{tail}"),
    }
}
