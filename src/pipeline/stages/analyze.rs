//! static_analyzer: the project's real analyzers as `run_command` executions, then the model
//! triages their output; a high-severity finding fails the stage.

use serde_json::json;

use super::{READ_ONLY, StageOutcome, submit};
use crate::agent::AgentError;
use crate::pipeline::runner::Iteration;
use crate::pipeline::schema::{FindingsSubmission, SubmitTool};
use crate::pipeline::{Ctx, detect};
use crate::protocol::events::ToolStatus;
use crate::protocol::stage::Stage;
use crate::protocol::{Event, WarningCode};
use crate::provider::ToolCallRequest;
use crate::tools::ToolName;

const PROMPT: &str = include_str!("../../../assets/prompts/static_analyzer.md");
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
    for command in &commands {
        let call = ToolCallRequest {
            id: ctx.call_id("static_analyzer"),
            name: "run_command".into(),
            arguments: json!({"command": command, "timeout_ms": 600_000}).to_string(),
        };
        let reply = runner.execute(&call, &[ToolName::RunCommand]).await;
        if matches!(reply.status, ToolStatus::Denied | ToolStatus::Blocked) {
            refused.push(command.clone());
            continue;
        }
        let (output, _) = crate::tools::cap_output(&reply.content, MAX_REPORT);
        report.push_str(&format!("$ {command}\n{output}\n\n"));
    }
    if !refused.is_empty() {
        // Saying "no findings" for an analyzer that never ran would be a lie.
        ctx.bus.emit(Event::warning(
            WarningCode::AnalyzerRefused,
            format!(
                "the permission policy refused {}; their findings are missing",
                refused.join(", ")
            ),
        ));
    }
    if report.is_empty() {
        return Ok(StageOutcome::Done {
            detail: Some("no analyzer ran: the permission policy refused them".into()),
        });
    }
    let change = it.diff(ctx).await;
    let user = format!(
        "Request:\n{}\n\nChange:\n{}\n\nAnalyzer output:\n{report}",
        it.request, change
    );
    let submission = submit::<FindingsSubmission>(
        ctx,
        Stage::StaticAnalyzer.name(),
        it.number,
        SubmitTool::Analysis,
        &READ_ONLY,
        PROMPT,
        user,
    )
    .await?;
    Ok(super::audit::judge_findings(submission, "analyzer"))
}
