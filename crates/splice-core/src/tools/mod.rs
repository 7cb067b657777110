//! The tools a model can call: one [`ToolHandler`] each ([`handlers`]), found by name in the
//! [`registry`], run by the [`runner`] with events, hooks, permissions and checkpoints.

pub mod command;
pub mod fs;
pub mod handler;
mod handlers;
pub mod paths;
pub mod registry;
pub mod runner;
pub mod search;
pub mod staged_copy;
pub mod transcribe;
pub mod unique;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;

pub use handler::ToolHandler;
pub use registry::{REAL_TOOLS, specs};

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
    use serde_json::json;

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
