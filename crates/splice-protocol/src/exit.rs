//! Splice's process exit codes (docs/stream-json.md): `run_end.exitCode` is always the process exit
//! code, and `run_end.status` follows from it. Every exit code Splice chooses is an [`Exit`].
//! (A sandboxed command's own status, passed through by the supervisor, is the command's.)

/// How a run or a command ended, as its process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Exit {
    /// The run succeeded.
    Success,
    /// The run finished unsuccessfully: a stage failed after all iterations, acceptance not
    /// met, a tool failure ended it.
    Failed,
    /// Wrong usage or invalid input: bad flags, stream-json input that fails validation.
    Usage,
    /// A provider or credential problem.
    Provider,
    /// Interrupted by SIGINT, SIGTERM or SIGHUP.
    Interrupted,
}

impl Exit {
    /// The number, as a process exits with it and `run_end.exitCode` reports it.
    pub const fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::Failed => 1,
            Exit::Usage => 2,
            Exit::Provider => 3,
            Exit::Interrupted => 130,
        }
    }

    /// The exit as a process exit status.
    pub fn process(self) -> std::process::ExitCode {
        // Every code fits a byte.
        std::process::ExitCode::from(self.code() as u8)
    }

    /// Made a failure if it was a success: something after the run's work (a merge, putting
    /// back the git dir) failed, and a run that had already failed keeps its own exit.
    pub fn as_failure(self) -> Exit {
        if self == Exit::Success {
            Exit::Failed
        } else {
            self
        }
    }
}

/// The number, as `exit 2` would name it.
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_ones_decisions_md_defines() {
        let codes: Vec<i32> = [
            Exit::Success,
            Exit::Failed,
            Exit::Usage,
            Exit::Provider,
            Exit::Interrupted,
        ]
        .map(Exit::code)
        .to_vec();
        assert_eq!(codes, [0, 1, 2, 3, 130]);
        assert_eq!(Exit::Success.as_failure(), Exit::Failed);
        assert_eq!(Exit::Usage.as_failure(), Exit::Usage);
    }
}
