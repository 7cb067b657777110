//! Running one hook: `sh -c COMMAND` in the working root, as the person (not sandboxed: a hook
//! is the person's own configuration), under Splice's supervisor (`permissions::supervisor`,
//! not confined, capabilities kept), which owns every process the hook starts, even one that
//! left its process group (`setsid`, a double fork). Its input is written to stdin, stdout and
//! stderr are read side by side and capped, and at its timeout, or when the run stops waiting
//! (an interrupt drops this future), the supervisor ends everything the hook started. A hook
//! that exits leaves nothing behind either: the supervisor ends what is left, then exits.
//! Without a launcher (the library embedded elsewhere) the hook gets a process group of its
//! own instead.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::process_group::GroupGuard;

/// Bytes kept of each stream; the rest is read and dropped so the hook never blocks.
pub const MAX_STREAM_BYTES: usize = 64 * 1024;
/// How long output is still read once the hook has exited and its group is killed.
const DRAIN: Duration = Duration::from_secs(2);

/// How a hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Exit code (`None`: killed by a signal).
    Exited(Option<i32>),
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

#[derive(Debug, Clone)]
pub struct Ran {
    pub ended: Ended,
    pub stdout: String,
    pub stderr: String,
    /// It printed more than [`MAX_STREAM_BYTES`] on stdout: `stdout` is only the start.
    pub stdout_cut: bool,
}

/// Run `command` in `root` with `input` on its stdin.
pub async fn run(command: &str, root: &Path, input: &[u8], timeout: Duration) -> Ran {
    let supervised = crate::permissions::sandbox::launcher();
    let mut process = match supervised {
        Some(launcher) => {
            let mut process = tokio::process::Command::new(launcher);
            process
                .arg(crate::permissions::sandbox::SANDBOX_ARG)
                .arg("--parent")
                .arg(std::process::id().to_string())
                .args(["--forward-term", "--", crate::permissions::sandbox::SHELL]);
            process
        }
        None => {
            let mut process = tokio::process::Command::new(crate::permissions::sandbox::SHELL);
            // The supervisor starts a session of its own, which a group leader cannot.
            process.process_group(0);
            process
        }
    };
    process
        .arg("-c")
        .arg(command)
        .current_dir(root)
        // Both names, so hooks written for Claude Code find the project.
        .env("SPLICE_PROJECT_DIR", root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Never SIGKILL the supervisor: what it supervises would outlive it. The guard asks.
        .kill_on_drop(supervised.is_none());
    let mut child = match process.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Ran {
                ended: Ended::NotStarted(format!("cannot start sh: {e}")),
                stdout: String::new(),
                stderr: String::new(),
                stdout_cut: false,
            };
        }
    };
    // Dropped on every path (an interrupt included): everything the hook started goes.
    let mut guard = match supervised {
        Some(_) => GroupGuard::supervisor(&child),
        None => GroupGuard::of(&child),
    };
    let mut log = crate::logging::process::ProcessLog::started("hook", child.id());
    let stdin = child.stdin.take();
    let stdout = tokio::spawn(read_capped(child.stdout.take()));
    let stderr = tokio::spawn(read_capped(child.stderr.take()));
    let input = input.to_vec();
    let write = async move {
        if let Some(mut stdin) = stdin {
            // A hook that does not read its input closes the pipe: not an error.
            let _ = stdin.write_all(&input).await;
        }
    };
    let work = async {
        let ((), status) = tokio::join!(write, child.wait());
        status
    };
    let ended = match tokio::time::timeout(timeout, work).await {
        Ok(Ok(status)) => {
            log.exited(&status);
            // What the hook left running (a background child holding the pipes) ends with
            // it: the supervisor already ended it before exiting; a plain group is killed.
            guard.reaped();
            Ended::Exited(status.code())
        }
        Ok(Err(e)) => Ended::NotStarted(format!("cannot wait for it: {e}")),
        Err(_) => {
            guard.kill();
            let _ = child.wait().await;
            guard.disarm();
            Ended::TimedOut
        }
    };
    guard.disarm();
    // One byte past the cap is kept, to tell a cut stream from one that fits.
    let text = |bytes: Vec<u8>| {
        let cut = bytes.len() > MAX_STREAM_BYTES;
        let kept = &bytes[..bytes.len().min(MAX_STREAM_BYTES)];
        (String::from_utf8_lossy(kept).into_owned(), cut)
    };
    let (stdout, stdout_cut) = tokio::time::timeout(DRAIN, stdout)
        .await
        .ok()
        .and_then(Result::ok)
        .map(text)
        .unwrap_or_default();
    let (stderr, _) = tokio::time::timeout(DRAIN, stderr)
        .await
        .ok()
        .and_then(Result::ok)
        .map(text)
        .unwrap_or_default();
    Ran {
        ended,
        stdout,
        stderr,
        stdout_cut,
    }
}

async fn read_capped(stream: Option<impl AsyncRead + Unpin>) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut stream) = stream else {
        return kept;
    };
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = (MAX_STREAM_BYTES + 1).saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn input_reaches_the_hook_and_both_streams_come_back() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let ran = run(
            "read line; echo \"got $line\"; echo oops >&2; exit 2",
            dir.path(),
            b"hello\n",
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(ran.ended, Ended::Exited(Some(2)));
        assert_eq!(ran.stdout, "got hello\n");
        assert_eq!(ran.stderr, "oops\n");
    }

    #[tokio::test]
    async fn output_is_capped_and_the_hook_never_blocks_on_a_full_pipe() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let ran = run(
            "head -c 1000000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero >&2",
            dir.path(),
            b"",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(ran.ended, Ended::Exited(Some(0)));
        assert_eq!(ran.stdout.len(), MAX_STREAM_BYTES);
        assert!(ran.stdout.bytes().all(|b| b == b'a'));
        assert_eq!(ran.stderr.len(), MAX_STREAM_BYTES);
    }

    #[tokio::test]
    async fn a_hung_hook_is_killed_at_its_timeout_with_what_it_started() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let started = std::time::Instant::now();
        let ran = run(&command, dir.path(), b"", Duration::from_millis(500)).await;
        assert_eq!(ran.ended, Ended::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or(0);
        assert!(pid > 0);
        // Reaped by init soon after the kill: poll briefly.
        let mut gone = false;
        for _ in 0..50 {
            let alive = std::path::Path::new(&format!("/proc/{pid}")).exists()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z ");
            if !alive {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(gone, "the hook's background sleep is still running");
    }
}
