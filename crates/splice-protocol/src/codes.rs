//! The `code` of `error` and `warning` events: a closed list (docs/stream-json.md, Codes), so a
//! misspelt code does not compile and an error code cannot be sent as a warning's.

// Events carry these enums; on the wire each is its string.
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `error.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    ProtocolError,
    UsageError,
    AuthError,
    ProviderError,
    Interrupted,
    ToolError,
    InternalError,
    TurnLimit,
    BudgetExceeded,
    PipelineFailed,
    DesignPlanFailed,
    DesignPlanInvalid,
    MergeBackFailed,
    RestoreFailed,
    GitConfigRestoreFailed,
    /// A `UserPromptSubmit` hook blocked the request: it was not sent.
    HookBlocked,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 16] = [
        ErrorCode::ProtocolError,
        ErrorCode::UsageError,
        ErrorCode::AuthError,
        ErrorCode::ProviderError,
        ErrorCode::Interrupted,
        ErrorCode::ToolError,
        ErrorCode::InternalError,
        ErrorCode::TurnLimit,
        ErrorCode::BudgetExceeded,
        ErrorCode::PipelineFailed,
        ErrorCode::DesignPlanFailed,
        ErrorCode::DesignPlanInvalid,
        ErrorCode::MergeBackFailed,
        ErrorCode::RestoreFailed,
        ErrorCode::GitConfigRestoreFailed,
        ErrorCode::HookBlocked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::ProtocolError => "protocol_error",
            ErrorCode::UsageError => "usage_error",
            ErrorCode::AuthError => "auth_error",
            ErrorCode::ProviderError => "provider_error",
            ErrorCode::Interrupted => "interrupted",
            ErrorCode::ToolError => "tool_error",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::TurnLimit => "turn_limit",
            ErrorCode::BudgetExceeded => "budget_exceeded",
            ErrorCode::PipelineFailed => "pipeline_failed",
            ErrorCode::DesignPlanFailed => "design_plan_failed",
            ErrorCode::DesignPlanInvalid => "design_plan_invalid",
            ErrorCode::MergeBackFailed => "merge_back_failed",
            ErrorCode::RestoreFailed => "restore_failed",
            ErrorCode::GitConfigRestoreFailed => "git_config_restore_failed",
            ErrorCode::HookBlocked => "hook_blocked",
        }
    }
}

/// `warning.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningCode {
    ProviderRetry,
    ResponseTruncated,
    ContextCompacted,
    InstructionsSkipped,
    ImagesDropped,
    NoTestCommand,
    AnalyzerRefused,
    GitConfigRestored,
    DirtySource,
    MergeConflict,
    WorktreeInterrupted,
    RestoreSkipped,
    TaskRolledBack,
    PackagesUnavailable,
    PackageSkipped,
    /// An MCP server did not start, timed out, or died; the run goes on without it.
    McpServerFailed,
    /// A project's `.mcp.json` names servers that were not approved, so they did not start.
    McpServerUnapproved,
    /// `--jobs` above 1, but a design plan's tasks run one at a time in the checkout (no git
    /// repository, or changes not committed).
    TasksSerial,
    /// A project's agent definition that may write or run commands was not approved, so the
    /// `agent` tool does not offer it.
    AgentUnapproved,
    /// An agent definition that cannot be used (unreadable, an unknown tool or mode) is not
    /// offered.
    AgentSkipped,
    /// A hook failed (an exit code other than 0 and 2, a timeout, not runnable); the session
    /// went on without what it would have said.
    HookFailed,
    /// A project's hooks were not run, since nobody approved them.
    HooksUnapproved,
    /// `Stop` hooks blocked the run's end too many times in a row: it ended anyway.
    StopHookLimit,
    /// A project command file that would run commands or allow tools was not approved: it
    /// was sent as plain text, its commands not run, its `allowed-tools` allowing nothing.
    CommandUnapproved,
    /// The project's command takes the place of the user's own command of that name.
    CommandShadowed,
    /// A confined command's connection to a host nobody allowed was refused.
    NetworkBlocked,
}

impl WarningCode {
    pub const ALL: [WarningCode; 26] = [
        WarningCode::ProviderRetry,
        WarningCode::ResponseTruncated,
        WarningCode::ContextCompacted,
        WarningCode::InstructionsSkipped,
        WarningCode::ImagesDropped,
        WarningCode::NoTestCommand,
        WarningCode::AnalyzerRefused,
        WarningCode::GitConfigRestored,
        WarningCode::DirtySource,
        WarningCode::MergeConflict,
        WarningCode::WorktreeInterrupted,
        WarningCode::RestoreSkipped,
        WarningCode::TaskRolledBack,
        WarningCode::PackagesUnavailable,
        WarningCode::PackageSkipped,
        WarningCode::McpServerFailed,
        WarningCode::McpServerUnapproved,
        WarningCode::TasksSerial,
        WarningCode::AgentUnapproved,
        WarningCode::AgentSkipped,
        WarningCode::HookFailed,
        WarningCode::HooksUnapproved,
        WarningCode::StopHookLimit,
        WarningCode::CommandUnapproved,
        WarningCode::CommandShadowed,
        WarningCode::NetworkBlocked,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WarningCode::ProviderRetry => "provider_retry",
            WarningCode::ResponseTruncated => "response_truncated",
            WarningCode::ContextCompacted => "context_compacted",
            WarningCode::InstructionsSkipped => "instructions_skipped",
            WarningCode::ImagesDropped => "images_dropped",
            WarningCode::NoTestCommand => "no_test_command",
            WarningCode::AnalyzerRefused => "analyzer_refused",
            WarningCode::GitConfigRestored => "git_config_restored",
            WarningCode::DirtySource => "dirty_source",
            WarningCode::MergeConflict => "merge_conflict",
            WarningCode::WorktreeInterrupted => "worktree_interrupted",
            WarningCode::RestoreSkipped => "restore_skipped",
            WarningCode::TaskRolledBack => "task_rolled_back",
            WarningCode::PackagesUnavailable => "packages_unavailable",
            WarningCode::PackageSkipped => "package_skipped",
            WarningCode::McpServerFailed => "mcp_server_failed",
            WarningCode::McpServerUnapproved => "mcp_server_unapproved",
            WarningCode::TasksSerial => "tasks_serial",
            WarningCode::AgentUnapproved => "agent_unapproved",
            WarningCode::AgentSkipped => "agent_skipped",
            WarningCode::HookFailed => "hook_failed",
            WarningCode::HooksUnapproved => "hooks_unapproved",
            WarningCode::StopHookLimit => "stop_hook_limit",
            WarningCode::CommandUnapproved => "command_unapproved",
            WarningCode::CommandShadowed => "command_shadowed",
            WarningCode::NetworkBlocked => "network_blocked",
        }
    }
}

/// Serde and `Display` as the code's string, for both enums.
macro_rules! code_as_str {
    ($code:ident, $what:literal) => {
        impl fmt::Display for $code {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $code {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $code {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                $code::ALL
                    .into_iter()
                    .find(|code| code.as_str() == text)
                    .ok_or_else(|| serde::de::Error::custom(format!("unknown {} `{text}`", $what)))
            }
        }
    };
}

code_as_str!(ErrorCode, "error code");
code_as_str!(WarningCode, "warning code");

#[cfg(test)]
mod tests {
    use super::*;

    /// The list of codes in docs/stream-json.md is the contract: every code is in it, spelt the
    /// same way.
    #[test]
    fn every_code_is_documented_in_the_stream_json_doc() {
        let readme = include_str!("../../../docs/stream-json.md");
        let names = ErrorCode::ALL
            .iter()
            .map(|c| c.as_str())
            .chain(WarningCode::ALL.iter().map(|c| c.as_str()));
        for name in names {
            assert!(
                readme.contains(&format!("`{name}`")),
                "{name} not in docs/stream-json.md"
            );
        }
    }

    /// On the wire a code is exactly its string, and reads back as the same code.
    #[test]
    fn codes_serialise_as_their_strings() {
        for code in ErrorCode::ALL {
            let text = serde_json::to_string(&code).unwrap_or_default();
            assert_eq!(text, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&text).ok(), Some(code));
        }
        for code in WarningCode::ALL {
            let text = serde_json::to_string(&code).unwrap_or_default();
            assert_eq!(text, format!("\"{code}\""));
            assert_eq!(serde_json::from_str::<WarningCode>(&text).ok(), Some(code));
        }
        assert!(serde_json::from_str::<WarningCode>("\"interrupted\"").is_err());
    }
}
