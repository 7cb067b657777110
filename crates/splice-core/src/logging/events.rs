//! What a run's events say in the log: every event passes the bus, so the run's start and end,
//! each tool call (name, outcome, duration), each permission decision and each error or warning
//! are logged here once, whatever the front end. Streamed text and a call's arguments are not:
//! the log says what happened, not what was said.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::protocol::Event;
use crate::protocol::events::ToolStatus;

/// Targets, so that `SPLICE_LOG=splice::tools=debug` picks by what happened, not by the module
/// that logs it.
const RUN: &str = "splice::run";
const TOOLS: &str = "splice::tools";
const PERMISSIONS: &str = "splice::permissions";

/// Most characters of a failed call's output kept in the log line.
const MAX_ERROR_CHARS: usize = 200;

/// The tool calls of one bus that have started and not finished, for their durations.
#[derive(Default)]
pub struct EventLog {
    open: Mutex<HashMap<String, (String, Instant)>>,
}

impl EventLog {
    pub fn record(&self, run: &str, event: &Event) {
        match event {
            Event::RunStart {
                provider, model, ..
            } => tracing::info!(target: RUN, run, provider, model, "run started"),
            Event::RunEnd { status, exit_code } => {
                tracing::info!(target: RUN, run, ?status, exit_code, "run ended");
            }
            Event::ToolCall { id, name, .. } => {
                if let Ok(mut open) = self.open.lock() {
                    open.insert(id.clone(), (name.clone(), Instant::now()));
                }
                tracing::debug!(target: TOOLS, run, id, tool = name, "tool call started");
            }
            Event::ToolResult {
                id, status, output, ..
            } => {
                let started = self.open.lock().ok().and_then(|mut open| open.remove(id));
                let (tool, ms) = match &started {
                    Some((name, at)) => (name.as_str(), at.elapsed().as_millis()),
                    None => ("?", 0),
                };
                if *status == ToolStatus::Ok {
                    tracing::info!(target: TOOLS, run, id, tool, ?status, ms, "tool call");
                } else {
                    let error = first_line(output);
                    tracing::warn!(target: TOOLS, run, id, tool, ?status, ms, error, "tool call failed");
                }
            }
            Event::PermissionDecision {
                id,
                name,
                action,
                decision_reason,
                ..
            } => {
                tracing::info!(target: PERMISSIONS, run, id, tool = name, action = action.as_str(), reason = decision_reason, "permission")
            }
            Event::Permission {
                id,
                name,
                action,
                reason,
                permission_mode,
                ..
            } => tracing::info!(
                target: PERMISSIONS,
                run,
                id,
                tool = name,
                action = action.as_str(),
                reason,
                mode = permission_mode,
                "permission"
            ),
            Event::PermissionRequest {
                id, name, reason, ..
            } => {
                tracing::info!(target: PERMISSIONS, run, id, tool = name, reason, "permission asked");
            }
            Event::Error {
                code,
                message,
                recoverable,
            } => {
                tracing::error!(target: RUN, run, code = code.as_str(), recoverable, detail = first_line(message), "error")
            }
            Event::Warning { code, message, .. } => {
                tracing::warn!(target: RUN, run, code = code.as_str(), detail = first_line(message), "warning");
            }
            Event::Checkpoint { .. } => tracing::debug!(target: RUN, run, "checkpoint"),
            Event::Restore { .. } => tracing::info!(target: RUN, run, "restore"),
            Event::Usage(_) => tracing::debug!(target: RUN, run, "usage"),
            _ => {}
        }
    }
}

/// A call the policy allowed without asking (no event says so): the rule or mode that did.
pub fn allowed(id: &str, tool: &str, reason: &str, confine: bool) {
    tracing::info!(target: PERMISSIONS, id, tool, action = "allow", reason, confine, "permission");
}

/// The first line of `text`, at most [`MAX_ERROR_CHARS`] characters.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match line.char_indices().nth(MAX_ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_cut_to_their_first_line() {
        assert_eq!(first_line("\n exit 3\nmore"), " exit 3");
        let long = "x".repeat(MAX_ERROR_CHARS + 5);
        assert_eq!(first_line(&long).chars().count(), MAX_ERROR_CHARS + 1);
    }
}
