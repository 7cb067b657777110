//! code_writer and test_generator: the real tools under the permission policy, then a typed
//! submission whose files are applied through the same policy, checkpointed first.

use super::{StageCall, StageOutcome, Submitted, not_submitted, submit};
use crate::agent::AgentError;
use crate::confine::change::FileChange;
use crate::hooks::{self, tool::HookedTool, tool::Pre};
use crate::pipeline::Ctx;
use crate::pipeline::runner::Iteration;
use crate::pipeline::schema::{FilesSubmission, SubmitTool, SubmittedFile, decode, submit_spec};
use crate::protocol::Builtin;
use crate::protocol::Event;
use crate::protocol::events::ToolStatus;
use crate::protocol::stage::Stage;
use crate::tools::fs::plan_file;

const CODE_PROMPT: &str = include_str!("../../../../../assets/prompts/code_writer.md");
const TESTS_PROMPT: &str = include_str!("../../../../../assets/prompts/test_generator.md");

pub async fn code_writer(ctx: &Ctx<'_>, it: &mut Iteration) -> Result<StageOutcome, AgentError> {
    let mut user = format!("Request:\n{}\n", it.request);
    if let Some(feedback) = &it.feedback {
        user.push_str(&format!(
            "\nThe previous iteration failed. Fix this:\n{feedback}\n"
        ));
    }
    let outcome = write_stage(
        ctx,
        it,
        Stage::CodeWriter,
        SubmitTool::Code,
        CODE_PROMPT,
        user,
    )
    .await?;
    Ok(match outcome {
        Ok((summary, written)) => {
            it.code_summary = Some(summary);
            StageOutcome::Done {
                detail: Some(written_detail(&written)),
            }
        }
        Err(failure) => failure,
    })
}

pub async fn test_generator(ctx: &Ctx<'_>, it: &mut Iteration) -> Result<StageOutcome, AgentError> {
    let user = format!(
        "Request:\n{}\n\nWhat the code writer did:\n{}\n\nWrite or update the tests that check this change.\n",
        it.request,
        it.code_summary.as_deref().unwrap_or("(no summary)")
    );
    let outcome = write_stage(
        ctx,
        it,
        Stage::TestGenerator,
        SubmitTool::Tests,
        TESTS_PROMPT,
        user,
    )
    .await?;
    Ok(match outcome {
        Ok((summary, written)) => {
            it.tests_summary = Some(summary);
            StageOutcome::Done {
                detail: Some(written_detail(&written)),
            }
        }
        Err(failure) => failure,
    })
}

/// Run the conversation and apply the submitted files; the summary, or the failed outcome.
async fn write_stage(
    ctx: &Ctx<'_>,
    it: &mut Iteration,
    stage: Stage,
    submit_tool: SubmitTool,
    system: &str,
    user: String,
) -> Result<Result<(String, Vec<String>), StageOutcome>, AgentError> {
    let code_writer = stage == Stage::CodeWriter;
    let checkpoints_before = ctx.agent.runner.checkpoints.saved();
    let submission = submit::<FilesSubmission>(
        ctx,
        StageCall {
            stage: stage.name(),
            iteration: it.number,
            submit_tool,
            tools: &crate::tools::REAL_TOOLS,
            system,
            may_answer: code_writer,
        },
        user,
    )
    .await?;
    let (id, submitted) = match submission {
        Submitted::Valid(id, submitted) => (id, submitted),
        Submitted::Malformed(detail) => return Ok(Err(StageOutcome::failed(detail))),
        Submitted::Missing {
            detail,
            text,
            turn_limit,
        } => {
            let wrote = ctx.agent.runner.checkpoints.saved() > checkpoints_before;
            return Ok(Err(unsubmitted(
                it,
                stage,
                Missing {
                    detail,
                    text,
                    turn_limit,
                    wrote,
                },
            )));
        }
    };
    // A submission is a tool call too: its `PreToolUse` hooks may refuse or change it, and
    // each of its files is a write, for the hooks on `Write` (as Claude Code's guards expect).
    let raw = ctx.output().unwrap_or_default();
    let tool = submit_tool.as_str();
    let write = crate::tools::registry::hooked(Builtin::WriteFile);
    let (args, changed, permission) =
        match hooks::tool::pre_tool(ctx.bus, ctx.root(), &id, HookedTool::own(tool), raw).await {
            Pre::Refused(reason) => return Ok(Err(StageOutcome::failed(reason))),
            Pre::Run {
                args,
                changed,
                permission,
            } => (args, changed, permission),
        };
    let (args, changed, permission) =
        match hooks::tool::pre_files(ctx.bus, ctx.root(), &id, tool, write, args, permission).await
        {
            Pre::Refused(reason) => return Ok(Err(StageOutcome::failed(reason))),
            Pre::Run {
                args,
                changed: file_changed,
                permission,
            } => (args, changed || file_changed, permission),
        };
    let submitted = if changed {
        match decode::<FilesSubmission>(&submit_spec(submit_tool), &args.to_string()) {
            Ok(changed) => {
                ctx.set_output(Some(args));
                changed
            }
            Err(error) => {
                return Ok(Err(StageOutcome::failed(format!(
                    "a PreToolUse hook changed the {tool} submission into one it does not \
                     take ({error}); it was not applied"
                ))));
            }
        }
    } else {
        submitted
    };
    // Planning reads each file's current contents: off the runtime's threads.
    let changes = match crate::blocking::atomic(|| plan_files(ctx, &submitted.files)) {
        Ok(changes) => changes,
        Err(detail) => return Ok(Err(StageOutcome::failed(detail))),
    };
    if changes.is_empty() {
        return Ok(Ok((submitted.summary, Vec::new())));
    }
    let hooked = hooks::tool::CallHooks {
        call: hooks::tool::call_fields(
            ctx.root(),
            HookedTool::own(tool),
            &ctx.output().unwrap_or_default(),
        ),
        permission,
    };
    let writing = ctx
        .agent
        .runner
        .write_changes(&id, submit_tool.builtin(), &changes);
    match hooks::tool::CALL.scope(hooked, writing).await {
        Ok(written) => {
            // What `PostToolUse` hooks say of a submission is in their `hook` events: the
            // conversation is over (a `StageEnd` hook is how a stage is failed).
            let response = serde_json::json!({"success": true, "changedFiles": written});
            let input = ctx.output().unwrap_or_default();
            let own = HookedTool::own(tool);
            let _ = hooks::tool::post_tool(ctx.bus, ctx.root(), &id, own, &input, response).await;
            hooks::tool::post_files(ctx.bus, ctx.root(), &id, tool, write, &input).await;
            Ok(Ok((submitted.summary, written)))
        }
        Err((status, reason)) => {
            if status == ToolStatus::Denied {
                // docs/stream-json.md: a denied call ends with a `denied` tool_result; a submission that
                // is applied keeps the envelope rule (no tool_result).
                ctx.bus.emit(Event::ToolResult {
                    id: id.clone(),
                    status,
                    output: reason.clone(),
                    truncated: false,
                    changed_files: None,
                    display: None,
                });
            }
            let detail = format!(
                "{} could not be applied ({}): {reason}",
                submit_tool.as_str(),
                status_name(status)
            );
            Ok(Err(if status == ToolStatus::Denied {
                StageOutcome::Refused {
                    detail: format!(
                        "{detail}; allow writes with --permission-mode accept-edits or auto"
                    ),
                }
            } else {
                StageOutcome::failed(detail)
            }))
        }
    }
}

/// A writing stage that ended without its submit tool.
struct Missing {
    detail: String,
    text: String,
    turn_limit: bool,
    /// Whether its tools wrote files (a checkpoint was saved).
    wrote: bool,
}

/// A writing stage that ended without its submit tool. Its tool writes are its change when it
/// made some; a code writer's prose is the answer when it changed nothing in the first
/// iteration (the request needed no change); otherwise no iteration would do better (it was
/// told to submit, the failure too, and did not), so the pipeline stops instead of retrying.
fn unsubmitted(it: &mut Iteration, stage: Stage, missing: Missing) -> StageOutcome {
    let Missing {
        detail,
        text,
        turn_limit,
        wrote,
    } = missing;
    let answer = text.trim();
    if wrote && !turn_limit {
        let summary = Some(answer.to_string());
        let submit_tool = if stage == Stage::CodeWriter {
            it.code_summary = summary;
            SubmitTool::Code
        } else {
            it.tests_summary = summary;
            SubmitTool::Tests
        };
        return StageOutcome::Done {
            detail: Some(format!(
                "changed files with its tools, without {}",
                submit_tool.as_str()
            )),
        };
    }
    if stage == Stage::CodeWriter && !wrote && !turn_limit && it.number == 1 && !answer.is_empty() {
        return StageOutcome::Answered {
            answer: answer.to_string(),
        };
    }
    not_submitted(detail, answer, turn_limit)
}

fn written_detail(written: &[String]) -> String {
    if written.is_empty() {
        "no files submitted".into()
    } else {
        format!("wrote {}", written.join(", "))
    }
}

fn status_name(status: ToolStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "error".into())
}

/// Turn submitted files into planned changes, confined to the working root.
fn plan_files(ctx: &Ctx<'_>, files: &[SubmittedFile]) -> Result<Vec<FileChange>, String> {
    let mut changes = Vec::new();
    for file in files {
        let after = match (&file.content, file.delete) {
            (None, true) => None,
            (Some(content), false) => Some(content.clone().into_bytes()),
            (Some(_), true) => {
                return Err(format!(
                    "submitted file `{}` has both content and delete",
                    file.path
                ));
            }
            (None, false) => {
                return Err(format!(
                    "submitted file `{}` has neither content nor delete: true",
                    file.path
                ));
            }
        };
        let change =
            plan_file(ctx.root(), &file.path, after).map_err(|e| format!("submitted {e}"))?;
        changes.push(change);
    }
    Ok(changes)
}
