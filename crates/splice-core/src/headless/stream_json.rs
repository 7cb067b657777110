//! The stream-json writer: one redacted JSON line per event, flushed at once.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::bus::{AgentScope, Sink};
use crate::protocol::Event;
use crate::protocol::events::envelope_scoped;
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

/// The stream, and the streams held back: the run's own, and each design-plan task's and
/// subagent's (those that run at once interleave, and a secret split in one's text must stay
/// held across another's events).
struct Out<W> {
    writer: W,
    run: Rechunker,
    tasks: Vec<(Scope, Rechunker)>,
}

/// Whose events a held-back stream has: a design-plan task's, a subagent's (in a task or not).
#[derive(Clone, PartialEq)]
struct Scope {
    task: Option<String>,
    /// The agent's id and its `agent` call's.
    agent: Option<(String, String)>,
}

impl Scope {
    fn agent(&self) -> Option<(&str, &str)> {
        self.agent.as_ref().map(|(a, c)| (a.as_str(), c.as_str()))
    }
}

/// Render one event (of design-plan task `task` and subagent `agent`, if any) as its output
/// line (without the newline), redacted.
fn render_line(
    run_id: &str,
    task: Option<&str>,
    agent: Option<(&str, &str)>,
    event: &Event,
    redactor: &Redactor,
) -> String {
    let mut line = envelope_scoped(run_id, task, agent, event);
    redactor.redact_line(&mut line);
    serde_json::to_string(&line).unwrap_or_default()
}

impl<W: Write + Send> StreamJsonSink<W> {
    fn write(
        &self,
        writer: &mut W,
        run_id: &str,
        task: Option<&str>,
        agent: Option<(&str, &str)>,
        events: Vec<Event>,
    ) {
        for event in events {
            let mut text = render_line(run_id, task, agent, &event, &self.redactor);
            text.push('\n');
            super::write_or_notice(writer, text.as_bytes(), self.reader_gone.as_ref());
        }
    }

    /// An event of a task or a subagent: the run's held text goes first, then the event in its
    /// own held-back stream.
    fn emit_scoped(&self, run_id: &str, scope: Scope, event: &Event) {
        let Ok(mut guard) = self.out.lock() else {
            return;
        };
        let out = &mut *guard;
        let held = out.run.flush();
        self.write(&mut out.writer, run_id, None, None, held);
        let at = match out.tasks.iter().position(|(s, _)| *s == scope) {
            Some(at) => at,
            None => {
                out.tasks
                    .push((scope.clone(), Rechunker::new(self.redactor.clone())));
                out.tasks.len() - 1
            }
        };
        let events = out.tasks[at].1.push(event);
        self.write(
            &mut out.writer,
            run_id,
            scope.task.as_deref(),
            scope.agent(),
            events,
        );
    }
}

impl<W: Write + Send> Sink for StreamJsonSink<W> {
    fn emit(&self, run_id: &str, event: &Event) {
        self.emit_in(run_id, None, event);
    }

    fn emit_in(&self, run_id: &str, task: Option<&str>, event: &Event) {
        let Some(task) = task else {
            let Ok(mut guard) = self.out.lock() else {
                return;
            };
            let out = &mut *guard;
            // The run's own event: every task's held text goes first, as it came before.
            for (scope, rechunker) in &mut out.tasks {
                let held = rechunker.flush();
                self.write(
                    &mut out.writer,
                    run_id,
                    scope.task.as_deref(),
                    scope.agent(),
                    held,
                );
            }
            let events = out.run.push(event);
            self.write(&mut out.writer, run_id, None, None, events);
            return;
        };
        let scope = Scope {
            task: Some(task.to_string()),
            agent: None,
        };
        self.emit_scoped(run_id, scope, event);
    }

    fn emit_agent(&self, run_id: &str, task: Option<&str>, agent: &AgentScope, event: &Event) {
        let scope = Scope {
            task: task.map(str::to_string),
            agent: Some((agent.id.clone(), agent.parent_call.clone())),
        };
        self.emit_scoped(run_id, scope, event);
    }
}
