//! The text printer: the final answer on stdout, everything else on stderr, as `codex exec` and
//! `claude -p` do. Text streams before anyone knows whether its turn is the last, so a turn's
//! text is held: when the run goes on (a tool call, a stage, a prompt) it was narration and goes
//! to stderr; what is held when the run ends is the answer.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::bus::Sink;
use crate::protocol::Event;
use crate::protocol::events::{ToolStatus, UsageEvent};
use crate::protocol::marker::{ReasoningPiece, StageStatus, split_markers};
use crate::sanitize::rechunk::Rechunker;
use crate::sanitize::redact::Redactor;
use crate::sanitize::terminal::strip_controls;
use crate::usage::format_usd;

pub struct TextSink<O: Write + Send, E: Write + Send> {
    streams: Mutex<Streams<O, E>>,
    redactor: Redactor,
    reader_gone: Option<Arc<Notify>>,
}

struct Streams<O, E> {
    out: O,
    err: E,
    /// The current turn's text, already cleaned: narration or the answer, not known yet.
    held: String,
    rechunker: Rechunker,
    spent: Spent,
}

/// What the run used, for the closing line on stderr.
#[derive(Default)]
struct Spent {
    prompt: u64,
    completion: u64,
    total: u64,
    cost: f64,
    /// A response had no price (or no usage): the cost is not known, never shown as `$0`.
    unpriced: bool,
    requests: u32,
}

impl Spent {
    fn add(&mut self, usage: &UsageEvent) {
        self.requests += 1;
        self.prompt += usage.prompt_tokens;
        self.completion += usage.completion_tokens;
        self.total += usage.total_tokens;
        match usage.cost_usd {
            Some(cost) if usage.usage_reported => self.cost += cost,
            _ => self.unpriced = true,
        }
    }

    fn line(&self) -> Option<String> {
        if self.requests == 0 {
            return None;
        }
        let cost = if self.unpriced {
            "cost unpriced".to_string()
        } else {
            format!("cost ${} (estimated)", format_usd(self.cost))
        };
        Some(format!(
            "tokens: {} ({} in, {} out), {cost}\n",
            self.total, self.prompt, self.completion
        ))
    }
}

impl<O: Write + Send, E: Write + Send> TextSink<O, E> {
    pub fn new(out: O, err: E, redactor: Redactor) -> Self {
        TextSink {
            streams: Mutex::new(Streams {
                out,
                err,
                held: String::new(),
                rechunker: Rechunker::new(redactor.clone()),
                spent: Spent::default(),
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

/// The most lines of a failed tool's output shown on stderr.
const FAILED_TAIL_LINES: usize = 12;

/// `text` indented under the line it belongs to, ending with a newline.
fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

/// Whether an event shows the run went on past the current turn's text.
fn continues(event: &Event) -> bool {
    matches!(
        event,
        Event::ToolCall { .. }
            | Event::ToolCallStart { .. }
            | Event::Reasoning { .. }
            | Event::PermissionRequest { .. }
            | Event::Checkpoint { .. }
    )
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
                        if let Some(detail) = m.detail.as_deref().filter(|d| !d.is_empty()) {
                            out.push_str(&indent(detail));
                        }
                    }
                }
            }
            (!out.is_empty()).then_some(out)
        }
        Event::ToolCall { name, args, .. } => Some(format!("→ {name} {args}\n")),
        Event::ToolResult { status, output, .. } if *status != ToolStatus::Ok => {
            // The end of a failed command's output is where its reason usually is.
            let lines: Vec<&str> = output.lines().collect();
            let tail = lines[lines.len().saturating_sub(FAILED_TAIL_LINES)..].join("\n");
            let status = format!("{status:?}").to_lowercase();
            Some(format!("  {status}:\n{}", indent(&tail)))
        }
        // A submission's arguments arrive whole (the rechunker holds them until they parse):
        // its summary is the stage's own account of what it did.
        Event::ToolCallDelta { delta, .. } => serde_json::from_str::<serde_json::Value>(delta)
            .ok()
            .and_then(|v| {
                v.get("summary")
                    .and_then(|s| s.as_str())
                    .map(str::to_string)
            })
            .filter(|s| !s.trim().is_empty())
            .map(|summary| format!("  summary:\n{}", indent(&summary))),
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
        Event::Restore { checkpoint } => {
            // Named, not counted: a skipped file is one the person has to look at.
            let parts: Vec<String> = [
                ("restored", &checkpoint.files_restored),
                ("deleted", &checkpoint.files_deleted),
                ("skipped", &checkpoint.skipped),
            ]
            .into_iter()
            .filter(|(_, files)| !files.is_empty())
            .map(|(verb, files)| format!("{verb} {}", files.join(", ")))
            .collect();
            let parts = if parts.is_empty() {
                "nothing to do".to_string()
            } else {
                parts.join("; ")
            };
            Some(format!("checkpoint {}: {parts}\n", checkpoint.sequence))
        }
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
            if continues(&event) && !streams.held.is_empty() {
                let mut narration = std::mem::take(&mut streams.held);
                if !narration.ends_with('\n') {
                    narration.push('\n');
                }
                let _ = streams.err.write_all(narration.as_bytes());
            }
            match &event {
                Event::Text { delta } => streams.held.push_str(&self.clean(delta)),
                Event::Usage(usage) => streams.spent.add(usage),
                Event::RunEnd { .. } => {
                    let mut answer = std::mem::take(&mut streams.held);
                    if !answer.is_empty() {
                        if !answer.ends_with('\n') {
                            answer.push('\n');
                        }
                        super::write_or_notice(
                            &mut streams.out,
                            answer.as_bytes(),
                            self.reader_gone.as_ref(),
                        );
                    }
                    if let Some(line) = streams.spent.line() {
                        let _ = streams.err.write_all(line.as_bytes());
                    }
                    let _ = streams.err.flush();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::events::SideEffect;
    use std::sync::{Arc, Mutex};

    /// A writer the test can read afterwards.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut inner) = self.0.lock() {
                inner.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            self.0
                .lock()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        }
    }

    #[test]
    fn narration_goes_to_stderr_and_only_the_last_turn_to_stdout() {
        let (out, err) = (Shared::default(), Shared::default());
        let sink = TextSink::new(out.clone(), err.clone(), Redactor::from_vars([]));
        let usage = |cost| {
            Event::Usage(UsageEvent {
                usage_reported: true,
                prompt_tokens: 100,
                completion_tokens: 20,
                total_tokens: 120,
                cost_usd: Some(cost),
                ..UsageEvent::default()
            })
        };
        for event in [
            Event::text("Let me look at the files."),
            usage(0.0001),
            Event::ToolCall {
                id: "c1".into(),
                name: "list_files".into(),
                args: serde_json::json!({}),
                side_effect: SideEffect::Read,
            },
            Event::text("There are two files."),
            usage(0.00002),
            Event::run_end(0),
        ] {
            sink.emit("run_t", &event);
        }
        assert_eq!(out.text(), "There are two files.\n");
        let err = err.text();
        assert!(err.starts_with("Let me look at the files.\n"), "{err}");
        assert!(
            err.ends_with("tokens: 240 (200 in, 40 out), cost $0.00012 (estimated)\n"),
            "{err}"
        );
    }
}
