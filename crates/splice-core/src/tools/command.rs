//! `run_command`: a shell command in the working root, under the supervisor (`splice
//! __sandbox-exec`), which ends every process the command started when the shell exits. A
//! timeout or an interrupt signals the supervisor, which ends the command the same way.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{MAX_OUTPUT_BYTES, ToolError, cap_output};
use crate::permissions::sandbox::shell_command;

pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept in memory per stream; the output handed on is capped further.
const MAX_CAPTURE_BYTES: usize = 4 * 1024 * 1024;
/// How long output is still collected after the shell exits.
const DRAIN_GRACE: Duration = Duration::from_millis(300);
/// How long a signalled supervisor gets to end the command before it is killed outright.
const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutcome {
    /// `None` when the command timed out or was killed by a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Standard output then standard error, capped.
    pub output: String,
    pub truncated: bool,
}

impl CommandOutcome {
    /// The text the model and the events see.
    pub fn render(&self, timeout: Duration) -> String {
        let status = match (self.timed_out, self.exit_code) {
            (true, _) => format!("timed out after {} ms", timeout.as_millis()),
            (false, Some(code)) => format!("exit code {code}"),
            (false, None) => "killed by a signal".to_string(),
        };
        if self.output.is_empty() {
            status
        } else {
            format!("{status}\n{}", self.output)
        }
    }
}

pub fn timeout_for(requested: Option<u64>) -> Duration {
    Duration::from_millis(
        requested
            .unwrap_or(DEFAULT_TIMEOUT_MS)
            .clamp(1, MAX_TIMEOUT_MS),
    )
}

/// Run `command` with `sh -c` in `root`; `confine` runs it in the sandbox when one is available,
/// with `writable` places beyond the root that the run vouches for.
pub async fn run(
    root: &Path,
    command: &str,
    timeout: Duration,
    confine: bool,
    writable: &[PathBuf],
) -> Result<CommandOutcome, ToolError> {
    let (mut process, supervised) = shell_command(root, writable, command, confine)
        .map_err(|e| ToolError::Failed(e.to_string()))?;
    process
        .current_dir(root)
        // Python decides a cached .pyc is fresh by mtime (in seconds) and size, so a file the
        // agent rewrites twice within a second could run stale bytecode.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // compileall writes bytecode on purpose; keep it out of the repository.
        .env(
            "PYTHONPYCACHEPREFIX",
            std::env::temp_dir().join("splice-pycache"),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The supervisor starts a session of its own (no controlling terminal), which a process
    // group leader cannot; without one, the shell gets a process group of its own.
    if !supervised {
        process.process_group(0);
    }
    let mut child = process
        // The guard below ends it: SIGKILL would stop the supervisor before it cleans up.
        .kill_on_drop(!supervised)
        .spawn()
        .map_err(|e| ToolError::Failed(format!("cannot start sh: {e}")))?;
    let mut process = crate::logging::process::ProcessLog::started("sh", child.id());
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // Dropping this guard (interrupt, cancelled run) ends the command and all it started.
    let mut guard = Guard {
        pid: child.id(),
        supervised,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let finished = {
        let reading = async {
            tokio::join!(capture(stdout, &mut out), capture(stderr, &mut err));
        };
        let work = async {
            tokio::pin!(reading);
            let waiting = child.wait();
            tokio::pin!(waiting);
            tokio::select! {
                () = &mut reading => waiting.await,
                status = &mut waiting => {
                    // The shell is gone; a background child may still hold the pipes open, so
                    // drain briefly instead of waiting for it.
                    let _ = tokio::time::timeout(DRAIN_GRACE, &mut reading).await;
                    status
                }
            }
        };
        tokio::time::timeout(timeout, work).await
    };
    if finished.is_err() {
        guard.stop();
        if supervised
            && tokio::time::timeout(STOP_GRACE, child.wait())
                .await
                .is_err()
        {
            let _ = child.start_kill();
        }
    } else if supervised {
        // The supervisor has exited after ending everything; its pid may be reused.
        guard.pid = None;
    }
    let (output, truncated) = combine(&out, &err);
    match finished {
        Ok(status) => {
            let status = status.map_err(|e| ToolError::Failed(format!("wait failed: {e}")))?;
            process.exited(&status);
            Ok(CommandOutcome {
                exit_code: status.code(),
                timed_out: false,
                output,
                truncated,
            })
        }
        // What the command printed before the deadline is kept: it usually says why it hung.
        Err(_) => Ok(CommandOutcome {
            exit_code: None,
            timed_out: true,
            output,
            truncated,
        }),
    }
}

fn combine(out: &[u8], err: &[u8]) -> (String, bool) {
    let mut text = String::from_utf8_lossy(out).into_owned();
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&String::from_utf8_lossy(err));
    }
    cap_output(text.trim_end(), MAX_OUTPUT_BYTES)
}

async fn capture(stream: Option<impl AsyncRead + Unpin>, kept: &mut Vec<u8>) {
    let Some(mut stream) = stream else {
        return;
    };
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                // Keep reading past the cap so the child never blocks on a full pipe.
                let room = MAX_CAPTURE_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
}

/// Ends a command that is still running when its run stops caring: the supervisor gets
/// SIGTERM (it then kills every descendant, reaps them and exits); without a supervisor the
/// shell's process group gets SIGKILL.
struct Guard {
    pid: Option<u32>,
    supervised: bool,
}

impl Guard {
    fn stop(&mut self) {
        let Some(pid) = self.pid.take().and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        let Some(pid) = Pid::from_raw(pid) else {
            return;
        };
        // Harmless when it already exited (ESRCH).
        let _ = if self.supervised {
            kill_process(pid, Signal::TERM)
        } else {
            kill_process_group(pid, Signal::KILL)
        };
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn captures_exit_code_and_both_streams() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let outcome = run(
            dir.path(),
            "echo out; echo err >&2; exit 3",
            Duration::from_secs(5),
            false,
            &[],
        )
        .await
        .expect("run dir");
        assert_eq!(outcome.exit_code, Some(3));
        assert_eq!(outcome.output, "out\nerr");
    }

    #[tokio::test]
    async fn timeout_kills_the_group() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let marker = dir.path().join("late");
        let command = format!("(sleep 1; touch {}) & sleep 5", marker.display());
        let outcome = run(dir.path(), &command, Duration::from_millis(200), false, &[])
            .await
            .expect("run dir");
        assert!(outcome.timed_out);
        assert_eq!(outcome.exit_code, None);
        tokio::time::sleep(Duration::from_millis(1300)).await;
        assert!(!marker.exists(), "a background child outlived the timeout");
    }

    #[tokio::test]
    async fn timeout_keeps_what_was_printed() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let outcome = run(
            dir.path(),
            "echo started; sleep 5",
            Duration::from_millis(300),
            false,
            &[],
        )
        .await
        .expect("run dir");
        assert!(outcome.timed_out);
        assert_eq!(outcome.output, "started");
    }

    #[tokio::test]
    async fn background_child_holding_the_pipe_does_not_stall() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let outcome = run(
            dir.path(),
            "sleep 3 & echo done",
            Duration::from_secs(2),
            false,
            &[],
        )
        .await
        .expect("run dir");
        assert!(!outcome.timed_out, "waited for the background child");
        assert_eq!(outcome.exit_code, Some(0));
        assert_eq!(outcome.output, "done");
    }

    #[tokio::test]
    async fn large_output_is_capped() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let outcome = run(
            dir.path(),
            "yes line | head -c 200000",
            Duration::from_secs(5),
            false,
            &[],
        )
        .await
        .expect("run dir");
        assert!(outcome.truncated);
        assert!(outcome.output.len() < MAX_OUTPUT_BYTES + 100);
    }
}
