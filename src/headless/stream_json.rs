//! The stream-json writer: one redacted JSON line per event, flushed at once.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::bus::Sink;
use crate::protocol::Event;
use crate::protocol::events::envelope_in;
use crate::sanitize::rechunk::Rechunker;
use crate::sanitize::redact::Redactor;

pub struct StreamJsonSink<W: Write + Send> {
    out: Mutex<Out<W>>,
    redactor: Redactor,
    reader_gone: Option<Arc<Notify>>,
}

impl<W: Write + Send> StreamJsonSink<W> {
    pub fn new(out: W, redactor: Redactor) -> Self {
        StreamJsonSink {
            out: Mutex::new(Out {
                writer: out,
                run: Rechunker::new(redactor.clone()),
                tasks: Vec::new(),
            }),
            redactor,
            reader_gone: None,
        }
    }

    /// Signal `gone` when the reader closes the stream (a broken pipe), so the run can stop
    /// instead of spending model requests on output nobody reads.
    pub fn notify_when_reader_gone(mut self, gone: Arc<Notify>) -> Self {
        self.reader_gone = Some(gone);
        self
    }
}

/// The stream, and the streams held back: the run's own, and each design-plan task's (tasks
/// that run at once interleave, and a secret split in one task's text must stay held across
/// another's events).
struct Out<W> {
    writer: W,
    run: Rechunker,
    tasks: Vec<(String, Rechunker)>,
}

/// Render one event (of design-plan task `task`, if any) as its output line (without the
/// newline), redacted.
fn render_line(run_id: &str, task: Option<&str>, event: &Event, redactor: &Redactor) -> String {
    let mut line = envelope_in(run_id, task, event);
    redactor.redact_line(&mut line);
    serde_json::to_string(&line).unwrap_or_default()
}

impl<W: Write + Send> StreamJsonSink<W> {
    fn write(&self, writer: &mut W, run_id: &str, task: Option<&str>, events: Vec<Event>) {
        for event in events {
            let mut text = render_line(run_id, task, &event, &self.redactor);
            text.push('\n');
            super::write_or_notice(writer, text.as_bytes(), self.reader_gone.as_ref());
        }
    }
}

impl<W: Write + Send> Sink for StreamJsonSink<W> {
    fn emit(&self, run_id: &str, event: &Event) {
        self.emit_in(run_id, None, event);
    }

    fn emit_in(&self, run_id: &str, task: Option<&str>, event: &Event) {
        let Ok(mut guard) = self.out.lock() else {
            return;
        };
        let out = &mut *guard;
        let Some(task) = task else {
            // The run's own event: every task's held text goes first, as it came before.
            for (id, rechunker) in &mut out.tasks {
                let held = rechunker.flush();
                self.write(&mut out.writer, run_id, Some(id.as_str()), held);
            }
            let events = out.run.push(event);
            self.write(&mut out.writer, run_id, None, events);
            return;
        };
        let held = out.run.flush();
        self.write(&mut out.writer, run_id, None, held);
        let at = match out.tasks.iter().position(|(id, _)| id == task) {
            Some(at) => at,
            None => {
                out.tasks
                    .push((task.to_string(), Rechunker::new(self.redactor.clone())));
                out.tasks.len() - 1
            }
        };
        let events = out.tasks[at].1.push(event);
        self.write(&mut out.writer, run_id, Some(task), events);
    }
}
