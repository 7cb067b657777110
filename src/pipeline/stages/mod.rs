//! The six stages. Model-backed stages share one driver: a short conversation with the stage's
//! tools plus its typed submit tool, whose arguments are validated against the schema.

pub mod analyze;
pub mod audit;
pub mod test_run;
pub mod verify;
pub mod write;

use serde::de::DeserializeOwned;

use super::Ctx;
use super::schema::{SubmitTool, decode, submit_spec};
use crate::agent::{AgentError, TextRoute, TurnSpec};
use crate::provider::Message;
use crate::tools::ToolName;

/// Read-only tools of the reviewing stages.
pub const READ_ONLY: [ToolName; 3] = [
    ToolName::ReadFile,
    ToolName::ListFiles,
    ToolName::SearchFiles,
];

/// How a stage ended, when the run itself goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageOutcome {
    Done {
        detail: Option<String>,
    },
    /// The stage failed; `evidence` is what the next iteration's code writer is told.
    Failed {
        detail: String,
        evidence: String,
    },
    /// The stage failed in a way no later iteration can mend (the permission policy refused
    /// its writes), so the pipeline stops instead of spending more model requests.
    Refused {
        detail: String,
    },
}

impl StageOutcome {
    pub fn failed(detail: impl Into<String>) -> StageOutcome {
        let detail = detail.into();
        StageOutcome::Failed {
            evidence: detail.clone(),
            detail,
        }
    }
}

/// A model stage's submission: the call id and the decoded arguments, or why there is none.
pub type Submission<T> = Result<(String, T), String>;

/// Ask the model for one stage's typed output. Provider and budget failures end the run
/// (`Err`); a missing or malformed submission is the stage's failure (`Ok(Err)`).
pub async fn submit<T: DeserializeOwned>(
    ctx: &Ctx<'_>,
    stage: &str,
    iteration: u32,
    submit_tool: SubmitTool,
    tools: &[ToolName],
    system: &str,
    user: String,
) -> Result<Submission<T>, AgentError> {
    let spec = submit_spec(submit_tool);
    let submit_name = submit_tool.as_str();
    let system = format!(
        "{}\nEnd by calling {submit_name} exactly once.\n",
        crate::instructions::system_prompt(system, ctx.root(), ctx.agent.instructions.as_deref())
    );
    let mut messages = vec![Message::User {
        text: user,
        images: Vec::new(),
    }];
    let turn = TurnSpec {
        system: &system,
        tools,
        // DECISIONS: the stages with the real tools get the package tools too.
        packages: tools == ToolName::ALL.as_slice(),
        submit: Some(&spec),
        stage,
        iteration,
        max_turns: ctx.settings.max_turns,
        text_route: TextRoute::Reasoning,
    };
    let outcome = match ctx.agent.converse(&mut messages, &turn).await {
        Ok(outcome) => outcome,
        Err(AgentError::TurnLimit(n)) => {
            return Ok(Err(format!(
                "the model did not call {submit_name} within {n} turns"
            )));
        }
        Err(other) => return Err(other),
    };
    if !outcome.text.is_empty() && !outcome.text.ends_with('\n') {
        // Keep the stage's prose apart from the next marker or status line.
        ctx.bus.emit(crate::protocol::Event::reasoning("\n"));
    }
    let Some((id, raw)) = outcome.submitted else {
        return Ok(Err(format!(
            "the model ended the stage without calling {submit_name}"
        )));
    };
    Ok(decode::<T>(&spec, &raw).map(|value| (id, value)))
}
