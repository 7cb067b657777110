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
    /// The stage cannot succeed however often it runs: the environment cannot run its command
    /// (`environment`: exit 126 or 127), or the code writer would not submit. The pipeline
    /// stops at once with the reason.
    Stuck {
        detail: String,
        environment: bool,
    },
    /// The code writer found nothing to change and answered: the pipeline ends with that answer.
    Answered {
        answer: String,
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

/// A model stage's submission, or how it ended without one.
pub enum Submitted<T> {
    Valid(String, T),
    /// Submitted, but not as the schema says: another try may do better.
    Malformed(String),
    /// Not submitted: why, the model's last prose, and whether the turns ran out.
    Missing {
        detail: String,
        text: String,
        turn_limit: bool,
    },
}

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
    let submitted = submit_or_answer(
        ctx,
        StageCall {
            stage,
            iteration,
            submit_tool,
            tools,
            system,
            may_answer: false,
        },
        user,
    )
    .await?;
    Ok(match submitted {
        Submitted::Valid(id, value) => Ok((id, value)),
        Submitted::Malformed(detail) | Submitted::Missing { detail, .. } => Err(detail),
    })
}

/// What a model stage is: its name, tools, prompt and submit tool.
pub struct StageCall<'a> {
    pub stage: &'a str,
    pub iteration: u32,
    pub submit_tool: SubmitTool,
    pub tools: &'a [ToolName],
    pub system: &'a str,
    /// The model is told it may answer in prose instead of submitting when there is nothing to
    /// submit (the code writer, for a request that needs no change).
    pub may_answer: bool,
}

/// As [`submit`], telling a missing submission from a malformed one.
pub async fn submit_or_answer<T: DeserializeOwned>(
    ctx: &Ctx<'_>,
    call: StageCall<'_>,
    user: String,
) -> Result<Submitted<T>, AgentError> {
    let StageCall {
        stage,
        iteration,
        submit_tool,
        tools,
        system,
        may_answer,
    } = call;
    let spec = submit_spec(submit_tool);
    let submit_name = submit_tool.as_str();
    let ending = if may_answer {
        format!(
            "End by calling {submit_name} exactly once. If the request needs no change to the \
             files (it is a question, or the code already does what it asks), do not call \
             {submit_name}: answer in plain text instead, and that answer ends the run."
        )
    } else {
        format!("End by calling {submit_name} exactly once.")
    };
    let system = format!(
        "{}\n{ending}\n",
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
            return Ok(Submitted::Missing {
                detail: format!("the model did not call {submit_name} within {n} turns"),
                text: String::new(),
                turn_limit: true,
            });
        }
        Err(other) => return Err(other),
    };
    if !outcome.text.is_empty() && !outcome.text.ends_with('\n') {
        // Keep the stage's prose apart from the next marker or status line.
        ctx.bus.emit(crate::protocol::Event::reasoning("\n"));
    }
    let Some((id, raw)) = outcome.submitted else {
        return Ok(Submitted::Missing {
            detail: format!("the model ended the stage without calling {submit_name}"),
            text: outcome.text,
            turn_limit: false,
        });
    };
    Ok(match decode::<T>(&spec, &raw) {
        Ok(value) => Submitted::Valid(id, value),
        Err(detail) => Submitted::Malformed(detail),
    })
}
