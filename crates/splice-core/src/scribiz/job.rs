//! One run of the Scribiz CLI, owned by one handle: started under Splice's supervisor (no
//! capabilities, a process group of its own, every descendant ended with it) with a clean
//! environment, its stdout read as protocol lines (a typed stream for the caller), its
//! stdin written by one writer (cancel, media answers), its stderr kept as bounded logs. On
//! every path (result, error, cancel, stall, the handle dropped, the runtime going away) the
//! process and everything in its group end and the process is reaped.
//!
//! Cancel: `{"cmd":"cancel"}`, then SIGTERM to its group after `cancel_grace` (the CLI's
//! "second signal": it exits at once), then everything killed after `term_grace`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;

use super::error::{Failure, ScribizError};
use super::launch::{Env, Limits, child_env};
use super::media::{HostMedia, Requests};
use super::protocol::{self, ErrorLine, Hello, Line, PROTOCOL, ResultLine, Summary};
use crate::permissions::helper::helper;
use crate::process_group::GroupGuard;
use crate::sanitize::terminal::strip_controls;

/// The longest line read; past it the line is skipped (an inline Context is at most 256 KB).
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// After the process exits, how long what is still in the pipe is read.
const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// Results, errors and notes kept: a batch this large is already unusual.
const MAX_KEPT: usize = 10_000;
/// Lines waiting for the caller before reading pauses.
const LINE_BUFFER: usize = 256;

/// What to run.
pub struct JobOptions {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The environment the child's is filtered from (normally Splice's own).
    pub env: Env,
    pub cwd: Option<PathBuf>,
    pub limits: Limits,
    pub media: Arc<dyn HostMedia>,
}

/// Cancels a job; cheap to clone, for Esc, SIGINT and the run's end.
#[derive(Clone)]
pub struct Canceller(Arc<watch::Sender<bool>>);

impl Canceller {
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }
}

/// A running job: its lines in order, then how it ended. Dropping it cancels the run. Keep
/// reading `next()` until `None`, or call `finish()`: a caller that holds the job and stops
/// reading pauses the reading of the CLI once `LINE_BUFFER` lines wait (the CLI then blocks on
/// its stdout); a cancel is still heard, and the lines nobody reads are then dropped.
pub struct Job {
    lines: mpsc::Receiver<Line>,
    cancel: Canceller,
    ended: Option<oneshot::Receiver<Ended>>,
}

/// How a job ended, with its logs whatever the outcome.
#[derive(Debug)]
pub struct Ended {
    pub outcome: Result<Outcome, ScribizError>,
    /// Standard error, bounded, cleaned, plus a line per skipped stdout line.
    pub logs: Vec<String>,
    /// Stdout lines that were not protocol (not JSON, no `type`, or fields that do not fit).
    pub skipped_lines: usize,
}

/// A job that ended with its work done (a batch: with its `summary`, whatever the exit code).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub exit_code: i32,
    pub hello: Hello,
    pub results: Vec<ResultLine>,
    /// A batch's failed items.
    pub item_errors: Vec<ErrorLine>,
    pub summary: Option<Summary>,
}

impl Outcome {
    /// The result of a single-input run.
    pub fn result(&self) -> Option<&ResultLine> {
        self.results.last()
    }
}

impl Job {
    /// Start `options.program`. Needs a Tokio runtime.
    pub fn start(options: JobOptions) -> Result<Job, ScribizError> {
        let cannot_start = |e: std::io::Error| {
            ScribizError::Spawn(format!(
                "{}: {e}",
                strip_controls(&options.program.display().to_string())
            ))
        };
        let env = child_env(&options.env);
        let cwd = options.cwd.as_deref().unwrap_or(std::path::Path::new("."));
        // Under the supervisor: no capabilities, a process group of its own (the terminal's
        // Ctrl-C is Splice's to handle), and whatever it starts ends with it.
        let mut helper =
            helper(options.program.as_os_str(), &options.args, &env, cwd).map_err(cannot_start)?;
        let command = &mut helper.command;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &options.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(cannot_start)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ScribizError::Spawn("the process has no pipes".into()));
        };
        let (lines_tx, lines) = mpsc::channel(LINE_BUFFER);
        let (cancel_tx, cancel_rx) = watch::channel(false);
        let (ended_tx, ended) = oneshot::channel();
        let group = helper.guard(&child);
        let process = crate::logging::process::ProcessLog::started("scribiz", child.id());
        let driver = Driver {
            process,
            child,
            group,
            limits: options.limits,
            lines: lines_tx,
            cancel: cancel_rx,
        };
        tokio::spawn(async move {
            let ended = driver.run(stdin, stdout, stderr, options.media).await;
            let _ = ended_tx.send(ended);
        });
        Ok(Job {
            lines,
            cancel: Canceller(Arc::new(cancel_tx)),
            ended: Some(ended),
        })
    }

    /// The next line (`hello` first), `None` once the stream is over. `request` and
    /// `request-cancel` lines are answered by the job and not passed on.
    pub async fn next(&mut self) -> Option<Line> {
        self.lines.recv().await
    }

    pub fn canceller(&self) -> Canceller {
        self.cancel.clone()
    }

    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Wait for the end, dropping the lines not yet read.
    pub async fn finish(mut self) -> Ended {
        self.lines.close();
        while self.lines.recv().await.is_some() {}
        let ended = match self.ended.take() {
            Some(ended) => ended.await.ok(),
            None => None,
        };
        ended.unwrap_or_else(|| Ended {
            outcome: Err(ScribizError::Protocol("the job's task ended early".into())),
            logs: Vec::new(),
            skipped_lines: 0,
        })
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // Harmless after the end; otherwise the driver cancels, escalates and reaps.
        self.cancel.cancel();
    }
}

/// Why Splice asked the CLI to stop.
enum Abort {
    Cancelled,
    Stalled,
    UnsupportedProtocol(u64),
    Protocol(String),
}

#[derive(Clone, Copy)]
enum Escalation {
    Asked,
    Terminated,
    Killed,
}

/// What the stream said so far.
#[derive(Default)]
struct Seen {
    hello: Option<Hello>,
    results: Vec<ResultLine>,
    errors: Vec<ErrorLine>,
    summary: Option<Summary>,
    skipped: usize,
    notes: Vec<String>,
}

struct Driver {
    child: Child,
    group: GroupGuard,
    limits: Limits,
    lines: mpsc::Sender<Line>,
    cancel: watch::Receiver<bool>,
    process: crate::logging::process::ProcessLog,
}

impl Driver {
    async fn run(
        mut self,
        stdin: ChildStdin,
        stdout: impl AsyncRead + Unpin,
        stderr: impl AsyncRead + Unpin + Send + 'static,
        media: Arc<dyn HostMedia>,
    ) -> Ended {
        let (writer_tx, writer_rx) = mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(write_lines(stdin, writer_rx));
        let logs = tokio::spawn(splice_sandbox::capture::read_logs(stderr));
        let mut requests = Requests::new(media, writer_tx.clone());
        let mut reader = LineReader::new(stdout);
        let mut seen = Seen::default();
        let mut abort: Option<Abort> = None;
        let mut escalation: Option<(Escalation, Instant)> = None;
        let mut exited: Option<(std::io::Result<ExitStatus>, Instant)> = None;
        let started = Instant::now();
        let mut last_line = started;
        let mut eof = false;
        while !(eof && exited.is_some()) {
            let deadline = match (&exited, escalation) {
                (Some((_, at)), _) => Some(*at + DRAIN_GRACE),
                // Lines that are not protocol keep a run alive, but not one that never says hello.
                (None, None) if seen.hello.is_none() => Some(started + self.limits.stall),
                (None, None) => Some(last_line + self.limits.stall),
                (None, Some((Escalation::Asked, at))) => Some(at + self.limits.cancel_grace),
                (None, Some((Escalation::Terminated, at))) => Some(at + self.limits.term_grace),
                (None, Some((Escalation::Killed, _))) => None,
            };
            let timer = async {
                match deadline {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            let asking = escalation.is_none() && exited.is_none();
            tokio::select! {
                // A line already in the pipe is read before a deadline is called.
                biased;
                () = cancelled(&mut self.cancel), if asking => {
                    abort.get_or_insert(Abort::Cancelled);
                    escalation = Some(ask_to_cancel(&writer_tx));
                }
                read = reader.next(), if !eof => match read {
                    Some(line) => {
                        let stop = handle(&self.lines, &mut self.cancel, line, &mut seen, &mut requests, abort.is_some()).await;
                        // Time spent waiting for the caller to take a line is not the CLI's.
                        last_line = Instant::now();
                        if let Some(stop) = stop
                            && abort.is_none()
                        {
                            abort = Some(stop);
                            if escalation.is_none() && exited.is_none() {
                                escalation = Some(ask_to_cancel(&writer_tx));
                            }
                        }
                    }
                    None => eof = true,
                },
                status = self.child.wait(), if exited.is_none() => {
                    if let Ok(status) = &status {
                        self.process.exited(status);
                    }
                    exited = Some((status, Instant::now()));
                    // What it left running goes too, so the pipes close (a supervisor has
                    // ended it already).
                    self.group.reaped();
                }
                () = timer => match (&exited, escalation) {
                    // Something outside the group holds the pipe open: stop reading.
                    (Some(_), _) => eof = true,
                    (None, None) => {
                        abort.get_or_insert(if seen.hello.is_none() {
                            Abort::Protocol(format!(
                                "no `hello` line within {} s",
                                self.limits.stall.as_secs_f64()
                            ))
                        } else {
                            Abort::Stalled
                        });
                        escalation = Some(ask_to_cancel(&writer_tx));
                    }
                    (None, Some((Escalation::Asked, _))) => {
                        self.group.terminate();
                        escalation = Some((Escalation::Terminated, Instant::now()));
                    }
                    (None, Some((Escalation::Terminated | Escalation::Killed, _))) => {
                        self.group.kill();
                        escalation = Some((Escalation::Killed, Instant::now()));
                    }
                },
            }
        }
        requests.cancel_all();
        self.group.kill();
        self.group.disarm();
        drop(requests);
        drop(writer_tx);
        writer.abort();
        let mut logs: Vec<String> = tokio::time::timeout(Duration::from_secs(2), logs)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default()
            .into_iter()
            .map(|line| strip_controls(&line).into_owned())
            .collect();
        logs.append(&mut seen.notes);
        let status = exited.and_then(|(status, _)| status.ok());
        Ended {
            outcome: decide(
                status,
                abort,
                seen.hello,
                seen.results,
                seen.errors,
                seen.summary,
                self.limits,
            ),
            logs,
            skipped_lines: seen.skipped,
        }
    }
}

/// One line read; what stops the run, if it does.
async fn handle(
    lines: &mpsc::Sender<Line>,
    cancel: &mut watch::Receiver<bool>,
    raw: Result<Vec<u8>, usize>,
    seen: &mut Seen,
    requests: &mut Requests,
    stopping: bool,
) -> Option<Abort> {
    let decoded = match raw {
        Ok(bytes) => protocol::decode(&bytes).map_err(|why| why.to_string()),
        Err(length) => Err(format!("a line of more than {length} bytes")),
    };
    let line = match decoded {
        Ok(line) => line,
        Err(why) => {
            seen.skipped += 1;
            if seen.notes.len() < MAX_KEPT {
                seen.notes
                    .push(format!("(splice) skipped a stdout line: {why}"));
            }
            return None;
        }
    };
    if seen.hello.is_none() {
        return match line {
            Line::Hello(hello) if hello.protocol != PROTOCOL => {
                Some(Abort::UnsupportedProtocol(hello.protocol))
            }
            Line::Hello(hello) => {
                seen.hello = Some(hello.clone());
                forward(lines, cancel, Line::Hello(hello)).await
            }
            Line::Unknown => None,
            other if stopping => {
                // A cancel before hello: its error line still counts.
                if let Line::Error(error) = other {
                    seen.errors.push(error);
                }
                None
            }
            other => Some(Abort::Protocol(format!(
                "its first line was `{}`, not `hello`",
                other.type_name()
            ))),
        };
    }
    match line {
        Line::Hello(_) | Line::Unknown => return None,
        Line::Request(request) => {
            requests.start(request);
            return None;
        }
        Line::RequestCancel(cancel) => {
            requests.cancel(cancel.id);
            return None;
        }
        Line::Result(ref result) if seen.results.len() < MAX_KEPT => {
            seen.results.push(result.clone());
        }
        Line::Error(ref error) if seen.errors.len() < MAX_KEPT => {
            seen.errors.push(error.clone());
        }
        Line::Summary(ref summary) => seen.summary = Some(summary.clone()),
        _ => {}
    }
    forward(lines, cancel, line).await
}

/// Pass a line to the caller. While the caller's buffer is full, a cancel is still heard: the
/// line is dropped (the caller is not reading) and the run is cancelled.
async fn forward(
    lines: &mpsc::Sender<Line>,
    cancel: &mut watch::Receiver<bool>,
    line: Line,
) -> Option<Abort> {
    tokio::select! {
        biased;
        _ = lines.send(line) => None,
        () = cancelled(cancel) => Some(Abort::Cancelled),
    }
}

/// Completes once cancel is asked (or every handle that could ask it is gone).
async fn cancelled(cancel: &mut watch::Receiver<bool>) {
    let _ = cancel.wait_for(|cancelled| *cancelled).await;
}

fn ask_to_cancel(writer: &mpsc::UnboundedSender<String>) -> (Escalation, Instant) {
    let _ = writer.send(r#"{"cmd":"cancel"}"#.to_string());
    (Escalation::Asked, Instant::now())
}

/// How the job ended, from what it said and how it exited.
fn decide(
    status: Option<ExitStatus>,
    abort: Option<Abort>,
    hello: Option<Hello>,
    results: Vec<ResultLine>,
    errors: Vec<ErrorLine>,
    summary: Option<Summary>,
    limits: Limits,
) -> Result<Outcome, ScribizError> {
    let exit_code = status.and_then(|s| s.code());
    let cancelled = match abort {
        Some(Abort::UnsupportedProtocol(version)) => {
            return Err(ScribizError::UnsupportedProtocol { version });
        }
        Some(Abort::Stalled) => {
            return Err(ScribizError::Stalled {
                after: limits.stall,
            });
        }
        Some(Abort::Protocol(message)) => return Err(ScribizError::Protocol(message)),
        Some(Abort::Cancelled) => true,
        None => false,
    };
    // The exit code is the first failure's.
    let first_error = errors.first().map(|e| &e.error);
    let Some(hello) = hello else {
        if cancelled || first_error.is_some() {
            return Err(ScribizError::Failed(Box::new(Failure::new(
                exit_code,
                cancelled,
                first_error,
            ))));
        }
        return Err(ScribizError::Protocol(format!(
            "it ended ({}) without a `hello` line: is it the Scribiz CLI?",
            describe(status)
        )));
    };
    let (batch, has_result) = (summary.is_some(), !results.is_empty());
    let outcome = |exit_code: i32, item_errors: Vec<ErrorLine>| Outcome {
        exit_code,
        hello,
        results,
        item_errors,
        summary,
    };
    match exit_code {
        // A batch reports its items whatever its exit code.
        Some(code) if batch => Ok(outcome(code, errors)),
        Some(0) if first_error.is_none() && has_result => Ok(outcome(0, errors)),
        Some(0) if first_error.is_none() => Err(ScribizError::Protocol(
            "it exited 0 without a `result` line".into(),
        )),
        _ => Err(ScribizError::Failed(Box::new(Failure::new(
            exit_code,
            cancelled,
            first_error,
        )))),
    }
}

fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => status.to_string(),
        None => "its status is unknown".into(),
    }
}

/// The one writer of the child's stdin: each line is written whole, in the order sent.
async fn write_lines(mut stdin: ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(line) = lines.recv().await {
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if stdin.write_all(&bytes).await.is_err() || stdin.flush().await.is_err() {
            // The CLI is gone; what is still sent is dropped.
            break;
        }
    }
}

/// Lines split on `\n` only (so a U+2028 inside a string never splits one), each at most
/// `MAX_LINE_BYTES`. Cancel-safe: a partial line stays in `buffer` across calls.
struct LineReader<R> {
    inner: BufReader<R>,
    buffer: Vec<u8>,
    overlong: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    fn new(inner: R) -> LineReader<R> {
        LineReader {
            inner: BufReader::new(inner),
            buffer: Vec::new(),
            overlong: false,
        }
    }

    /// The next line: its bytes, or `Err(limit)` when it was too long; `None` at the end.
    async fn next(&mut self) -> Option<Result<Vec<u8>, usize>> {
        loop {
            // `fill_buf` consumes nothing until `consume`, and nothing between them awaits.
            let available = match self.inner.fill_buf().await {
                Ok(bytes) => bytes,
                Err(_) => &[],
            };
            if available.is_empty() {
                return (!self.buffer.is_empty() || self.overlong).then(|| self.take());
            }
            let (piece, used, ended) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (&available[..at], at + 1, true),
                None => (available, available.len(), false),
            };
            if self.buffer.len() + piece.len() > MAX_LINE_BYTES {
                self.overlong = true;
                self.buffer.clear();
            } else if !self.overlong {
                self.buffer.extend_from_slice(piece);
            }
            self.inner.consume(used);
            if ended {
                return Some(self.take());
            }
        }
    }

    fn take(&mut self) -> Result<Vec<u8>, usize> {
        if std::mem::take(&mut self.overlong) {
            self.buffer.clear();
            Err(MAX_LINE_BYTES)
        } else {
            Ok(std::mem::take(&mut self.buffer))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines_of(bytes: &[u8]) -> Vec<Result<Vec<u8>, usize>> {
        let mut reader = LineReader::new(bytes);
        let mut out = Vec::new();
        while let Some(line) = reader.next().await {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_split_on_newline_only() {
        let text = "{\"a\":\"x\u{2028}y\u{85}z\r\"}\n{\"b\":1}\nlast";
        let lines = lines_of(text.as_bytes()).await;
        assert_eq!(
            lines,
            vec![
                Ok("{\"a\":\"x\u{2028}y\u{85}z\r\"}".as_bytes().to_vec()),
                Ok(b"{\"b\":1}".to_vec()),
                Ok(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn an_overlong_line_is_skipped_and_the_next_one_read() {
        let mut bytes = vec![b'x'; MAX_LINE_BYTES + 10];
        bytes.extend_from_slice(b"\n{\"type\":\"heartbeat\"}\n");
        let lines = lines_of(&bytes).await;
        assert_eq!(
            lines,
            vec![
                Err(MAX_LINE_BYTES),
                Ok(b"{\"type\":\"heartbeat\"}".to_vec())
            ]
        );
    }
}
