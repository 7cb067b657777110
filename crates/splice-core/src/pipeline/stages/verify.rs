//! acceptance_verifier: the model compares the request, the change and the test result and
//! submits a verdict; a rejection fails the stage.

use super::{StageCall, StageOutcome, submit};
use crate::agent::AgentError;
use crate::pipeline::Ctx;
use crate::pipeline::runner::Iteration;
use crate::pipeline::schema::{SubmitTool, Verdict};
use crate::protocol::stage::Stage;

const PROMPT: &str = include_str!("../../../../../assets/prompts/acceptance_verifier.md");

pub async fn acceptance_verifier(
    ctx: &Ctx<'_>,
    it: &mut Iteration,
) -> Result<StageOutcome, AgentError> {
    let change = it.diff(ctx).await;
    let user = format!(
        "Request:\n{}\n\nChange:\n{}\n\nTest result:\n{}\n",
        it.request,
        change,
        it.test_report.as_deref().unwrap_or("(no test run)")
    );
    let submission = submit::<Verdict>(
        ctx,
        StageCall::reviewing(
            Stage::AcceptanceVerifier.name(),
            it.number,
            SubmitTool::Verdict,
            PROMPT,
        ),
        user,
    )
    .await?;
    Ok(match submission.or_outcome() {
        Err(outcome) => outcome,
        Ok((_, verdict)) if verdict.accepted => StageOutcome::Done {
            detail: Some(format!("accepted: {}", verdict.reasons.join("; "))),
        },
        Ok((_, verdict)) => StageOutcome::Failed {
            detail: format!("rejected: {}", verdict.reasons.join("; ")),
            evidence: format!(
                "The acceptance verifier rejected the change:\n- {}",
                verdict.reasons.join("\n- ")
            ),
        },
    })
}
