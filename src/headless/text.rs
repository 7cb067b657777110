//! The text printer: the model's answer on stdout, progress and diagnostics on stderr.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::rechunk::Rechunker;
use super::redact::Redactor;
use super::terminal::strip_controls;
use crate::bus::Sink;
use crate::protocol::Event;
use crate::protocol::events::ToolStatus;
use crate::protocol::marker::{ReasoningPiece, StageStatus, split_markers};

pub struct TextSink<O: Write + Send, E: Write + Send> {
    streams: Mutex<Streams<O, E>>,
    redactor: Redactor,
    reader_gone: Option<Arc<Notify>>,
}

struct Streams<O, E> {
    out: O,
    err: E,
    /// The answer on stdout does not end with a newline yet.
    mid_line: bool,
    rechunker: Rechunker,
}

impl<O: Write + Send, E: Write + Send> TextSink<O, E> {
    pub fn new(out: O, err: E, redactor: Redactor) -> Self {
        TextSink {
            streams: Mutex::new(Streams {
                out,
                err,
                mid_line: false,
                rechunker: Rechunker::new(redactor.clone()),
            }),
            redactor,
            reader_gone: None,
        }
    }

    /// Signal `gone` when the reader of the answer closes stdout (a broken pipe).
    pub fn notify_when_reader_gone(mut self, gone: Arc<Notify>) -> Self {
        self.reader_gone = Some(gone);
        self
    }

    /// Stripped of anything a terminal would act on, then redacted: everything this sink
    /// writes (model text, tool output, reasons) is untrusted, and a control character inside a
    /// secret must not hide it from redaction only to vanish on the way out.
    fn clean(&self, text: &str) -> String {
        let text = strip_controls(text);
        match self.redactor.redact_str(&text) {
            Some(redacted) => redacted,
            None => text.into_owned(),
        }
    }
}

/// The stderr line for a progress event, if it has one.
fn progress_line(event: &Event) -> Option<String> {
    match event {
        Event::Reasoning { delta } => {
            let mut out = String::new();
            for piece in split_markers(delta) {
                match piece {
                    ReasoningPiece::Text(text) => out.push_str(&text),
                    ReasoningPiece::Marker(m) => {
                        let verb = match m.status {
                            StageStatus::Start => "started",
                            StageStatus::Done => "done",
                            StageStatus::Failed => "failed",
                            StageStatus::Skipped => "skipped",
                        };
                        let ms = m.ms.map(|ms| format!(" ({ms} ms)")).unwrap_or_default();
                        out.push_str(&format!(
                            "[{}/{}] {} {verb}{ms}\n",
                            m.index, m.total, m.stage
                        ));
                    }
                }
            }
            (!out.is_empty()).then_some(out)
        }
        Event::ToolCall { name, args, .. } => Some(format!("→ {name} {args}\n")),
        Event::ToolResult { status, output, .. } if *status != ToolStatus::Ok => {
            let first = output.lines().next().unwrap_or_default();
            Some(format!("  {status:?}: {first}\n").to_lowercase())
        }
        Event::PermissionDecision {
            name,
            permission_granted: false,
            decision_reason,
            ..
        } => Some(format!(
            "  permission for {name} denied: {decision_reason}\n"
        )),
        Event::Permission { name, reason, .. } => {
            Some(format!("  permission for {name} refused: {reason}\n"))
        }
        Event::Checkpoint { checkpoint } => Some(format!(
            "  checkpoint {} ({})\n",
            checkpoint.sequence,
            checkpoint.files.join(", ")
        )),
        Event::Restore { checkpoint } => Some(format!(
            "restored checkpoint {}: {} restored, {} deleted, {} skipped\n",
            checkpoint.sequence,
            checkpoint.files_restored.len(),
            checkpoint.files_deleted.len(),
            checkpoint.skipped.len()
        )),
        Event::Warning { code, message } => Some(format!("warning [{code}]: {message}\n")),
        Event::Error { code, message, .. } => Some(format!("error [{code}]: {message}\n")),
        _ => None,
    }
}

impl<O: Write + Send, E: Write + Send> Sink for TextSink<O, E> {
    fn emit(&self, _run_id: &str, event: &Event) {
        let Ok(mut guard) = self.streams.lock() else {
            return;
        };
        let streams = &mut *guard;
        // Streamed text loses its controls before the re-chunker looks for secrets in it.
        let stripped;
        let event = match event {
            Event::Text { delta } => {
                stripped = Event::Text {
                    delta: strip_controls(delta).into_owned(),
                };
                &stripped
            }
            Event::Reasoning { delta } => {
                stripped = Event::Reasoning {
                    delta: strip_controls(delta).into_owned(),
                };
                &stripped
            }
            other => other,
        };
        for event in streams.rechunker.push(event) {
            match &event {
                Event::Text { delta } => {
                    let bytes = self.clean(delta);
                    super::write_or_notice(
                        &mut streams.out,
                        bytes.as_bytes(),
                        self.reader_gone.as_ref(),
                    );
                    streams.mid_line = !delta.ends_with('\n');
                }
                Event::RunEnd { .. } => {
                    if streams.mid_line {
                        let _ = streams.out.write_all(b"\n");
                        let _ = streams.out.flush();
                        streams.mid_line = false;
                    }
                }
                other => {
                    if let Some(line) = progress_line(other) {
                        let _ = streams.err.write_all(self.clean(&line).as_bytes());
                        let _ = streams.err.flush();
                    }
                }
            }
        }
    }
}
