//! The events hooks run at, by the names Claude Code gives them (and `StageEnd`, Splice's own).

/// A point of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PermissionRequest,
    PostToolUse,
    Notification,
    Stop,
    SubagentStop,
    PreCompact,
    SessionEnd,
    /// A pipeline stage finished, with its typed output: a team's own gate on the stage.
    StageEnd,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::Notification,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::SessionEnd,
        HookEvent::StageEnd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Notification => "Notification",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::StageEnd => "StageEnd",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }

    /// Whether what a blocking hook says goes to the model (a tool call, a stop, a stage's
    /// evidence) rather than to the person alone.
    pub fn model_sees(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::PermissionRequest
                | HookEvent::Stop
                | HookEvent::SubagentStop
                | HookEvent::StageEnd
        )
    }

    /// Whether exit code 2 (or a `block` decision) stops what the event stands for. At the
    /// others the hook's stderr is shown to the person and the session goes on.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            HookEvent::UserPromptSubmit
                | HookEvent::PreToolUse
                | HookEvent::PermissionRequest
                | HookEvent::PostToolUse
                | HookEvent::Stop
                | HookEvent::SubagentStop
                | HookEvent::StageEnd
        )
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
