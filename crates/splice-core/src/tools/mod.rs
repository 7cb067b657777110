//! The real tools a model can call: their names, argument schemas, side effects and errors.
//! Execution with events, permissions and checkpoints is in [`runner`].

pub mod claude_names;
pub mod command;
pub mod fs;
pub mod paths;
pub mod runner;
pub mod search;
pub mod staged_copy;
pub mod transcribe;
pub mod unique;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use thiserror::Error;

use crate::packages::offer::PackageTool;
use crate::protocol::{Builtin, SideEffect, ToolIdentity};
use crate::provider::ToolSpec;

/// Most bytes of tool output handed back to the model and printed in events.
pub const MAX_OUTPUT_BYTES: usize = 30 * 1024;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    #[error("path `{0}` is outside the working root")]
    OutsideRoot(String),
    #[error("path `{0}` is inside .git, which file tools do not write")]
    Protected(String),
    #[error("{0}")]
    Failed(String),
    #[error("unknown tool `{0}`")]
    Unknown(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    ReadFile,
    WriteFile,
    EditFile,
    ListFiles,
    SearchFiles,
    RunCommand,
}

impl ToolName {
    pub const ALL: [ToolName; 6] = [
        ToolName::ReadFile,
        ToolName::WriteFile,
        ToolName::EditFile,
        ToolName::ListFiles,
        ToolName::SearchFiles,
        ToolName::RunCommand,
    ];

    pub fn parse(name: &str) -> Option<ToolName> {
        let builtin = Builtin::parse(name)?;
        ToolName::ALL
            .into_iter()
            .find(|tool| tool.builtin() == builtin)
    }

    pub fn as_str(self) -> &'static str {
        self.builtin().as_str()
    }

    /// The built-in this real tool is, by which its name is spelt once.
    pub fn builtin(self) -> Builtin {
        match self {
            ToolName::ReadFile => Builtin::ReadFile,
            ToolName::WriteFile => Builtin::WriteFile,
            ToolName::EditFile => Builtin::EditFile,
            ToolName::ListFiles => Builtin::ListFiles,
            ToolName::SearchFiles => Builtin::SearchFiles,
            ToolName::RunCommand => Builtin::RunCommand,
        }
    }

    pub fn side_effect(self) -> SideEffect {
        match self {
            ToolName::ReadFile | ToolName::ListFiles | ToolName::SearchFiles => SideEffect::Read,
            ToolName::WriteFile | ToolName::EditFile => SideEffect::Write,
            ToolName::RunCommand => SideEffect::Execute,
        }
    }

    pub fn is_read_only(self) -> bool {
        self.side_effect() == SideEffect::Read
    }

    pub fn spec(self) -> ToolSpec {
        let (description, parameters) = match self {
            ToolName::ReadFile => (
                "Read a text file of the repository. `offset` is the first line (1-based), `limit` the number of lines.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "offset": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1}
                }, "required": ["path"], "additionalProperties": false}),
            ),
            ToolName::WriteFile => (
                "Create or overwrite a file with the given content.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string"}
                }, "required": ["path", "content"], "additionalProperties": false}),
            ),
            ToolName::EditFile => (
                "Replace an exact piece of text in a file. `old_string` must match exactly once unless `replace_all` is true.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                }, "required": ["path", "old_string", "new_string"], "additionalProperties": false}),
            ),
            ToolName::ListFiles => (
                "List files under a directory (default: the root), honouring .gitignore; `glob` filters names.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "glob": {"type": "string"}
                }, "additionalProperties": false}),
            ),
            ToolName::SearchFiles => (
                "Search file contents with a regular expression; prints path:line: text for each match.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"},
                    "glob": {"type": "string"}
                }, "required": ["pattern"], "additionalProperties": false}),
            ),
            ToolName::RunCommand => (
                "Run a shell command in the repository root and return its exit code and output.",
                json!({"type": "object", "properties": {
                    "command": {"type": "string"},
                    "timeout_ms": {"type": "integer", "minimum": 1}
                }, "required": ["command"], "additionalProperties": false}),
            ),
        };
        ToolSpec {
            name: self.as_str().to_string(),
            description: description.to_string(),
            parameters,
        }
    }
}

/// A tool a model's call names: a built-in, a tool of a package offered to the run, or an MCP
/// server's tool.
#[derive(Debug, Clone)]
pub enum ToolId<'a> {
    Builtin(ToolName),
    Package(&'a PackageTool),
    /// `transcribe`, offered when a Scribiz CLI can be run.
    Transcribe,
    Mcp(std::sync::Arc<crate::mcp::McpTool>),
}

impl ToolId<'_> {
    /// The name in events, the TUI and permission rules (`namespace.name.tool` for a package,
    /// `mcp__server__tool` for an MCP tool).
    pub fn name(&self) -> &str {
        match self {
            ToolId::Builtin(tool) => tool.as_str(),
            ToolId::Package(tool) => &tool.dotted,
            ToolId::Transcribe => transcribe::NAME,
            ToolId::Mcp(tool) => &tool.wire,
        }
    }

    /// Who the tool is, for the permission policy.
    pub fn identity(&self) -> ToolIdentity {
        match self {
            ToolId::Builtin(tool) => tool.builtin().into(),
            ToolId::Package(tool) => ToolIdentity::Package(tool.dotted.clone()),
            ToolId::Transcribe => Builtin::Transcribe.into(),
            ToolId::Mcp(tool) => ToolIdentity::Mcp(tool.wire.clone()),
        }
    }

    pub fn side_effect(&self) -> SideEffect {
        match self {
            ToolId::Builtin(tool) => tool.side_effect(),
            ToolId::Package(tool) => tool.side_effect,
            // It uploads media and costs money.
            ToolId::Transcribe => SideEffect::Network,
            // What its server's annotations claim.
            ToolId::Mcp(tool) => tool.side_effect(),
        }
    }
}

/// Specs of the given tools, for a model request.
pub fn specs(tools: &[ToolName]) -> Vec<ToolSpec> {
    tools.iter().map(|tool| tool.spec()).collect()
}

pub fn parse_args<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    T::deserialize(args).map_err(|e| ToolError::InvalidArguments(e.to_string()))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    pub path: String,
    pub offset: Option<usize>,
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    pub path: String,
    pub content: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    pub path: String,
    pub old_string: String,
    pub new_string: String,
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    pub path: Option<String>,
    pub glob: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandArgs {
    pub command: String,
    pub timeout_ms: Option<u64>,
}

/// Cap text at `max` bytes (on a char boundary), keeping the head and the tail, which is where
/// compiler errors and test summaries are. Returns the text and whether it was cut.
pub fn cap_output(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_string(), false);
    }
    let half = max / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let omitted = tail_start - head_end;
    (
        format!(
            "{}\n[… {omitted} bytes omitted …]\n{}",
            &text[..head_end],
            &text[tail_start..]
        ),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail() {
        let text = format!("{}{}", "a".repeat(100), "b".repeat(100));
        let (capped, truncated) = cap_output(&text, 20);
        assert!(truncated);
        assert!(capped.starts_with("aaaaaaaaaa\n"));
        assert!(capped.ends_with("\nbbbbbbbbbb"));
        assert!(capped.contains("180 bytes omitted"));
        assert_eq!(cap_output("short", 20), ("short".to_string(), false));
    }

    #[test]
    fn unknown_argument_is_rejected() {
        let result: Result<ReadArgs, _> = parse_args(&json!({"path": "a", "bogus": 1}));
        assert!(matches!(result, Err(ToolError::InvalidArguments(_))));
    }
}
