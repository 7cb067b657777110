//! The typed submit tools of the stages and of the design-plan operations: their JSON schemas,
//! a validator for the subset of JSON Schema they use, and the typed values they decode to.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use thiserror::Error;

use crate::protocol::Builtin;
use crate::provider::ToolSpec;

/// The typed submit tools: a stage's (docs/stream-json.md, Pipeline) and the design plan's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitTool {
    Code,
    Tests,
    Analysis,
    Audit,
    Verdict,
    Plan,
    Critique,
}

impl SubmitTool {
    pub fn as_str(self) -> &'static str {
        self.builtin().as_str()
    }

    /// The built-in this submit tool is, by which its name is spelt once.
    pub fn builtin(self) -> Builtin {
        match self {
            SubmitTool::Code => Builtin::SubmitCode,
            SubmitTool::Tests => Builtin::SubmitTests,
            SubmitTool::Analysis => Builtin::SubmitAnalysis,
            SubmitTool::Audit => Builtin::SubmitAudit,
            SubmitTool::Verdict => Builtin::SubmitVerdict,
            SubmitTool::Plan => Builtin::SubmitPlan,
            SubmitTool::Critique => Builtin::SubmitCritique,
        }
    }
}

/// A finding's severity: `low`, `medium` or `high`; a high one fails its stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl Severity {
    pub const ALL: [Severity; 3] = [Severity::Low, Severity::Medium, Severity::High];

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

/// A submit tool: its name, what it is for, and its argument schema.
pub fn submit_spec(tool: SubmitTool) -> ToolSpec {
    let files = json!({"type": "array", "items": {"type": "object", "properties": {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "delete": {"type": "boolean"}
    }, "required": ["path"], "additionalProperties": false}});
    let findings = json!({"type": "array", "items": {"type": "object", "properties": {
        "severity": {"type": "string", "enum": Severity::ALL.map(Severity::as_str)},
        "path": {"type": "string"},
        "line": {"type": "integer", "minimum": 0},
        "message": {"type": "string"}
    }, "required": ["severity", "path", "line", "message"], "additionalProperties": false}});
    let tasks = json!({"type": "array", "items": {"type": "object", "properties": {
        "id": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "depends_on": {"type": "array", "items": {"type": "string"}}
    }, "required": ["id", "title", "description", "depends_on"], "additionalProperties": false}});
    let (description, parameters) = match tool {
        SubmitTool::Code => (
            "Submit the finished change: every file to write in full ({path, content}) or to delete ({path, delete: true}), and a one-paragraph summary. Ends the stage.",
            object(
                json!({"files": files, "summary": {"type": "string"}}),
                &["files", "summary"],
            ),
        ),
        SubmitTool::Tests => (
            "Submit the test files to write ({path, content}) or delete ({path, delete: true}), and a summary of what they check. Ends the stage.",
            object(
                json!({"files": files, "summary": {"type": "string"}}),
                &["files", "summary"],
            ),
        ),
        SubmitTool::Analysis => (
            "Submit the triaged analyzer findings that matter for this change (an empty list when none). severity high means the change must not ship as is. Ends the stage.",
            object(json!({"findings": findings}), &["findings"]),
        ),
        SubmitTool::Audit => (
            "Submit the security findings of the change: injection, secrets, unsafe shell, path traversal (an empty list when none). severity high fails the stage. Ends the stage.",
            object(json!({"findings": findings}), &["findings"]),
        ),
        SubmitTool::Verdict => (
            "Submit whether the change meets the request, with the reasons. Ends the stage.",
            object(
                json!({"accepted": {"type": "boolean"}, "reasons": {"type": "array", "items": {"type": "string"}}}),
                &["accepted", "reasons"],
            ),
        ),
        SubmitTool::Plan => (
            "Submit the plan: tasks with unique ids, each small enough for one change, and the ids each depends on.",
            object(json!({"tasks": tasks}), &["tasks"]),
        ),
        SubmitTool::Critique => (
            "Submit the critique of the plan: approved, the issues found, and (only when not approved) the revised task list.",
            object(
                json!({"approved": {"type": "boolean"}, "issues": {"type": "array", "items": {"type": "string"}}, "tasks": tasks}),
                &["approved", "issues"],
            ),
        ),
    };
    ToolSpec {
        name: tool.as_str().to_string(),
        description: description.to_string(),
        parameters,
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// Check `value` against `schema` (type, properties, required, additionalProperties, items,
/// enum, minimum). Returns the first violation with its JSON path.
fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    check(schema, value, "$")
}

fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    if let Some(kind) = schema.get("type").and_then(Value::as_str) {
        let ok = match kind {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            _ => true,
        };
        if !ok {
            return Err(format!("{at}: expected {kind}, got {}", type_name(value)));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(format!(
            "{at}: {value} is not one of {}",
            Value::Array(allowed.clone())
        ));
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && n < min
    {
        return Err(format!("{at}: {n} is below the minimum {min}"));
    }
    if let Some(map) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !map.contains_key(name) {
                return Err(format!("{at}: missing required field `{name}`"));
            }
        }
        for (key, item) in map {
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => check(sub, item, &format!("{at}.{key}"))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: unknown field `{key}`"));
                }
                None => {}
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (index, item) in list.iter().enumerate() {
            check(items, item, &format!("{at}[{index}]"))?;
        }
    }
    Ok(())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Why a submission cannot be used; the text is the stage's detail.
#[derive(Debug, Error)]
pub enum SubmissionError {
    #[error("{tool} arguments are not valid JSON: {error}")]
    NotJson {
        tool: String,
        error: serde_json::Error,
    },
    /// `violation`: the first, with its JSON path.
    #[error("{tool} arguments do not match its schema: {violation}")]
    Schema { tool: String, violation: String },
    #[error("{tool} arguments: {error}")]
    Decode {
        tool: String,
        error: serde_json::Error,
    },
}

/// Parse raw submitted arguments, validate them against the tool's schema and decode them.
pub fn decode<T: DeserializeOwned>(spec: &ToolSpec, raw: &str) -> Result<T, SubmissionError> {
    let tool = || spec.name.clone();
    let value: Value = serde_json::from_str(raw).map_err(|error| SubmissionError::NotJson {
        tool: tool(),
        error,
    })?;
    validate(&spec.parameters, &value).map_err(|violation| SubmissionError::Schema {
        tool: tool(),
        violation,
    })?;
    serde_json::from_value(value).map_err(|error| SubmissionError::Decode {
        tool: tool(),
        error,
    })
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct SubmittedFile {
    pub path: String,
    pub content: Option<String>,
    #[serde(default)]
    pub delete: bool,
}

/// `submit_code` and `submit_tests`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct FilesSubmission {
    pub files: Vec<SubmittedFile>,
    pub summary: String,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    pub path: String,
    pub line: u64,
    pub message: String,
}

impl Finding {
    pub fn is_high(&self) -> bool {
        self.severity == Severity::High
    }

    pub fn render(&self) -> String {
        format!(
            "[{}] {}:{}: {}",
            self.severity.as_str(),
            self.path,
            self.line,
            self.message
        )
    }
}

/// `submit_analysis` and `submit_audit`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct FindingsSubmission {
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Verdict {
    pub accepted: bool,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct PlannedTask {
    pub id: String,
    pub title: String,
    pub description: String,
    pub depends_on: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct PlanSubmission {
    pub tasks: Vec<PlannedTask>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Critique {
    pub approved: bool,
    pub issues: Vec<String>,
    pub tasks: Option<Vec<PlannedTask>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(tool: SubmitTool) -> ToolSpec {
        submit_spec(tool)
    }

    #[test]
    fn valid_code_submission_decodes() {
        let raw = r#"{"files":[{"path":"a.py","content":"x = 1\n"},{"path":"b.py","delete":true}],"summary":"s"}"#;
        let decoded: FilesSubmission = decode(&spec(SubmitTool::Code), raw).expect("decode");
        assert_eq!(decoded.files.len(), 2);
        assert!(decoded.files[1].delete);
    }

    #[test]
    fn violations_name_the_field() {
        let bad = decode::<FilesSubmission>(
            &spec(SubmitTool::Code),
            r#"{"files":[{"content":"x"}],"summary":"s"}"#,
        );
        assert_eq!(
            bad.err().map(|e| e.to_string()).as_deref(),
            Some(
                "submit_code arguments do not match its schema: $.files[0]: missing required field `path`"
            )
        );
        let bad = decode::<FindingsSubmission>(
            &spec(SubmitTool::Audit),
            r#"{"findings":[{"severity":"fatal","path":"a","line":1,"message":"m"}]}"#,
        );
        assert!(
            bad.err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .contains("$.findings[0].severity")
        );
        let bad = decode::<Verdict>(
            &spec(SubmitTool::Verdict),
            r#"{"accepted":"yes","reasons":[]}"#,
        );
        assert!(
            bad.err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .contains("expected boolean, got string")
        );
        let bad = decode::<Verdict>(
            &spec(SubmitTool::Verdict),
            r#"{"accepted":true,"reasons":[],"x":1}"#,
        );
        assert!(
            bad.err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .contains("unknown field `x`")
        );
        let bad = decode::<Verdict>(&spec(SubmitTool::Verdict), "{\"accepted\":");
        assert!(
            bad.err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .contains("not valid JSON")
        );
    }
}
