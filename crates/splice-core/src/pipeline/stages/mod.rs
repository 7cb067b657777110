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
use crate::protocol::Builtin;
use crate::protocol::ErrorCode;
use crate::provider::Message;

/// Read-only tools of the reviewing stages.
pub const READ_ONLY: [Builtin; 3] = [Builtin::ReadFile, Builtin::ListFiles, Builtin::SearchFiles];

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
    /// The stage cannot succeed however often it runs (see [`Stuck`]): the pipeline stops at
    /// once with the reason.
    Stuck {
        detail: String,
        cause: Stuck,
    },
    /// The code writer found nothing to change and answered: the pipeline ends with that answer.
    Answered {
        answer: String,
    },
}

/// Why a stage cannot succeed however often it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stuck {
    /// The environment cannot run the stage's command (exit 126: refused by the sandbox or not
    /// executable; 127: not found); no change to the code mends that.
    Environment,
    /// The model ended the stage without its submit tool, though told to call it.
    NoSubmission,
    /// The model used up `--max-turns` without submitting.
    TurnLimit,
}

impl Stuck {
    /// The error code of a run that ends this way.
    pub fn code(self) -> ErrorCode {
        match self {
            Stuck::Environment => ErrorCode::ToolError,
            Stuck::NoSubmission => ErrorCode::PipelineFailed,
            Stuck::TurnLimit => ErrorCode::TurnLimit,
        }
    }
}

/// Why a command that exited with `exit_code` (a tool reply's) could not run at all, by the
/// shell's conventions: 126, found but not runnable (also the sandbox's refusal), and 127, not
/// found.
pub fn cannot_run(exit_code: Option<i32>) -> Option<&'static str> {
    match exit_code? {
        crate::permissions::supervisor::CANNOT_RUN => {
            Some("the command could not be run: refused by the sandbox or not executable")
        }
        127 => Some("command not found"),
        _ => None,
    }
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

impl<T> Submitted<T> {
    /// For a stage that must submit: the submission, or the stage's outcome without one. A
    /// malformed submission fails the stage and the next iteration asks again; a missing one
    /// would be missing again (the same prompt to the same model, which was told to submit),
    /// so the stage is stuck.
    pub fn or_outcome(self) -> Result<(String, T), StageOutcome> {
        match self {
            Submitted::Valid(id, value) => Ok((id, value)),
            Submitted::Malformed(detail) => Err(StageOutcome::failed(detail)),
            Submitted::Missing {
                detail,
                text,
                turn_limit,
            } => Err(not_submitted(detail, &text, turn_limit)),
        }
    }

    /// The submission, or why there is none (the design plan's stages, which run once).
    pub fn valid(self) -> Result<(String, T), String> {
        match self {
            Submitted::Valid(id, value) => Ok((id, value)),
            Submitted::Malformed(detail) | Submitted::Missing { detail, .. } => Err(detail),
        }
    }
}

/// A stage that ended without its submission and cannot be helped by another iteration:
/// why, with the first line of what the model said instead.
pub fn not_submitted(detail: String, text: &str, turn_limit: bool) -> StageOutcome {
    let said = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(" (it said: {})", l.trim()))
        .unwrap_or_default();
    StageOutcome::Stuck {
        detail: format!("{detail}{said}; another iteration would not do better"),
        cause: if turn_limit {
            Stuck::TurnLimit
        } else {
            Stuck::NoSubmission
        },
    }
}

/// What a model stage is: its name, tools, prompt and submit tool.
pub struct StageCall<'a> {
    pub stage: &'a str,
    pub iteration: u32,
    pub submit_tool: SubmitTool,
    pub tools: &'a [Builtin],
    pub system: &'a str,
    /// The model is told it may answer in prose instead of submitting when there is nothing to
    /// submit (the code writer, for a request that needs no change).
    pub may_answer: bool,
}

impl<'a> StageCall<'a> {
    /// A stage with the read-only tools, which must submit.
    pub fn reviewing(
        stage: &'a str,
        iteration: u32,
        submit_tool: SubmitTool,
        system: &'a str,
    ) -> StageCall<'a> {
        StageCall {
            stage,
            iteration,
            submit_tool,
            tools: &READ_ONLY,
            system,
            may_answer: false,
        }
    }
}

/// Ask the model for one stage's typed output. Provider and budget failures end the run
/// (`Err`); otherwise the submission, or how the stage ended without a valid one.
pub async fn submit<T: DeserializeOwned>(
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
        // docs/stream-json.md: the stages with the real tools get the package tools too.
        packages: tools == crate::tools::REAL_TOOLS.as_slice(),
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
                detail: format!(
                    "the model did not call {submit_name} within {n} turns (raise --max-turns)"
                ),
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
        Ok(value) => {
            ctx.set_output(serde_json::from_str(&raw).ok());
            Submitted::Valid(id, value)
        }
        Err(error) => Submitted::Malformed(error.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::cannot_run;

    #[test]
    fn only_126_and_127_mean_the_command_cannot_run() {
        assert!(cannot_run(Some(126)).is_some());
        assert_eq!(cannot_run(Some(127)), Some("command not found"));
        assert_eq!(cannot_run(Some(1)), None);
        assert_eq!(cannot_run(None), None);
    }
}
