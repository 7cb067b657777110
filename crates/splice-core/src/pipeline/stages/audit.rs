//! security_auditor: the model reviews the change for injection, secrets, unsafe shell and
//! path traversal; a high-severity finding fails the stage.

use super::{StageCall, StageOutcome, Submitted, submit};
use crate::agent::AgentError;
use crate::pipeline::Ctx;
use crate::pipeline::runner::Iteration;
use crate::pipeline::schema::{FindingsSubmission, SubmitTool};
use crate::protocol::stage::Stage;

const PROMPT: &str = include_str!("../../../../../assets/prompts/security_auditor.md");

pub async fn security_auditor(
    ctx: &Ctx<'_>,
    it: &mut Iteration,
) -> Result<StageOutcome, AgentError> {
    let change = it.diff(ctx).await;
    let user = format!(
        "Request:\n{}\n\nChange to review:\n{}\n",
        it.request, change
    );
    let submission = submit::<FindingsSubmission>(
        ctx,
        StageCall::reviewing(
            Stage::SecurityAuditor.name(),
            it.number,
            SubmitTool::Audit,
            PROMPT,
        ),
        user,
    )
    .await?;
    Ok(judge_findings(submission, "security"))
}

/// Findings pass unless one is high; the high ones are the next iteration's evidence.
pub fn judge_findings(submission: Submitted<FindingsSubmission>, kind: &str) -> StageOutcome {
    let findings = match submission.or_outcome() {
        Ok((_, submitted)) => submitted.findings,
        Err(outcome) => return outcome,
    };
    let high: Vec<String> = findings
        .iter()
        .filter(|f| f.is_high())
        .map(|f| f.render())
        .collect();
    if high.is_empty() {
        return StageOutcome::Done {
            detail: Some(format!("{} {kind} finding(s), none high", findings.len())),
        };
    }
    StageOutcome::Failed {
        detail: format!(
            "{} high-severity {kind} finding(s): {}",
            high.len(),
            high[0]
        ),
        evidence: format!("High-severity {kind} findings:\n{}", high.join("\n")),
    }
}
