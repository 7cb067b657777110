//! Running the tool's process: the request on stdin, the result channel (capped) and the logs
//! (capped, drained) read side by side, the timeout, and the process group killed and reaped on
//! every path, including the future being dropped.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::MAX_OUTPUT_BYTES;
use crate::process_group::GroupGuard;
use splice_sandbox::capture::read_logs;

/// Room for the result line's framing around the output.
const RESULT_FRAMING: usize = 64 * 1024;

pub struct Finished {
    pub ended: Ended,
    pub logs: Vec<String>,
}

pub enum Ended {
    Exited {
        result: Option<Vec<u8>>,
        status: String,
        success: bool,
    },
    TimedOut,
    OutputTooLarge,
    Failed(String),
}

pub async fn run(mut command: tokio::process::Command, stdin: String, limit: Duration) -> Finished {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return Finished {
                ended: Ended::Failed(format!("cannot start the tool's process: {e}")),
                logs: Vec::new(),
            };
        }
    };
    let mut guard = GroupGuard::of(&child);
    let mut process = crate::logging::process::ProcessLog::started("package tool", child.id());
    let (Some(mut input), Some(result), Some(logs)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Finished {
            ended: Ended::Failed("the tool's process has no pipes".into()),
            logs: Vec::new(),
        };
    };
    let write = async move {
        // A tool that exits without reading its request closes the pipe: not an error here.
        let _ = input.write_all(stdin.as_bytes()).await;
        drop(input);
    };
    // A task of its own, so the logs of a call that timed out are kept too.
    let logs = tokio::spawn(read_logs(logs));
    let work = async {
        let ((), result, status) = tokio::join!(
            write,
            read_capped(result, MAX_OUTPUT_BYTES + RESULT_FRAMING, &guard),
            child.wait()
        );
        (result, status)
    };
    let ended = match tokio::time::timeout(limit, work).await {
        Ok((result, status)) => {
            if let Ok(status) = &status {
                process.exited(status);
            }
            let (status, success) = match status {
                Ok(status) => (status.to_string(), status.success()),
                Err(e) => (format!("cannot wait for it: {e}"), false),
            };
            match result {
                Capped::Whole(bytes) => Ended::Exited {
                    result: last_line(bytes),
                    status,
                    success,
                },
                Capped::TooLarge => Ended::OutputTooLarge,
            }
        }
        Err(_) => {
            guard.kill();
            let _ = child.wait().await;
            Ended::TimedOut
        }
    };
    // Whatever is left in the group goes too; then the guard has nothing more to do.
    guard.kill();
    guard.disarm();
    let logs = tokio::time::timeout(Duration::from_secs(2), logs)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Finished { ended, logs }
}

enum Capped {
    Whole(Vec<u8>),
    TooLarge,
}

/// Read to the end, at most `max` bytes; past that the group is killed (no reason to let a
/// tool go on writing what will be refused).
async fn read_capped(mut reader: impl AsyncRead + Unpin, max: usize, guard: &GroupGuard) -> Capped {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => return Capped::Whole(bytes),
            Ok(n) => {
                if bytes.len() + n > max {
                    guard.kill();
                    return Capped::TooLarge;
                }
                bytes.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// The harness writes its line last and exits; what the tool wrote on fd 3 before is ignored.
fn last_line(bytes: Vec<u8>) -> Option<Vec<u8>> {
    bytes
        .split(|b| *b == b'\n')
        .rfind(|line| !line.is_empty())
        .map(<[u8]>::to_vec)
}
