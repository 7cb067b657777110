//! How a Scribiz job fails: the CLI was not found or would not start, it broke the protocol, it
//! stalled, or it ended with an exit code (mapped per the document's table) and usually an
//! `error` line, whose fields are kept.

use std::fmt;
use std::time::Duration;

use super::protocol::ErrorBody;

#[derive(Debug, thiserror::Error)]
pub enum ScribizError {
    #[error("the Scribiz CLI was not found: {0}")]
    NotFound(String),
    #[error("cannot start the Scribiz CLI: {0}")]
    Spawn(String),
    #[error(
        "the Scribiz CLI speaks JSON protocol {version}, and Splice speaks protocol {}: update \
         Splice or install a Scribiz CLI that speaks protocol {}",
        super::protocol::PROTOCOL,
        super::protocol::PROTOCOL
    )]
    UnsupportedProtocol { version: u64 },
    #[error("the Scribiz CLI broke its JSON protocol: {0}")]
    Protocol(String),
    #[error("the Scribiz CLI stalled: no line for {} s, so the run was cancelled", .after.as_secs_f64())]
    Stalled { after: Duration },
    #[error("{0}")]
    Failed(Box<Failure>),
}

impl ScribizError {
    /// The failure's kind when the CLI ended with one.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            ScribizError::Failed(failure) => Some(failure),
            _ => None,
        }
    }
}

/// What an exit code means (the document's table). 0 is success and has no kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// 1, an unknown code, or death by a signal Splice did not send.
    Other,
    /// 2: wrong usage (`INPUT_UNSUPPORTED`).
    Usage,
    /// 3: credentials or minutes.
    Credentials,
    /// 4: the source.
    Source,
    /// 5: the service.
    Service,
    /// 6: a tool is missing.
    ToolMissing,
    /// 130, or ended by Splice's own cancel.
    Cancelled,
}

impl FailureKind {
    pub fn from_exit_code(code: i32) -> Option<FailureKind> {
        Some(match code {
            0 => return None,
            2 => FailureKind::Usage,
            3 => FailureKind::Credentials,
            4 => FailureKind::Source,
            5 => FailureKind::Service,
            6 => FailureKind::ToolMissing,
            130 => FailureKind::Cancelled,
            _ => FailureKind::Other,
        })
    }

    fn describe(self) -> &'static str {
        match self {
            FailureKind::Other => "failed",
            FailureKind::Usage => "refused its arguments",
            FailureKind::Credentials => "has a credential or minutes problem",
            FailureKind::Source => "cannot use the source",
            FailureKind::Service => "hit a service problem",
            FailureKind::ToolMissing => "is missing a tool",
            FailureKind::Cancelled => "was cancelled",
        }
    }
}

/// A run the CLI ended unsuccessfully. The strings are cleaned (they came through `Text`).
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: FailureKind,
    /// `None` when the process died by a signal.
    pub exit_code: Option<i32>,
    /// The `error` line's code (`AUTH`, `CANCELLED`…), when there was one.
    pub code: Option<String>,
    pub message: String,
    pub retryable: Option<bool>,
    /// `account` (stops a whole queue) or `job`.
    pub scope: Option<String>,
    pub stage: Option<String>,
    pub hint: Option<String>,
    /// The service's HTTP status.
    pub status: Option<u64>,
    pub retry_after_ms: Option<u64>,
}

impl Failure {
    /// From the exit status and the `error` line, if one came; the exit code decides the kind.
    pub fn new(exit_code: Option<i32>, cancelled: bool, error: Option<&ErrorBody>) -> Failure {
        let kind = match exit_code.and_then(FailureKind::from_exit_code) {
            Some(kind) => kind,
            None if cancelled => FailureKind::Cancelled,
            None => FailureKind::Other,
        };
        let text = |t: &Option<super::protocol::Text>| t.as_ref().map(|t| t.as_str().to_string());
        match error {
            Some(error) => Failure {
                kind,
                exit_code,
                code: Some(error.code.as_str().to_string()),
                message: error.message.as_str().to_string(),
                retryable: error.retryable,
                scope: text(&error.scope),
                stage: text(&error.stage),
                hint: text(&error.hint),
                status: error.status,
                retry_after_ms: error.retry_after_ms,
            },
            None => Failure {
                kind,
                exit_code,
                code: None,
                message: match exit_code {
                    Some(code) => format!("it exited with code {code} without an error line"),
                    None if cancelled => "it was ended after a cancel".to_string(),
                    None => "it was killed by a signal without an error line".to_string(),
                },
                retryable: None,
                scope: None,
                stage: None,
                hint: None,
                status: None,
                retry_after_ms: None,
            },
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scribiz {}", self.kind.describe())?;
        if let Some(code) = &self.code {
            write!(f, " ({code})")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " ({hint})")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_exit_code_has_its_kind() {
        let cases = [
            (0, None),
            (1, Some(FailureKind::Other)),
            (2, Some(FailureKind::Usage)),
            (3, Some(FailureKind::Credentials)),
            (4, Some(FailureKind::Source)),
            (5, Some(FailureKind::Service)),
            (6, Some(FailureKind::ToolMissing)),
            (130, Some(FailureKind::Cancelled)),
            (7, Some(FailureKind::Other)),
        ];
        for (code, kind) in cases {
            assert_eq!(FailureKind::from_exit_code(code), kind, "{code}");
        }
    }

    #[test]
    fn a_death_by_signal_is_a_cancel_only_when_splice_cancelled() {
        assert_eq!(Failure::new(None, true, None).kind, FailureKind::Cancelled);
        assert_eq!(Failure::new(None, false, None).kind, FailureKind::Other);
    }
}
