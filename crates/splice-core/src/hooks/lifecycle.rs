//! The hooks of a session's moments other than tool calls: its start and a request
//! (`SessionStart`, `UserPromptSubmit`), a stop (`Stop`, `SubagentStop`), a stage's end
//! (`StageEnd`), a notification, a compaction and the session's end.

use serde_json::{Value, json};

use super::{HookEvent, Hooks, fields};
use crate::bus::Bus;
use crate::exit::Exit;
use crate::protocol::ErrorCode;
use crate::run::{Request, RunFailure};
use crate::settings::RunSettings;

/// Most `Stop` blocks in a row: the third ends the run anyway, with a warning.
pub const MAX_STOP_BLOCKS: u32 = 3;

/// A request about to be sent: the session's `SessionStart` hooks first (once a session),
/// then `UserPromptSubmit`, which sees the request as sent (a custom command expanded). Their
/// context is added to the request; a block ends the run with the hook's reason for the
/// person (`hook_blocked`), and the request is not sent.
pub async fn before_request(
    settings: &RunSettings,
    bus: &Bus,
    mut request: Request,
) -> Result<Request, RunFailure> {
    let Some(hooks) = bus.hooks() else {
        return Ok(request);
    };
    let mut context = Vec::new();
    if let Some(restarted) = hooks.settings.first_start() {
        let source = match restarted {
            Some(source) => source,
            None if settings.conversation.messages().is_empty() => "startup",
            None => "resume",
        };
        let verdict = hooks
            .fire(
                bus,
                HookEvent::SessionStart,
                &[source],
                fields(json!({ "source": source })),
                None,
            )
            .await;
        context.extend(verdict.context);
    }
    let verdict = hooks
        .fire(
            bus,
            HookEvent::UserPromptSubmit,
            &[],
            fields(json!({ "prompt": request.prompt.text })),
            None,
        )
        .await;
    if let Some(reason) = verdict.block.or(verdict.stop) {
        return Err(RunFailure::new(
            ErrorCode::HookBlocked,
            format!("a UserPromptSubmit hook blocked the request: {reason}"),
            Exit::Failed,
        ));
    }
    context.extend(verdict.context);
    if !context.is_empty() {
        let text = &mut request.prompt.text;
        text.push_str("\n\n");
        text.push_str(&context.join("\n\n"));
    }
    Ok(request)
}

/// What a stop's hooks decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopVerdict {
    /// End as the model meant to.
    End,
    /// Go on: this is for the model.
    Continue(String),
}

/// The `Stop` (or a subagent's `SubagentStop`) hooks, `blocks` being how many times in a row
/// they already sent the model back (they are told with `stop_hook_active`). The
/// [`MAX_STOP_BLOCKS`]th block in a row is not obeyed: the run ends with a warning instead,
/// so a hook cannot keep a run going for ever.
pub async fn stop(bus: &Bus, event: HookEvent, blocks: u32, last_message: &str) -> StopVerdict {
    let Some(hooks) = bus.hooks() else {
        return StopVerdict::End;
    };
    let verdict = hooks
        .fire(
            bus,
            event,
            &[],
            fields(json!({
                "stop_hook_active": blocks > 0,
                "last_assistant_message": last_message,
            })),
            None,
        )
        .await;
    match (verdict.stop, verdict.block) {
        (None, Some(reason)) if blocks + 1 < MAX_STOP_BLOCKS => StopVerdict::Continue(reason),
        (None, Some(reason)) => {
            bus.emit(crate::protocol::Event::warning(
                crate::protocol::WarningCode::StopHookLimit,
                format!(
                    "{event} hooks blocked {MAX_STOP_BLOCKS} stops in a row; the run ends anyway \
                     (last reason: {reason})"
                ),
            ));
            StopVerdict::End
        }
        _ => StopVerdict::End,
    }
}

/// The `StageEnd` hooks of a pipeline stage that ended (`passed` or not) with its typed
/// `output`. A block (exit 2, `decision: block`) fails the stage: the reason, for the next
/// iteration's code writer.
pub async fn stage_end(
    bus: &Bus,
    stage: &str,
    iteration: u32,
    passed: bool,
    detail: Option<&str>,
    output: Value,
) -> Option<String> {
    let hooks = bus.hooks()?;
    let verdict = hooks
        .fire(
            bus,
            HookEvent::StageEnd,
            &[stage],
            fields(json!({
                "stage": stage,
                "iteration": iteration,
                "status": if passed { "passed" } else { "failed" },
                "detail": detail,
                "output": output,
            })),
            None,
        )
        .await;
    verdict.block.or(verdict.stop)
}

/// `Notification` hooks: Splice is waiting for the person (a permission prompt).
pub async fn notify(bus: &Bus, kind: &str, message: &str) {
    if let Some(hooks) = bus.hooks() {
        hooks
            .fire(
                bus,
                HookEvent::Notification,
                &[kind],
                fields(json!({ "notification_type": kind, "message": message })),
                None,
            )
            .await;
    }
}

/// `PreCompact` hooks, before the conversation is compacted (`auto` or `manual`).
pub async fn pre_compact(bus: &Bus, trigger: &str) {
    if let Some(hooks) = bus.hooks() {
        hooks
            .fire(
                bus,
                HookEvent::PreCompact,
                &[trigger],
                fields(json!({ "trigger": trigger, "custom_instructions": "" })),
                None,
            )
            .await;
    }
}

/// `SessionEnd` hooks, once the session has ended (`reason`: why). Nothing they say can
/// change the session any more; what goes wrong is only logged.
pub async fn session_end(hooks: &Hooks, reason: &str) {
    let bus = Bus::new(crate::ids::new_run_id(), Vec::new());
    hooks
        .fire(
            &bus,
            HookEvent::SessionEnd,
            &[reason],
            fields(json!({ "reason": reason })),
            None,
        )
        .await;
}
