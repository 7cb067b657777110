//! The app loop: terminal input, what the session reports (runs' events, permission questions,
//! a turn's end) and a frame tick in one `select!`; a frame is drawn only when something
//! changed. The app's requests become operations of the core session (`splice_core::session`), whose
//! turns run in tasks of their own on the multi-threaded runtime, and the session log has a
//! writer thread, so neither a blocking call in a run nor a slow disk holds up a keypress or a
//! frame. The terminal is restored on exit, on panic and on SIGTERM/SIGHUP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event as TermEvent, EventStream, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use tokio::sync::mpsc;

use super::app::{App, Outgoing, Request};
use super::cells::Level;
use splice_core::bus::{Preview, Sink};
use splice_core::conversation::Conversation;
use splice_core::exit::Exit;
use splice_core::protocol::Event;
use splice_core::sanitize::redact::Redactor;
use splice_core::session::log::{Record, SessionLog, SessionWriter};
use splice_core::session::{Frontend, Input, McpScope, Op, ReportSink, Session, SessionEvent};

const TICK: Duration = Duration::from_millis(100);

/// What a turn of the session runs (the real run but in tests and the benchmark).
pub use splice_core::session::RunTurn as StartRun;

/// The real run.
pub fn execute_run() -> StartRun {
    splice_core::session::execute_turn()
}

/// What a run sends the app loop, in the order it happened.
enum FromRun {
    /// Boxed: the changes are the rare message, and events are many.
    Event(String, Box<Event>),
    /// The files a write changed (for the transcript; not logged: not an event).
    Changes { id: String, changes: Vec<Preview> },
    /// The session's own report (a turn's end).
    Session(SessionEvent),
    /// An event of a subagent: shown under its call, not kept in the session log (the call
    /// and its result are).
    Agent(Box<(splice_core::bus::AgentScope, Event)>),
}

/// Forwards every event of a run to the app loop; widgets never see the bus.
struct TuiSink(mpsc::UnboundedSender<FromRun>);

impl Sink for TuiSink {
    fn emit(&self, run_id: &str, event: &Event) {
        let _ = self
            .0
            .send(FromRun::Event(run_id.to_string(), Box::new(event.clone())));
    }

    fn emit_agent(
        &self,
        _run_id: &str,
        _task: Option<&str>,
        agent: &splice_core::bus::AgentScope,
        event: &Event,
    ) {
        let _ = self
            .0
            .send(FromRun::Agent(Box::new((agent.clone(), event.clone()))));
    }

    fn changes(&self, _run_id: &str, id: &str, changes: &[Preview]) {
        let _ = self.0.send(FromRun::Changes {
            id: id.to_string(),
            changes: changes.to_vec(),
        });
    }
}

impl ReportSink for TuiSink {
    fn session(&self, event: &SessionEvent) {
        let _ = self.0.send(FromRun::Session(event.clone()));
    }
}

/// Raw mode, alternate screen, mouse and bracketed paste on; all undone on drop.
struct TerminalGuard {
    enhanced_keys: bool,
}

impl TerminalGuard {
    fn enter() -> std::io::Result<TerminalGuard> {
        enable_raw_mode()?;
        let mut out = std::io::stdout();
        crossterm::execute!(
            out,
            EnterAlternateScreen,
            EnableMouseCapture,
            EnableBracketedPaste
        )?;
        // Lets Shift+Enter be told apart from Enter where the terminal supports it.
        let enhanced_keys = crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false);
        if enhanced_keys {
            crossterm::execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
        }
        install_panic_hook();
        Ok(TerminalGuard { enhanced_keys })
    }
}

fn restore_terminal(enhanced_keys: bool) {
    let mut out = std::io::stdout();
    if enhanced_keys {
        let _ = crossterm::execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = crossterm::execute!(
        out,
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal(self.enhanced_keys);
    }
}

fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Restore first so the panic message lands on a usable screen.
        restore_terminal(true);
        previous(info);
    }));
}

pub struct LoopInput {
    pub app: App,
    pub prompt: Option<String>,
    pub session: Option<SessionLog>,
    /// The conversation the session starts from (a reopened session's, replayed): handed to
    /// the session, which owns it from then on.
    pub history: Conversation,
    /// Where the session runs its MCP servers.
    pub mcp: McpScope,
}

/// What the loop draws on and reads from: the real terminal, or a test backend and a scripted
/// event stream (tests and the benchmark).
pub struct Screen<B: Backend, E> {
    pub terminal: Terminal<B>,
    pub events: E,
    pub start: StartRun,
    /// Called after each frame is drawn, with the state it shows.
    pub on_frame: Box<dyn FnMut(&App) + Send>,
}

/// The session hub's next notice, or never without a hub. A receiver that fell behind skips
/// what it missed (`/mcp` shows the state anyway); a closed one stops listening.
async fn mcp_notice(
    notices: &mut Option<tokio::sync::broadcast::Receiver<splice_core::mcp::HubNotice>>,
) -> Option<splice_core::mcp::HubNotice> {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        let Some(receiver) = notices.as_mut() else {
            return std::future::pending().await;
        };
        match receiver.recv().await {
            Ok(notice) => return Some(notice),
            Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => *notices = None,
        }
    }
}

/// Run the TUI until the user quits; the exit code of the last run, or 0.
pub async fn run_loop(input: LoopInput) -> std::io::Result<Exit> {
    let guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let screen = Screen {
        terminal,
        events: EventStream::new(),
        start: execute_run(),
        on_frame: Box::new(|_| {}),
    };
    let code = drive(input, screen).await;
    drop(guard);
    code
}

/// `--resume` without an id: the picker on the real terminal, given back before the app opens.
pub async fn pick(
    sessions: Vec<splice_core::session::log::Summary>,
    theme: &super::theme::Theme,
) -> std::io::Result<Option<String>> {
    let guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    let picker = super::picker::Picker::new(sessions, std::time::SystemTime::now());
    let chosen = super::picker::choose(&mut terminal, &mut EventStream::new(), picker, theme).await;
    drop(guard);
    chosen
}

fn terminal_error(error: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(error.to_string())
}

/// Take the session writer's first failure, if one came in, as a warning.
fn report_session(app: &mut App, writer: Option<&SessionWriter>) {
    if let Some(e) = writer.and_then(SessionWriter::take_error) {
        app.notice(Level::Warning, format!("session not saved: {e}"));
    }
}

/// A run's event: to the session log, then to the app.
fn deliver(app: &mut App, log: &impl Fn(Record), run_id: String, event: Event) {
    log(Record::Event {
        run_id: run_id.clone(),
        event: Box::new(event.clone()),
    });
    app.on_event(&run_id, event);
}

/// What the session sent: an event is delivered, a write's changes go to the transcript, a
/// turn's end lets the next request start. Returns `Some` when the session is done with a
/// turn: its exit code when it ran, `None` when an interrupt dropped it unstarted.
fn receive(app: &mut App, log: &impl Fn(Record), from_run: FromRun) -> Option<Option<Exit>> {
    match from_run {
        FromRun::Event(run_id, event) => deliver(app, log, run_id, *event),
        FromRun::Changes { id, changes } => app.on_changes(&id, changes),
        FromRun::Agent(scoped) => app.on_agent_event(&scoped.0, &scoped.1),
        FromRun::Session(SessionEvent::TurnEnded { code }) => {
            app.on_run_finished();
            return Some(Some(code));
        }
        FromRun::Session(SessionEvent::TurnDropped) => return Some(None),
        // The session owns the conversation: what it reports is what the log keeps.
        FromRun::Session(SessionEvent::Memory(unsaved)) => log(Record::Memory(unsaved)),
        FromRun::Session(SessionEvent::Cleared) => log(Record::Clear),
        FromRun::Session(SessionEvent::Undone(undone)) => {
            // A reopened session replays it: the same undo is not offered again.
            log(Record::Undo {
                run_id: undone.run_id.clone(),
                sequence: undone.sequence,
                files: undone.files.clone(),
                deleted: undone.deleted.clone(),
            });
            app.on_session(SessionEvent::Undone(undone));
        }
        FromRun::Session(event @ (SessionEvent::PermissionAsked(_) | SessionEvent::Login(_))) => {
            // A prompt tells typing from an answer by when it came.
            app.set_now(Instant::now());
            app.on_session(event);
        }
        FromRun::Session(event) => app.on_session(event),
    }
    None
}

/// The loop itself, on any screen.
pub async fn drive<B, E>(input: LoopInput, screen: Screen<B, E>) -> std::io::Result<Exit>
where
    B: Backend,
    E: Stream<Item = std::io::Result<TermEvent>> + Unpin,
{
    let LoopInput {
        mut app,
        prompt,
        session,
        history,
        mcp,
    } = input;
    let Screen {
        mut terminal,
        events: mut terminal_events,
        start,
        mut on_frame,
    } = screen;
    let session = session.map(SessionWriter::spawn).transpose()?;

    let (event_tx, mut event_rx) = mpsc::unbounded_channel::<FromRun>();
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;

    // The session owns the conversation and runs the turns; this loop submits operations and
    // shows what comes back.
    let mut settings = app.settings().clone();
    settings.conversation = history;
    let core = Session::spawn(
        settings,
        Frontend {
            sinks: vec![Arc::new(TuiSink(event_tx.clone())) as Arc<dyn Sink>],
            reports: vec![Arc::new(TuiSink(event_tx.clone())) as Arc<dyn ReportSink>],
            asks: true,
            turn: start,
            mcp,
        },
    );
    app.attach_mcp(core.mcp());
    // Turns submitted and not yet reported ended.
    let mut turns = 0usize;
    let mut last_code = splice_core::exit::Exit::Success;
    let mut input_open = true;
    let mut failed = None;
    // Before any server starts, so no failure goes unsaid.
    let mut mcp_notices = core.mcp().map(|servers| servers.subscribe());
    if let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) {
        app.submit(prompt);
    }
    let log = |record: Record| {
        if let Some(writer) = session.as_ref() {
            writer.append(record);
        }
    };
    loop {
        for outgoing in app.take_outgoing() {
            let request = match outgoing {
                Outgoing::Op(op) => {
                    core.submit(op);
                    continue;
                }
                Outgoing::Request(request) => request,
            };
            match request {
                Request::StartRun(text) => {
                    log(Record::Prompt { text: text.clone() });
                    turns += 1;
                    core.submit(Op::UserTurn(Input::text(text)));
                }
                Request::Interrupt | Request::Quit => core.submit(Op::Interrupt),
            }
        }
        if app.quitting() && turns == 0 {
            break;
        }
        report_session(&mut app, session.as_ref());
        if app.is_dirty() {
            if let Err(error) = terminal.draw(|frame| app.render(frame)) {
                // Nobody can see the turn: it stops, and the session still ends in order.
                failed = Some(terminal_error(error));
                core.submit(Op::Interrupt);
                break;
            }
            on_frame(&app);
        }
        tokio::select! {
            event = terminal_events.next(), if input_open => match event {
                Some(Ok(TermEvent::Key(key))) => {
                    // A prompt tells typing from an answer by when keys arrive.
                    app.set_now(Instant::now());
                    app.on_key(key);
                }
                Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                Some(Ok(TermEvent::Mouse(mouse))) => app.on_mouse(mouse),
                Some(Ok(TermEvent::Resize(..))) => app.mark_dirty(),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => {
                    // No more input: quit once the run has ended, and stop asking.
                    input_open = false;
                    app.request(Request::Quit);
                }
            },
            Some(first) = event_rx.recv() => {
                // Take everything already queued so a burst of deltas costs one frame.
                let mut batch = vec![first];
                while let Ok(more) = event_rx.try_recv() {
                    batch.push(more);
                }
                for from_run in batch {
                    if let Some(code) = receive(&mut app, &log, from_run) {
                        last_code = code.unwrap_or(last_code);
                        turns = turns.saturating_sub(1);
                    }
                }
            }
            Some(notice) = mcp_notice(&mut mcp_notices) => app.on_mcp_notice(notice),
            _ = ticker.tick() => app.on_tick(Instant::now()),
            _ = sigterm.recv() => app.request(Request::Quit),
            _ = sighup.recv() => app.request(Request::Quit),
        }
    }
    drop(terminal);
    // The session ends its MCP servers too, and no start may hand it a server after that.
    core.submit(Op::Shutdown);
    core.ended().await;
    // What the session reported last (a `/clear` just before quitting) still reaches the log.
    while let Ok(from_run) = event_rx.try_recv() {
        receive(&mut app, &log, from_run);
    }
    if let Some(writer) = session {
        // Every record reaches the file before the process ends.
        writer.close();
    }
    match failed {
        Some(error) => Err(error),
        None => Ok(last_code),
    }
}

/// A resumed session's conversation: as saved (`Record::Memory`, exact: tool calls and their
/// results included), or for a session saved before those records, its prompts and answers in
/// prose (each answer's turns apart), with its `/undo` notes where they happened.
#[derive(Default)]
struct Memory {
    exchange: Option<(String, String)>,
    /// A tool call or result came after the answer's last text.
    turn_ended: bool,
}

impl Memory {
    fn flush(&mut self, conversation: &Conversation) {
        if let Some((request, answer)) = self.exchange.take() {
            conversation.push_exchange(&request, &answer);
        }
    }
}

/// A fresh or a resumed session, opened.
pub struct Opened {
    pub log: SessionLog,
    /// The conversation replayed from its records, for the session to start from.
    pub history: Conversation,
}

/// Session id, log, replayed app and conversation for a fresh or a resumed session.
pub fn open_session(
    app: &mut App,
    records: Option<Vec<Record>>,
) -> Result<Opened, splice_core::session::log::SessionError> {
    let history = Conversation::default();
    if let Some(records) = records {
        let conversation = &history;
        let mut memory = Memory::default();
        for record in records {
            match record {
                Record::Session { .. } => {}
                Record::Prompt { text } => {
                    // The saved text may carry the earlier context; show only the request.
                    let shown = splice_core::session::log::typed_request(&text).to_string();
                    memory.flush(conversation);
                    memory.exchange = Some((shown.clone(), String::new()));
                    memory.turn_ended = false;
                    app.replay_request(shown);
                }
                Record::Event { run_id, event } => {
                    if let Some((_, answer)) = memory.exchange.as_mut() {
                        match &*event {
                            Event::Text { delta } => {
                                // A turn after a tool call starts apart from the one before.
                                if memory.turn_ended && !answer.is_empty() {
                                    answer.push_str("\n\n");
                                }
                                memory.turn_ended = false;
                                answer.push_str(delta);
                            }
                            Event::ToolCall { .. } | Event::ToolResult { .. } => {
                                memory.turn_ended = true;
                            }
                            _ => {}
                        }
                    }
                    app.on_event(&run_id, *event);
                }
                Record::Memory(unsaved) => {
                    // The exact record supersedes the prose of the exchange it closes.
                    memory.exchange = None;
                    conversation.apply(unsaved);
                }
                Record::Clear => {
                    memory.exchange = None;
                    conversation.clear();
                    super::commands::forget(app);
                }
                Record::Undo {
                    run_id,
                    sequence,
                    files,
                    deleted,
                } => {
                    memory.flush(conversation);
                    app.undone(&run_id, sequence);
                    if !files.is_empty() {
                        conversation.push_note(&splice_core::conversation::undo_note(&files));
                    }
                    app.notice(Level::Info, super::commands::undo_text(&files, &deleted));
                }
            }
        }
        memory.flush(conversation);
        app.on_resumed();
    }
    // The session starts its conversation's records afresh: the next holds all of it,
    // whatever this file had before.
    let log = SessionLog::open(
        &app.settings().layout,
        &app.settings().session_id,
        &app.settings().cwd,
        Redactor::from_env(),
    )?;
    Ok(Opened { log, history })
}

#[cfg(test)]
#[path = "event_loop_tests.rs"]
mod tests;
