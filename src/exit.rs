//! Splice's process exit codes (DECISIONS.md): `run_end.exitCode` is always the process exit
//! code, and `run_end.status` follows from it. Every exit code Splice chooses comes from here.
//! (A sandboxed command's own status, passed through by the supervisor, is the command's.)

/// The run succeeded.
pub const SUCCESS: i32 = 0;
/// The run finished unsuccessfully: a stage failed after all iterations, acceptance not met, a
/// tool failure ended it.
pub const FAILED: i32 = 1;
/// Wrong usage or invalid input: bad flags, stream-json input that fails validation.
pub const USAGE: i32 = 2;
/// A provider or credential problem.
pub const PROVIDER: i32 = 3;
/// Interrupted by SIGINT, SIGTERM or SIGHUP.
pub const INTERRUPTED: i32 = 130;

/// The code as a process exit status; a code that does not fit a byte counts as a failure.
pub fn process_code(code: i32) -> std::process::ExitCode {
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(FAILED as u8))
}

/// `code` made a failure if it was a success: something after the run's work (a merge, putting
/// back the git dir) failed, and a run that had already failed keeps its own code.
pub fn as_failure(code: i32) -> i32 {
    if code == SUCCESS { FAILED } else { code }
}
