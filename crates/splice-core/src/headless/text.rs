//! The text printer: the final answer on stdout, everything else on stderr, as `codex exec` and
//! `claude -p` do. Text streams before anyone knows whether its turn is the last, so a turn's
//! text is held: when the run goes on (a tool call, a stage, a prompt) it was narration and goes
//! to stderr; what is held when the run ends is the answer.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::bus::Sink;
use crate::protocol::Event;
use crate::protocol::events::{SideEffect, ToolStatus, UsageEvent};
use crate::protocol::marker::{ReasoningPiece, StageMarker, StageStatus, split_markers};
use crate::sanitize::rechunk::Rechunker;
use crate::sanitize::redact::Redactor;
use crate::sanitize::terminal::strip_controls;
use crate::usage::format_usd;

pub struct TextSink<O: Write + Send, E: Write + Send> {
    streams: Mutex<Streams<O, E>>,
    redactor: Redactor,
    reader_gone: Option<Arc<Notify>>,
    /// Name the run at its end (a headless run: `splice restore` needs its id).
    name_run: bool,
}

struct Streams<O, E> {
    out: O,
    err: E,
    /// The current turn's text, already cleaned: narration or the answer, not known yet.
    held: String,
    rechunker: Rechunker,
    spent: Spent,
    /// Whether stderr's last write ended a line: a stage line never starts mid-line.
    at_line_start: bool,
    /// Prompted calls by id: what to suggest when the headless run denies one.
    prompted: HashMap<String, SideEffect>,
    /// Calls whose refusal has been told in its one line; their `denied` result adds nothing.
    refused: HashSet<String>,
    /// Whether the run checkpointed a write (so `splice restore` has something to put back).
    checkpointed: bool,
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
                at_line_start: true,
                prompted: HashMap::new(),
                refused: HashSet::new(),
                checkpointed: false,
            }),
            redactor,
            reader_gone: None,
            name_run: false,
        }
    }

    /// End the run's output with its id on stderr (and how to undo its writes, if it made any).
    pub fn naming_the_run(mut self) -> Self {
        self.name_run = true;
        self
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

/// A stage's time as a person reads it: `850ms`, `12.3s`.
fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else {
        format!("{:.1}s", ms as f64 / 1000.0)
    }
}

/// One readable line for a stage marker: its place, name, status, time and detail.
fn stage_line(m: &StageMarker) -> String {
    let status = match m.status {
        StageStatus::Start => format!("started (iteration {})", m.iteration),
        StageStatus::Done => "done".to_string(),
        StageStatus::Failed => "failed".to_string(),
        StageStatus::Skipped => "skipped".to_string(),
    };
    let time =
        m.ms.map(|ms| format!(" in {}", duration(ms)))
            .unwrap_or_default();
    let detail = m
        .detail
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    format!(
        "[{}/{}] {} {status}{time}{detail}\n",
        m.index, m.total, m.stage
    )
}

/// Reasoning as stderr shows it: plain text as it came, each stage marker as its own line
/// (never glued to the text before or after it). `at_line_start`: whether stderr's last write
/// ended a line.
fn reasoning_text(delta: &str, at_line_start: bool) -> String {
    let mut out = String::new();
    for piece in split_markers(delta) {
        match piece {
            ReasoningPiece::Text(text) => out.push_str(&strip_controls(&text)),
            ReasoningPiece::Marker(marker) => {
                let mid_line = if out.is_empty() {
                    !at_line_start
                } else {
                    !out.ends_with('\n')
                };
                if mid_line {
                    out.push('\n');
                }
                out.push_str(&stage_line(&marker));
            }
        }
    }
    out
}

/// The one line a headless denial gets: what was denied, why, and the flag that allows it.
fn denial_line(name: &str, side_effect: Option<SideEffect>, reason: &str) -> String {
    let hint = match side_effect {
        Some(SideEffect::Write) => {
            format!("allow it with --permission-mode accept-edits or --allow {name}")
        }
        Some(SideEffect::Execute) => format!(
            "allow it with --permission-mode auto (runs commands in the sandbox) or --allow '{name}(PATTERN)'"
        ),
        _ => format!("allow it with --allow {name}"),
    };
    format!("  denied {name}: {reason}; {hint}\n")
}

/// The stderr line for a progress event that needs no memory of earlier ones, if it has one.
fn progress_line(event: &Event) -> Option<String> {
    match event {
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
        Event::Warning { code, message, .. } => Some(format!("warning [{code}]: {message}\n")),
        Event::Hook {
            event,
            command,
            decision,
            reason,
            ..
        } => Some(format!(
            "  {event} hook `{command}`: {decision}{}\n",
            reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        )),
        Event::Error { code, message, .. } => Some(format!("error [{code}]: {message}\n")),
        _ => None,
    }
}

impl<O: Write + Send, E: Write + Send> Streams<O, E> {
    /// Write to stderr (already cleaned), remembering whether the line was ended.
    fn err_write(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let _ = self.err.write_all(text.as_bytes());
        let _ = self.err.flush();
        self.at_line_start = text.ends_with('\n');
    }

    /// The stderr text for a progress event, keeping what later events need to know.
    fn progress(&mut self, event: &Event) -> Option<String> {
        match event {
            Event::Reasoning { delta } => {
                let text = reasoning_text(delta, self.at_line_start);
                (!text.is_empty()).then_some(text)
            }
            Event::PermissionRequest {
                id, side_effect, ..
            } => {
                self.prompted.insert(id.clone(), *side_effect);
                None
            }
            Event::PermissionDecision {
                id,
                name,
                permission_granted: false,
                decision_reason,
                ..
            } => {
                let side_effect = self.prompted.remove(id);
                self.refused.insert(id.clone());
                Some(denial_line(name, side_effect, decision_reason))
            }
            Event::Permission {
                id,
                name,
                action,
                reason,
                ..
            } => {
                self.refused.insert(id.clone());
                let verb = match action {
                    crate::protocol::PermissionAction::Deny => "denied",
                    crate::protocol::PermissionAction::Block => "blocked",
                    other => other.as_str(),
                };
                Some(format!("  {verb} {name}: {reason}\n"))
            }
            Event::ToolResult { id, status, .. }
                if matches!(status, ToolStatus::Denied | ToolStatus::Blocked)
                    && self.refused.remove(id) =>
            {
                None
            }
            Event::Checkpoint { .. } => {
                self.checkpointed = true;
                progress_line(event)
            }
            other => progress_line(other),
        }
    }
}

impl<O: Write + Send, E: Write + Send> Sink for TextSink<O, E> {
    /// A subagent's prose is its own conversation, not the run's answer or narration: only
    /// what it does (its calls, prompts and spending) is shown.
    fn emit_agent(
        &self,
        run_id: &str,
        _task: Option<&str>,
        _agent: &crate::bus::AgentScope,
        event: &Event,
    ) {
        if !matches!(event, Event::Text { .. } | Event::Reasoning { .. }) {
            self.emit(run_id, event);
        }
    }

    fn emit(&self, run_id: &str, event: &Event) {
        let Ok(mut guard) = self.streams.lock() else {
            return;
        };
        let streams = &mut *guard;
        // Streamed text loses its controls before the re-chunker looks for secrets in it;
        // reasoning keeps its stage markers (NUL-delimited) whole, to be shown as lines.
        let stripped;
        let event = match event {
            Event::Text { delta } => {
                stripped = Event::Text {
                    delta: strip_controls(delta).into_owned(),
                };
                &stripped
            }
            Event::Reasoning { delta } => {
                let kept: String = split_markers(delta)
                    .into_iter()
                    .map(|piece| match piece {
                        ReasoningPiece::Text(text) => strip_controls(&text).into_owned(),
                        ReasoningPiece::Marker(marker) => marker.encode(),
                    })
                    .collect();
                stripped = Event::Reasoning { delta: kept };
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
                streams.err_write(&narration);
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
                    if !streams.at_line_start {
                        streams.err_write("\n");
                    }
                    if let Some(line) = streams.spent.line() {
                        streams.err_write(&line);
                    }
                    if self.name_run {
                        let line = if streams.checkpointed {
                            format!(
                                "run {run_id} (undo its file changes: splice restore {run_id})\n"
                            )
                        } else {
                            format!("run {run_id}\n")
                        };
                        streams.err_write(&self.clean(&line));
                    }
                }
                other => {
                    if let Some(line) = streams.progress(other) {
                        let line = self.clean(&line);
                        streams.err_write(&line);
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
            Event::run_end(crate::exit::Exit::Success),
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

    #[test]
    fn stage_markers_become_readable_lines_of_their_own() {
        let (out, err) = (Shared::default(), Shared::default());
        let sink = TextSink::new(out.clone(), err.clone(), Redactor::from_vars([]));
        let marker = |status, ms, detail: Option<&str>| StageMarker {
            stage: "code_writer".into(),
            status,
            iteration: 1,
            index: 1,
            total: 3,
            ms,
            detail: detail.map(str::to_string),
            task_id: None,
        };
        for event in [
            Event::reasoning("Starting pipeline iteration 1\n"),
            Event::reasoning(marker(StageStatus::Start, None, None).encode()),
            // Stage prose without a newline, then the marker that ends the stage.
            Event::reasoning("Looking at calc.py"),
            Event::reasoning(format!(
                "{}{}",
                marker(StageStatus::Done, Some(2400), Some("wrote calc.py")).encode(),
                marker(StageStatus::Skipped, None, None).encode()
            )),
            Event::run_end(crate::exit::Exit::Success),
        ] {
            sink.emit("run_t", &event);
        }
        let err = err.text();
        assert!(
            !err.contains("STAGE") && !err.contains('\u{0}') && !err.contains("{\"stage\""),
            "{err:?}"
        );
        assert_eq!(
            err,
            "Starting pipeline iteration 1\n[1/3] code_writer started (iteration 1)\nLooking at calc.py\n[1/3] code_writer done in 2.4s: wrote calc.py\n[1/3] code_writer skipped\n"
        );
    }

    #[test]
    fn a_headless_denial_is_one_line_naming_the_flag_and_the_run_is_named_at_the_end() {
        let (out, err) = (Shared::default(), Shared::default());
        let sink =
            TextSink::new(out.clone(), err.clone(), Redactor::from_vars([])).naming_the_run();
        for event in [
            Event::PermissionRequest {
                id: "c1".into(),
                name: "write_file".into(),
                action: crate::protocol::PermissionAction::Prompt,
                permission: "prompt".into(),
                permission_mode: "ask".into(),
                side_effect: SideEffect::Write,
                reason: "Creates or overwrites files.".into(),
                risk: None,
            },
            Event::PermissionDecision {
                id: "c1".into(),
                name: "write_file".into(),
                action: crate::protocol::PermissionAction::Deny,
                permission_granted: false,
                decision_reason: "headless run has no interactive responder".into(),
            },
            Event::ToolResult {
                id: "c1".into(),
                status: ToolStatus::Denied,
                output: "denied: headless run has no interactive responder".into(),
                truncated: false,
                changed_files: None,
                display: None,
            },
            Event::run_end(crate::exit::Exit::Success),
        ] {
            sink.emit("run_t", &event);
        }
        assert_eq!(
            err.text(),
            "  denied write_file: headless run has no interactive responder; allow it with --permission-mode accept-edits or --allow write_file\nrun run_t\n"
        );
    }
}
