//! PLACEHOLDER with the runtime API agreed with branch p9-runtime, so the model side builds
//! before it lands; the merge of p9-runtime replaces this file whole.

use std::path::{Path, PathBuf};

use super::package::Package;

pub struct CallRequest<'a> {
    pub package: &'a Package,
    pub tool: &'a str,
    pub input: serde_json::Value,
    pub project_root: &'a Path,
    pub node: &'a NodeBinary,
}

pub struct CallOutcome {
    pub result: Result<serde_json::Value, CallError>,
    pub logs: Vec<String>,
    pub ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub code: CallErrorCode,
    pub message: String,
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallErrorCode {
    InvalidInput,
    InvalidOutput,
    ToolError,
    Timeout,
    PermissionDenied,
    NodeMissing,
    NodeTooOld,
}

impl CallErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            CallErrorCode::InvalidInput => "INVALID_INPUT",
            CallErrorCode::InvalidOutput => "INVALID_OUTPUT",
            CallErrorCode::ToolError => "TOOL_ERROR",
            CallErrorCode::Timeout => "TIMEOUT",
            CallErrorCode::PermissionDenied => "PERMISSION_DENIED",
            CallErrorCode::NodeMissing => "NODE_MISSING",
            CallErrorCode::NodeTooOld => "NODE_TOO_OLD",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeBinary {
    pub path: PathBuf,
    pub version: (u64, u64, u64),
}

pub fn find_node(_config_node: Option<&Path>) -> Result<NodeBinary, CallError> {
    Err(CallError {
        code: CallErrorCode::NodeMissing,
        message: "the runtime has not landed yet".into(),
    })
}

pub async fn call(_request: CallRequest<'_>) -> CallOutcome {
    CallOutcome {
        result: Err(CallError {
            code: CallErrorCode::NodeMissing,
            message: "the runtime has not landed yet".into(),
        }),
        logs: Vec::new(),
        ms: 0,
    }
}
