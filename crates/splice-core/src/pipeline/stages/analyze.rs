//! static_analyzer: the project's real analyzers as `run_command` executions, then the model
//! triages their output; a high-severity finding fails the stage.

use serde_json::json;

use super::{StageCall, StageOutcome, cannot_run, submit};
use crate::agent::AgentError;
use crate::pipeline::runner::Iteration;
use crate::pipeline::schema::{FindingsSubmission, SubmitTool};
use crate::pipeline::{Ctx, detect};
use crate::protocol::Builtin;
use crate::protocol::events::ToolStatus;
use crate::protocol::stage::Stage;
use crate::protocol::{Event, WarningCode};
use crate::provider::ToolCallRequest;

const PROMPT: &str = include_str!("../../../../../assets/prompts/static_analyzer.md");
/// Analyzer output handed to the model, per command.
const MAX_REPORT: usize = 12 * 1024;

pub async fn static_analyzer(
    ctx: &Ctx<'_>,
    it: &mut Iteration,
) -> Result<StageOutcome, AgentError> {
    let commands = detect::analyzers(ctx.root());
    if commands.is_empty() {
        return Ok(StageOutcome::Done {
            detail: Some("no analyzer detected for this repository".into()),
        });
    }
    let runner = ctx.runner_allowing(&commands);
    let mut report = String::new();
    let mut refused = Vec::new();
    let mut unrunnable = Vec::new();
    for command in &commands {
        let call = ToolCallRequest {
            id: ctx.call_id("static_analyzer"),
            name: Builtin::RunCommand.as_str().into(),
            arguments: json!({"command": command, "timeout_ms": 600_000}).to_string(),
        };
        let reply = runner.execute(&call, &[Builtin::RunCommand]).await;
        if matches!(reply.status, ToolStatus::Denied | ToolStatus::Blocked) {
            refused.push(command.clone());
            continue;
        }
        let status_line = reply.content.lines().next().unwrap_or("");
        if let Some(why) = cannot_run(reply.exit_code).filter(|_| reply.is_error) {
            // Not installed, or refused by the sandbox: nothing for the model to triage, and
            // a "finding" about it would fail every iteration the same way.
            unrunnable.push(format!("`{command}` ({status_line}: {why})"));
            continue;
        }
        let (output, _) = crate::tools::cap_output(&reply.content, MAX_REPORT);
        report.push_str(&format!("$ {command}\n{output}\n\n"));
    }
    // Saying "no findings" for an analyzer that never ran would be a lie.
    let missing: Vec<String> = [
        (&refused, "the permission policy refused"),
        (&unrunnable, "could not run"),
    ]
    .iter()
    .filter(|(commands, _)| !commands.is_empty())
    .map(|(commands, what)| format!("{what} {}", commands.join(", ")))
    .collect();
    if !missing.is_empty() {
        ctx.bus.emit(Event::warning(
            WarningCode::AnalyzerRefused,
            format!("{}; their findings are missing", missing.join("; ")),
        ));
    }
    if report.is_empty() {
        let why = match (refused.is_empty(), unrunnable.is_empty()) {
            (false, true) => "the permission policy refused them",
            (true, false) => "none could run here",
            _ => "the permission policy refused some, and the others could not run here",
        };
        return Ok(StageOutcome::Done {
            detail: Some(format!("no analyzer ran: {why}")),
        });
    }
    let change = it.diff(ctx).await;
    let user = format!(
        "Request:\n{}\n\nChange:\n{}\n\nAnalyzer output:\n{report}",
        it.request, change
    );
    let submission = submit::<FindingsSubmission>(
        ctx,
        StageCall::reviewing(
            Stage::StaticAnalyzer.name(),
            it.number,
            SubmitTool::Analysis,
            PROMPT,
        ),
        user,
    )
    .await?;
    Ok(super::audit::judge_findings(submission, "analyzer"))
}
