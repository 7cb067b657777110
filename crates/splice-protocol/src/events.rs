//! Output events of stream-json schema 2.
//!
//! `Event` is the one enum every front end consumes. It serializes with `type` as the tag and
//! camelCase field names exactly as docs/stream-json.md spells them; optional
//! fields are omitted rather than written as `null`. `schemaVersion` and `runId` are added by
//! [`envelope`], because they belong to the line, not to the event.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::codes::{ErrorCode, WarningCode};
use crate::exit::Exit;

pub const SCHEMA_VERSION: u64 = 2;

/// What the policy did with a tool call (`action` of the permission events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionAction {
    /// The person is asked (`permission_request`).
    Prompt,
    Allow,
    Deny,
    /// Refused by the sandbox or a hard limit, not by a rule or a person.
    Block,
}

impl PermissionAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionAction::Prompt => "prompt",
            PermissionAction::Allow => "allow",
            PermissionAction::Deny => "deny",
            PermissionAction::Block => "block",
        }
    }
}

/// What a tool call may do to the world (`sideEffect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SideEffect {
    Read,
    Write,
    Execute,
    Network,
    None,
}

impl SideEffect {
    pub fn as_str(self) -> &'static str {
        match self {
            SideEffect::Read => "read",
            SideEffect::Write => "write",
            SideEffect::Execute => "execute",
            SideEffect::Network => "network",
            SideEffect::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    Denied,
    Blocked,
    Timeout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    Low,
    Medium,
    High,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Success,
    Failed,
    Error,
    Interrupted,
}

impl RunStatus {
    /// The status `run_end` carries for a process exit code (docs/stream-json.md).
    pub fn for_exit(exit: Exit) -> RunStatus {
        match exit {
            Exit::Success => RunStatus::Success,
            Exit::Failed => RunStatus::Failed,
            Exit::Interrupted => RunStatus::Interrupted,
            _ => RunStatus::Error,
        }
    }
}

/// A sandbox or policy block attached to a `permission` event (schema 2's `block`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointInfo {
    pub sequence: u32,
    pub tool: String,
    pub files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreInfo {
    pub sequence: u32,
    pub files_restored: Vec<String>,
    pub files_deleted: Vec<String>,
    pub skipped: Vec<String>,
    /// Those of `skipped` that lead outside the root or into `.git` now (`--force` keeps them
    /// skipped); for the warning's wording, not part of the event.
    #[serde(skip)]
    pub escaped: Vec<String>,
}

/// Whether a cost is known: `priced`, `unpriced` (never a cost of 0) or, for totals, `partial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostStatus {
    Priced,
    /// The default claims no price.
    #[default]
    Unpriced,
    Partial,
}

/// Token counts and cost of one model request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageEvent {
    pub provider: String,
    pub model: String,
    pub stage: String,
    pub iteration: u32,
    pub usage_sequence: u32,
    pub usage_reported: bool,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_status: Option<CostStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_estimated: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_provenance: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing_source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing_as_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpriced_reason: Option<String>,
}

/// The data behind a warning's words, for front ends (the TUI words some warnings its own
/// way); never serialised.
#[derive(Debug, Clone, PartialEq)]
pub enum WarningDetail {
    /// `context_compacted`: what was summarised (or dropped), and the size before and after.
    Compacted { outcome: String },
    /// `mcp_server_failed` about one configured server.
    McpServer { server: String },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    #[serde(rename_all = "camelCase")]
    RunStart {
        session_id: String,
        cwd: String,
        provider: String,
        model: String,
        api_model: String,
    },
    Reasoning {
        delta: String,
    },
    Text {
        delta: String,
    },
    ToolCallStart {
        id: String,
        name: String,
    },
    ToolCallDelta {
        id: String,
        delta: String,
    },
    #[serde(rename_all = "camelCase")]
    ToolCall {
        id: String,
        name: String,
        args: Value,
        side_effect: SideEffect,
    },
    #[serde(rename_all = "camelCase")]
    ToolResult {
        id: String,
        status: ToolStatus,
        output: String,
        truncated: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        changed_files: Option<Vec<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        display: Option<Value>,
    },
    /// How far a running tool has got (additive: clients may ignore it). Unknown parts are
    /// left out, as everywhere in the stream (never null). Only between a call's `tool_call`
    /// and its `tool_result`.
    ToolProgress {
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        stage: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fraction: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    PermissionRequest {
        id: String,
        name: String,
        action: PermissionAction,
        permission: String,
        permission_mode: String,
        side_effect: SideEffect,
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        risk: Option<Risk>,
    },
    #[serde(rename_all = "camelCase")]
    PermissionDecision {
        id: String,
        name: String,
        action: PermissionAction,
        permission_granted: bool,
        decision_reason: String,
    },
    /// Fallback for a policy action that is neither a request nor a decision: a rule or mode
    /// that denies without asking, or a sandbox block.
    #[serde(rename_all = "camelCase")]
    Permission {
        id: String,
        name: String,
        action: PermissionAction,
        permission_mode: String,
        side_effect: SideEffect,
        reason: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        risk: Option<Risk>,
        #[serde(skip_serializing_if = "Option::is_none")]
        block: Option<Block>,
    },
    Usage(UsageEvent),
    Checkpoint {
        checkpoint: CheckpointInfo,
    },
    Restore {
        checkpoint: RestoreInfo,
    },
    Warning {
        code: WarningCode,
        message: String,
        /// What a front end needs of the warning besides its words; not on the wire.
        #[serde(skip)]
        detail: Option<WarningDetail>,
    },
    Error {
        code: ErrorCode,
        message: String,
        recoverable: bool,
    },
    Final {
        text: String,
    },
    /// A hook that blocked or changed something (additive: clients may ignore it): its
    /// `event` (`PreToolUse`, …), its `command`, its `decision` (`block`, `allow`, `ask`,
    /// `update`, `context`, `stop`, `message`), its `reason` when it gave one, and the tool
    /// call `id` it was about, if any.
    Hook {
        event: String,
        command: String,
        decision: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    RunEnd {
        status: RunStatus,
        exit_code: i32,
    },
}

impl Event {
    pub fn reasoning(delta: impl Into<String>) -> Event {
        Event::Reasoning {
            delta: delta.into(),
        }
    }

    pub fn text(delta: impl Into<String>) -> Event {
        Event::Text {
            delta: delta.into(),
        }
    }

    /// A `tool_progress` event from what a tool (or the program behind it) reported: text
    /// made safe for a terminal, the fraction kept within 0..=1 (not a number: unknown).
    pub fn tool_progress(
        id: impl Into<String>,
        stage: Option<&str>,
        fraction: Option<f64>,
        detail: Option<&str>,
    ) -> Event {
        let clean = |text: &str| crate::terminal::strip_controls(text).into_owned();
        Event::ToolProgress {
            id: id.into(),
            stage: stage.map(clean),
            fraction: fraction
                .filter(|f| f.is_finite())
                .map(|f| f.clamp(0.0, 1.0)),
            detail: detail.map(clean),
        }
    }

    pub fn warning(code: WarningCode, message: impl Into<String>) -> Event {
        Event::Warning {
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// A warning with what a front end needs of it as data, so none parses its message.
    pub fn warning_with(
        code: WarningCode,
        message: impl Into<String>,
        detail: WarningDetail,
    ) -> Event {
        Event::Warning {
            code,
            message: message.into(),
            detail: Some(detail),
        }
    }

    pub fn error(code: ErrorCode, message: impl Into<String>) -> Event {
        Event::Error {
            code,
            message: message.into(),
            recoverable: false,
        }
    }

    pub fn run_end(exit: Exit) -> Event {
        Event::RunEnd {
            status: RunStatus::for_exit(exit),
            exit_code: exit.code(),
        }
    }
}

/// The JSON object of one output line: `schemaVersion`, `type`, `runId`, then the event's fields.
pub fn envelope(run_id: &str, event: &Event) -> Map<String, Value> {
    envelope_in(run_id, None, event)
}

/// The line of an event of design-plan task `task`: `taskId` after `runId` (none for the run's
/// own events, so their lines are as they always were).
pub fn envelope_in(run_id: &str, task: Option<&str>, event: &Event) -> Map<String, Value> {
    envelope_scoped(run_id, task, None, event)
}

/// The line of an event of a subagent too: `agentId` and `parentToolCallId` (the `agent` call
/// that started it) after `runId` and `taskId`; the run's own events have neither.
pub fn envelope_scoped(
    run_id: &str,
    task: Option<&str>,
    agent: Option<(&str, &str)>,
    event: &Event,
) -> Map<String, Value> {
    let mut line = Map::new();
    line.insert("schemaVersion".into(), Value::from(SCHEMA_VERSION));
    let fields = match serde_json::to_value(event) {
        Ok(Value::Object(fields)) => fields,
        // Every variant is a struct-like variant, so this arm is unreachable in practice; keep
        // the line well formed anyway.
        _ => Map::new(),
    };
    if let Some(kind) = fields.get("type") {
        line.insert("type".into(), kind.clone());
    }
    line.insert("runId".into(), Value::from(run_id));
    if let Some(task) = task {
        line.insert("taskId".into(), Value::from(task));
    }
    if let Some((agent, parent_call)) = agent {
        line.insert("agentId".into(), Value::from(agent));
        line.insert("parentToolCallId".into(), Value::from(parent_call));
    }
    for (key, value) in fields {
        if key != "type" {
            line.insert(key, value);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_event_has_its_task_id_after_the_run_id_and_a_run_event_none() {
        let event = Event::reasoning("x");
        let keys = |line: Map<String, Value>| line.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(envelope_in("run_1", Some("T1"), &event)),
            ["schemaVersion", "type", "runId", "taskId", "delta"]
        );
        assert_eq!(
            keys(envelope("run_1", &event)),
            ["schemaVersion", "type", "runId", "delta"]
        );
        assert_eq!(
            keys(envelope_scoped(
                "run_1",
                None,
                Some(("agent_1", "call_1")),
                &event
            )),
            [
                "schemaVersion",
                "type",
                "runId",
                "agentId",
                "parentToolCallId",
                "delta"
            ]
        );
    }

    fn line(event: &Event) -> Value {
        Value::Object(envelope("run_1", event))
    }

    #[test]
    fn tool_progress_leaves_unknown_parts_out_and_keeps_its_text_safe() {
        let event = Event::tool_progress(
            "call_1",
            Some("transcribe"),
            Some(1.7),
            Some("chunk 2 of 3\u{1b}]52;c;bad\u{7}"),
        );
        assert_eq!(
            line(&event),
            json!({"schemaVersion": 2, "type": "tool_progress", "runId": "run_1", "id": "call_1",
                "stage": "transcribe", "fraction": 1.0, "detail": "chunk 2 of 3"})
        );
        let bare = Event::tool_progress("call_2", None, Some(f64::NAN), None);
        assert_eq!(
            line(&bare),
            json!({"schemaVersion": 2, "type": "tool_progress", "runId": "run_1", "id": "call_2"})
        );
    }

    #[test]
    fn run_start_has_spec_field_names_in_order() {
        let event = Event::RunStart {
            session_id: "session_a".into(),
            cwd: "/repo".into(),
            provider: "openai".into(),
            model: "m".into(),
            api_model: "api-m".into(),
        };
        let text = serde_json::to_string(&envelope("run_1", &event)).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"schemaVersion":2,"type":"run_start","runId":"run_1","sessionId":"session_a","cwd":"/repo","provider":"openai","model":"m","apiModel":"api-m"}"#
        );
    }

    #[test]
    fn optional_fields_are_omitted_not_null() {
        let event = Event::ToolResult {
            id: "c".into(),
            status: ToolStatus::Ok,
            output: "x".into(),
            truncated: false,
            changed_files: None,
            display: None,
        };
        let value = line(&event);
        assert_eq!(
            value,
            json!({"schemaVersion":2,"type":"tool_result","runId":"run_1","id":"c","status":"ok","output":"x","truncated":false})
        );
    }

    #[test]
    fn usage_is_flat_with_camel_case_fields() {
        let event = Event::Usage(UsageEvent {
            provider: "openai".into(),
            model: "m".into(),
            stage: "code_writer".into(),
            iteration: 1,
            usage_sequence: 1,
            usage_reported: true,
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            cost_status: Some(CostStatus::Unpriced),
            unpriced_reason: Some("no price".into()),
            ..UsageEvent::default()
        });
        let value = line(&event);
        assert_eq!(value["usageSequence"], 1);
        assert_eq!(value["costStatus"], "unpriced");
        assert!(value.get("costUsd").is_none());
        assert!(value.get("apiModel").is_none());
    }

    #[test]
    fn run_end_status_follows_exit_code() {
        assert_eq!(
            line(&Event::run_end(Exit::Interrupted)),
            json!({"schemaVersion":2,"type":"run_end","runId":"run_1","status":"interrupted","exitCode":130})
        );
        assert_eq!(line(&Event::run_end(Exit::Provider))["status"], "error");
        assert_eq!(line(&Event::run_end(Exit::Failed))["status"], "failed");
    }

    #[test]
    fn checkpoint_nests_its_object() {
        let value = line(&Event::Checkpoint {
            checkpoint: CheckpointInfo {
                sequence: 1,
                tool: "submit_code".into(),
                files: vec!["README.md".into()],
            },
        });
        assert_eq!(
            value["checkpoint"],
            json!({"sequence":1,"tool":"submit_code","files":["README.md"]})
        );
    }

    /// A permission event's action is an enum in the event and the spec's word on the wire.
    #[test]
    fn permission_actions_are_the_spec_words() {
        for (action, word) in [
            (PermissionAction::Prompt, "prompt"),
            (PermissionAction::Allow, "allow"),
            (PermissionAction::Deny, "deny"),
            (PermissionAction::Block, "block"),
        ] {
            assert_eq!(
                serde_json::to_value(action).expect("serialise"),
                json!(word)
            );
            assert_eq!(action.as_str(), word);
        }
        let decision = Event::PermissionDecision {
            id: "call_2".into(),
            name: "write_file".into(),
            action: PermissionAction::Allow,
            permission_granted: true,
            decision_reason: "approved in TUI".into(),
        };
        let line = serde_json::to_value(&decision).expect("serialise");
        assert_eq!(line["action"], "allow");
    }

    /// The codes are enums in the event and today's strings on the wire; a warning's detail is
    /// for front ends only.
    #[test]
    fn codes_are_their_strings_and_details_stay_off_the_wire() {
        let warning = Event::warning_with(
            WarningCode::McpServerFailed,
            "MCP server `a` failed",
            WarningDetail::McpServer { server: "a".into() },
        );
        assert_eq!(
            serde_json::to_string(&envelope("run_1", &warning)).unwrap_or_default(),
            r#"{"schemaVersion":2,"type":"warning","runId":"run_1","code":"mcp_server_failed","message":"MCP server `a` failed"}"#
        );
        assert_eq!(
            line(&Event::error(ErrorCode::Interrupted, "stopped")),
            json!({"schemaVersion":2,"type":"error","runId":"run_1","code":"interrupted",
                "message":"stopped","recoverable":false})
        );
        let read: Event = serde_json::from_value(json!(
            {"type":"warning","code":"context_compacted","message":"m"}
        ))
        .expect("parse");
        assert_eq!(read, Event::warning(WarningCode::ContextCompacted, "m"));
    }
}
