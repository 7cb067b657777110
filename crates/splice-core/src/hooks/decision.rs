//! What a hook's end means, as Claude Code defines it. Exit 0 goes on, and its stdout may be a
//! JSON object that decides (`continue`/`stopReason`, `decision`/`reason`, `systemMessage`,
//! `hookSpecificOutput` with `permissionDecision`, `permissionDecisionReason`, `updatedInput`,
//! `additionalContext`, or a permission request's `decision.behavior`); plain stdout of
//! `UserPromptSubmit` and `SessionStart` is context for the model. Exit 2 blocks, with stderr as
//! the reason (stdout is then ignored). Any other end is an error shown to the person, and the
//! session goes on.

use serde_json::Value;

use super::event::HookEvent;
use super::process::{Ended, Ran};

/// A hook's say on a permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Permission {
    /// Skip the prompt (rules that deny still deny).
    Allow(String),
    /// Ask the person even where the policy would allow.
    Ask(String),
}

/// What one hook decided; empty when it just let things go on.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Blocked (denied), with the reason.
    pub block: Option<String>,
    pub permission: Option<Permission>,
    pub updated_input: Option<Value>,
    /// Text for the model.
    pub context: Option<String>,
    /// `continue: false`: stop, with the reason shown to the person.
    pub stop: Option<String>,
    /// A non-blocking error, for the person.
    pub error: Option<String>,
    /// `systemMessage`: for the person.
    pub message: Option<String>,
}

/// What `ran`, a hook of `event`, decided.
pub fn read(event: HookEvent, ran: &Ran) -> Outcome {
    let stderr = ran.stderr.trim();
    match &ran.ended {
        // An answer too long to read whole cannot be read at all: a decision cut off could
        // be a block. Where the event can block, that fails closed.
        Ended::Exited(Some(0)) if ran.stdout_cut && ran.stdout.trim_start().starts_with('{') => {
            let why = format!(
                "printed an answer longer than {} KiB, which was not read",
                super::process::MAX_STREAM_BYTES / 1024
            );
            if event.can_block() {
                Outcome {
                    block: Some(format!("a hook's answer could not be read: it {why}")),
                    ..Outcome::default()
                }
            } else {
                Outcome {
                    error: Some(why),
                    ..Outcome::default()
                }
            }
        }
        Ended::Exited(Some(0)) => read_stdout(event, ran.stdout.trim()),
        Ended::Exited(Some(2)) if event.can_block() => Outcome {
            block: Some(if stderr.is_empty() {
                "blocked by a hook (exit code 2, nothing on stderr)".to_string()
            } else {
                stderr.to_string()
            }),
            ..Outcome::default()
        },
        Ended::Exited(code) => Outcome {
            error: Some(match code {
                Some(code) => with_detail(format!("exited with code {code}"), stderr),
                None => with_detail("was killed by a signal".into(), stderr),
            }),
            ..Outcome::default()
        },
        Ended::TimedOut => Outcome {
            error: Some("timed out and was killed, with everything it started".to_string()),
            ..Outcome::default()
        },
        Ended::NotStarted(why) => Outcome {
            error: Some(format!("could not run: {why}")),
            ..Outcome::default()
        },
    }
}

fn with_detail(what: String, stderr: &str) -> String {
    if stderr.is_empty() {
        what
    } else {
        format!("{what}: {stderr}")
    }
}

fn read_stdout(event: HookEvent, stdout: &str) -> Outcome {
    let json = stdout
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(stdout).ok())
        .flatten();
    let Some(json) = json else {
        // Plain text is context where the model reads it; elsewhere it is only logged.
        let context = matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            && !stdout.is_empty();
        return Outcome {
            context: context.then(|| stdout.to_string()),
            ..Outcome::default()
        };
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    let specific = json.get("hookSpecificOutput");
    let field = |name: &str| specific.and_then(|s| s.get(name));
    let mut outcome = Outcome {
        message: text(json.get("systemMessage")),
        context: text(field("additionalContext")).filter(|c| !c.is_empty()),
        ..Outcome::default()
    };
    if json.get("continue") == Some(&Value::Bool(false)) {
        outcome.stop = Some(
            text(json.get("stopReason")).unwrap_or_else(|| "a hook said not to continue".into()),
        );
    }
    let reason = text(json.get("reason"));
    match json.get("decision").and_then(Value::as_str) {
        Some("block") if event.can_block() => {
            outcome.block = Some(reason.clone().unwrap_or_else(|| "blocked by a hook".into()));
        }
        // The older PreToolUse words: `approve` allows.
        Some("approve") if event == HookEvent::PreToolUse => {
            outcome.permission = Some(Permission::Allow(reason.clone().unwrap_or_default()));
        }
        _ => {}
    }
    let decision_reason = text(field("permissionDecisionReason"))
        .or(reason)
        .unwrap_or_default();
    match field("permissionDecision").and_then(Value::as_str) {
        Some("deny") => {
            outcome.block = Some(if decision_reason.is_empty() {
                "denied by a hook".into()
            } else {
                decision_reason
            });
        }
        Some("allow") => outcome.permission = Some(Permission::Allow(decision_reason)),
        Some("ask") => outcome.permission = Some(Permission::Ask(decision_reason)),
        _ => {}
    }
    // A permission request's answer: `decision: {behavior, message}`.
    if let Some(decision) = field("decision") {
        let message = text(decision.get("message")).unwrap_or_default();
        match decision.get("behavior").and_then(Value::as_str) {
            Some("deny") => {
                outcome.block = Some(if message.is_empty() {
                    "denied by a hook".into()
                } else {
                    message
                });
            }
            Some("allow") => outcome.permission = Some(Permission::Allow(message)),
            _ => {}
        }
    }
    if let Some(input) = field("updatedInput").filter(|v| !v.is_null()) {
        outcome.updated_input = Some(input.clone());
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            ended: Ended::Exited(Some(code)),
            stdout: stdout.into(),
            stderr: stderr.into(),
            stdout_cut: false,
        }
    }

    #[test]
    fn exit_codes_decide_as_in_claude_code() {
        let blocked = read(
            HookEvent::PreToolUse,
            &ran(2, "{\"decision\":\"approve\"}", "no rm\n"),
        );
        assert_eq!(blocked.block.as_deref(), Some("no rm"));
        assert_eq!(blocked.permission, None);
        let failed = read(HookEvent::PreToolUse, &ran(1, "", "broken"));
        assert_eq!(failed.error.as_deref(), Some("exited with code 1: broken"));
        assert_eq!(failed.block, None);
        // Exit 2 where nothing can be blocked is an error shown to the person.
        let end = read(HookEvent::SessionEnd, &ran(2, "", "x"));
        assert!(end.block.is_none() && end.error.is_some());
        let context = read(HookEvent::UserPromptSubmit, &ran(0, "use tabs\n", ""));
        assert_eq!(context.context.as_deref(), Some("use tabs"));
        assert_eq!(
            read(HookEvent::PostToolUse, &ran(0, "done\n", "")),
            Outcome::default()
        );
    }

    #[test]
    fn json_output_decides() {
        let out = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "allow", "updatedInput": {"command": "ls -a"}}});
        let outcome = read(HookEvent::PreToolUse, &ran(0, &out.to_string(), ""));
        assert_eq!(outcome.permission, Some(Permission::Allow(String::new())));
        assert_eq!(outcome.updated_input, Some(json!({"command": "ls -a"})));
        let out = json!({"hookSpecificOutput": {"permissionDecision": "deny",
            "permissionDecisionReason": "not here"}});
        let outcome = read(HookEvent::PreToolUse, &ran(0, &out.to_string(), ""));
        assert_eq!(outcome.block.as_deref(), Some("not here"));
        let out = json!({"decision": "block", "reason": "tests fail"});
        assert_eq!(
            read(HookEvent::Stop, &ran(0, &out.to_string(), ""))
                .block
                .as_deref(),
            Some("tests fail")
        );
        let out = json!({"continue": false, "stopReason": "enough"});
        assert_eq!(
            read(HookEvent::PostToolUse, &ran(0, &out.to_string(), ""))
                .stop
                .as_deref(),
            Some("enough")
        );
        let out = json!({"hookSpecificOutput": {"decision": {"behavior": "allow"}}});
        assert_eq!(
            read(HookEvent::PermissionRequest, &ran(0, &out.to_string(), "")).permission,
            Some(Permission::Allow(String::new()))
        );
    }
}
