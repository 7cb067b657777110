//! The stream-json writer: one redacted JSON line per event, flushed at once.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::bus::Sink;
use crate::protocol::Event;
use crate::protocol::events::envelope;
use crate::sanitize::rechunk::Rechunker;
use crate::sanitize::redact::Redactor;

pub struct StreamJsonSink<W: Write + Send> {
    out: Mutex<(W, Rechunker)>,
    redactor: Redactor,
    reader_gone: Option<Arc<Notify>>,
}

impl<W: Write + Send> StreamJsonSink<W> {
    pub fn new(out: W, redactor: Redactor) -> Self {
        StreamJsonSink {
            out: Mutex::new((out, Rechunker::new(redactor.clone()))),
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

/// Render one event as its output line (without the newline), redacted.
pub fn render_line(run_id: &str, event: &Event, redactor: &Redactor) -> String {
    let mut line = envelope(run_id, event);
    redactor.redact_line(&mut line);
    serde_json::to_string(&line).unwrap_or_default()
}

impl<W: Write + Send> Sink for StreamJsonSink<W> {
    fn emit(&self, run_id: &str, event: &Event) {
        let Ok(mut guard) = self.out.lock() else {
            return;
        };
        let (out, rechunker) = &mut *guard;
        for event in rechunker.push(event) {
            let mut text = render_line(run_id, &event, &self.redactor);
            text.push('\n');
            super::write_or_notice(out, text.as_bytes(), self.reader_gone.as_ref());
        }
    }
}
