//! One ACP session's outbound side: what the core session reports (its runs' events, its own
//! reports) becomes session updates in the order it happened, each prompt is answered when its
//! turn ends, permission questions go to the client, and the session log is written so the
//! session can be loaded again.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, ContentBlock, CurrentModeUpdate, PermissionOption, PermissionOptionKind,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, RequestCancellationHandle};
use tokio::sync::mpsc;

use crate::updates::{Translator, chunk};
use splice_core::bus::{Answer, PermissionQuestion, Preview, Sink};
use splice_core::exit::Exit;
use splice_core::protocol::Event;
use splice_core::protocol::codes::ErrorCode as RunErrorCode;
use splice_core::sanitize::rechunk::Rechunker;
use splice_core::sanitize::redact::Redactor;
use splice_core::session::log::{Record, SessionWriter};
use splice_core::session::{Handle, Op, ReportSink, SessionEvent, Withdrawal};

/// A built-in command typed as a prompt, answered by the session's report of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Compact,
    Clear,
    Model,
    Tier,
}

/// What reaches the driver, in the order it happened.
pub(crate) enum Out {
    Event {
        run_id: String,
        task: Option<String>,
        event: Box<Event>,
    },
    Changes {
        id: String,
        changes: Vec<Preview>,
    },
    Report(Box<SessionEvent>),
    /// A prompt started a turn: answered when the turn ends.
    Prompt {
        responder: Responder<PromptResponse>,
        text: String,
    },
    /// A built-in command: answered by the session's report of it.
    Command {
        responder: Responder<PromptResponse>,
        command: Builtin,
    },
}

/// The session's sink and report sink: everything to the driver.
pub(crate) struct Tap(pub(crate) mpsc::UnboundedSender<Out>);

impl Sink for Tap {
    fn emit(&self, run_id: &str, event: &Event) {
        self.emit_in(run_id, None, event);
    }

    fn emit_in(&self, run_id: &str, task: Option<&str>, event: &Event) {
        let _ = self.0.send(Out::Event {
            run_id: run_id.to_string(),
            task: task.map(str::to_string),
            event: Box::new(event.clone()),
        });
    }

    fn changes(&self, _run_id: &str, id: &str, changes: &[Preview]) {
        let _ = self.0.send(Out::Changes {
            id: id.to_string(),
            changes: changes.to_vec(),
        });
    }
}

impl ReportSink for Tap {
    fn session(&self, event: &SessionEvent) {
        let _ = self.0.send(Out::Report(Box::new(event.clone())));
    }
}

/// The option ids of a permission request.
pub(crate) const ALLOW_ONCE: &str = "allow_once";
pub(crate) const ALLOW_ALWAYS: &str = "allow_always";
pub(crate) const REJECT_ONCE: &str = "reject_once";
pub(crate) const REJECT_ALWAYS: &str = "reject_always";

pub(crate) struct Driver {
    pub(crate) cx: ConnectionTo<Client>,
    pub(crate) session_id: String,
    pub(crate) handle: Handle,
    pub(crate) translator: Translator,
    pub(crate) redactor: Redactor,
    pub(crate) log: Option<SessionWriter>,
    /// The model's settings as applied, for the session's options.
    pub(crate) models: crate::modes::Models,
    pub(crate) turns: VecDeque<Responder<PromptResponse>>,
    pub(crate) commands: VecDeque<(Builtin, Responder<PromptResponse>)>,
    /// Held-back deltas per stream (the run's, each task's), so no secret straddles two
    /// updates.
    pub(crate) rechunkers: HashMap<Option<String>, Rechunker>,
    /// The last error a run reported, for its prompt's answer.
    pub(crate) last_error: Option<(RunErrorCode, String)>,
    /// The permission requests sent this turn, by the token of their question: a withdrawn
    /// one is cancelled in the editor.
    pub(crate) asked: HashMap<String, RequestCancellationHandle>,
}

impl Driver {
    pub(crate) async fn serve(mut self, mut inbox: mpsc::UnboundedReceiver<Out>) {
        while let Some(out) = inbox.recv().await {
            self.take(out);
        }
        // The session ended: a prompt still waiting is cancelled, never left unanswered.
        for responder in self.turns.drain(..) {
            let _ = responder.respond(PromptResponse::new(StopReason::Cancelled));
        }
        for (_, responder) in self.commands.drain(..) {
            let _ = responder.respond(PromptResponse::new(StopReason::Cancelled));
        }
        if let Some(log) = self.log.take() {
            splice_core::blocking::atomic(|| log.close());
        }
    }

    fn log(&self, record: Record) {
        if let Some(log) = &self.log {
            log.append(record);
        }
    }

    fn send(&self, update: SessionUpdate) {
        let note = SessionNotification::new(self.session_id.clone(), update);
        if let Err(error) = self.cx.send_notification(note) {
            tracing::warn!(target: "splice::acp", %error, "session update not sent");
        }
    }

    fn say(&self, text: impl Into<String>) {
        self.send(SessionUpdate::AgentMessageChunk(chunk(text)));
    }

    fn take(&mut self, out: Out) {
        match out {
            Out::Event {
                run_id,
                task,
                event,
            } => {
                self.log(Record::Event {
                    run_id,
                    event: event.clone(),
                });
                if let Event::Error { code, message, .. } = &*event {
                    self.last_error = Some((*code, message.clone()));
                }
                if let Event::RunStart { .. } = &*event {
                    self.last_error = None;
                }
                // The secret list is cloned once per task, not once per event.
                let rechunker = self
                    .rechunkers
                    .entry(task.clone())
                    .or_insert_with(|| Rechunker::new(self.redactor.clone()));
                for event in rechunker.push(&event) {
                    for update in self.translator.event(task.as_deref(), &event) {
                        self.send(update);
                    }
                }
            }
            Out::Changes { id, changes } => {
                self.flush();
                for update in self.translator.changes(&id, &changes) {
                    self.send(update);
                }
            }
            Out::Prompt { responder, text } => {
                self.log(Record::Prompt { text });
                self.turns.push_back(responder);
            }
            Out::Command { responder, command } => {
                self.commands.push_back((command, responder));
            }
            Out::Report(report) => self.report(*report),
        }
    }

    /// Every held delta, sent.
    fn flush(&mut self) {
        let mut held = Vec::new();
        for (task, rechunker) in &mut self.rechunkers {
            for event in rechunker.flush() {
                held.push((task.clone(), event));
            }
        }
        for (task, event) in held {
            for update in self.translator.event(task.as_deref(), &event) {
                self.send(update);
            }
        }
    }

    fn answer_command(&mut self, matches: impl Fn(Builtin) -> bool, text: String) -> bool {
        let Some(at) = self.commands.iter().position(|(c, _)| matches(*c)) else {
            return false;
        };
        if let Some((_, responder)) = self.commands.remove(at) {
            self.say(text);
            let _ = responder.respond(PromptResponse::new(StopReason::EndTurn));
        }
        true
    }

    fn report(&mut self, report: SessionEvent) {
        match report {
            SessionEvent::TurnEnded { code } => {
                self.flush();
                // Each question of the turn was answered or withdrawn; a request the editor
                // still holds open is cancelled (a no-op for one answered).
                for (_, request) in self.asked.drain() {
                    let _ = request.cancel();
                }
                let answer = self.stop_reason(code);
                if let Some(responder) = self.turns.pop_front() {
                    let _ = responder.respond_with_result(answer);
                }
            }
            SessionEvent::TurnDropped => {
                if let Some(responder) = self.turns.pop_front() {
                    let _ = responder.respond(PromptResponse::new(StopReason::Cancelled));
                }
            }
            SessionEvent::PermissionAsked(question) => self.ask(question),
            SessionEvent::PermissionWithdrawn { token, id, why } => self.withdraw(&token, id, why),
            SessionEvent::Memory(unsaved) => self.log(Record::Memory(unsaved)),
            SessionEvent::Cleared => {
                self.log(Record::Clear);
                self.answer_command(|c| c == Builtin::Clear, "Conversation cleared.".into());
            }
            SessionEvent::Undone(undone) => self.log(Record::Undo {
                run_id: undone.run_id,
                sequence: undone.sequence,
                files: undone.files,
                deleted: undone.deleted,
            }),
            SessionEvent::ModeSet(mode) => {
                self.send(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    mode.as_str(),
                )));
            }
            SessionEvent::ModelSet(provider) => {
                self.models.set(provider.clone());
                self.translator.set_window(self.models.window());
                self.send(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
                    self.models.options(),
                )));
                let text = format!("Model: {}/{}", provider.kind.name(), provider.model);
                self.answer_command(|c| c == Builtin::Model, text);
            }
            SessionEvent::TierSet(tier) => {
                self.answer_command(|c| c == Builtin::Tier, format!("Tier: {}", tier.as_str()));
            }
            SessionEvent::CompactEnded(outcome) => {
                let text = outcome.text.clone();
                if !self.answer_command(|c| c == Builtin::Compact, text.clone()) {
                    self.say(format!("\n> {text}\n"));
                }
            }
            SessionEvent::Refused { reason } => {
                let any = |c: Builtin| c == Builtin::Compact || c == Builtin::Model;
                if !self.answer_command(any, reason.clone()) {
                    self.say(format!("\n> {reason}\n"));
                }
            }
            SessionEvent::Warning { message } => self.say(format!("\n> warning: {message}\n")),
            _ => {}
        }
    }

    /// How a prompt's turn ended: its stop reason, or a JSON-RPC error with the run's message
    /// for a provider or usage failure.
    fn stop_reason(&mut self, code: Exit) -> Result<PromptResponse, agent_client_protocol::Error> {
        let error = self.last_error.take();
        match code {
            Exit::Interrupted => Ok(PromptResponse::new(StopReason::Cancelled)),
            Exit::Success | Exit::Failed => Ok(PromptResponse::new(match error {
                Some((RunErrorCode::TurnLimit, _)) => StopReason::MaxTurnRequests,
                _ => StopReason::EndTurn,
            })),
            Exit::Usage | Exit::Provider => {
                let (code, message) = error.unwrap_or((
                    RunErrorCode::InternalError,
                    format!("the run failed (exit {})", code.code()),
                ));
                let message = self.redactor.redact_str(&message).unwrap_or(message);
                let code = match code {
                    RunErrorCode::AuthError => agent_client_protocol::ErrorCode::AUTH_REQUIRED,
                    _ => agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                };
                Err(agent_client_protocol::Error::new(code, message))
            }
        }
    }

    /// Ask the client; the response to this request, and nothing else, answers this
    /// question: it goes back to the session under the question's token (a cancelled
    /// request, or an error, is a denial).
    fn ask(&mut self, question: PermissionQuestion) {
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            self.translator.permission_call(&question),
            permission_options(&question),
        );
        let sent = self.cx.send_request(request);
        self.asked
            .insert(question.token.clone(), sent.cancellation_handle());
        let handle = self.handle.clone();
        let token = question.token;
        tokio::spawn(async move {
            let answer = match sent.block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => {
                        match selected.option_id.to_string().as_str() {
                            ALLOW_ONCE => Answer::AllowOnce,
                            ALLOW_ALWAYS => Answer::AllowAlways,
                            REJECT_ALWAYS => Answer::DenyAlways,
                            _ => Answer::Deny,
                        }
                    }
                    _ => Answer::Deny,
                },
                Err(error) => {
                    tracing::warn!(target: "splice::acp", %error, "permission request failed");
                    Answer::Deny
                }
            };
            handle.submit(Op::AnswerPermission { token, answer });
        });
    }

    /// The question no longer waits: its request is cancelled in the editor (an answer
    /// that comes anyway is refused by the session), and its tool call ends, not run.
    fn withdraw(&mut self, token: &str, id: String, why: Withdrawal) {
        if let Some(request) = self.asked.remove(token) {
            let _ = request.cancel();
        }
        let note = format!(
            "Not run: the permission request was withdrawn ({}).",
            why.text()
        );
        let fields = ToolCallUpdateFields::new()
            .status(ToolCallStatus::Failed)
            .content(vec![ToolCallContent::from(ContentBlock::Text(
                TextContent::new(note),
            ))]);
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id, fields,
        )));
    }
}

/// Allow once, allow always (the rule the TUI's "allow always" adds), reject once, reject
/// always.
fn permission_options(question: &PermissionQuestion) -> Vec<PermissionOption> {
    vec![
        PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            ALLOW_ALWAYS,
            format!("Allow always ({})", question.rule),
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(
            REJECT_ALWAYS,
            format!("Reject always ({})", question.rule),
            PermissionOptionKind::RejectAlways,
        ),
    ]
}

/// The driver's channel and its sink, for a new session.
pub(crate) fn channel() -> (
    mpsc::UnboundedSender<Out>,
    mpsc::UnboundedReceiver<Out>,
    Arc<Tap>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let tap = Arc::new(Tap(tx.clone()));
    (tx, rx, tap)
}
