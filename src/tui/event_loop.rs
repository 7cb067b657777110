//! The app loop: terminal input, bus events, permission asks, the run itself and a frame tick in
//! one `select!`; a frame is drawn only when something changed. The terminal is restored on
//! exit, on panic and on SIGTERM/SIGHUP.

use std::future::Future;
use std::pin::Pin;
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
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::{mpsc, oneshot};

use super::app::{App, Request};
use super::cells::Level;
use super::session::{Record, SessionLog};
use crate::bus::{Bus, PermissionAsk, Sink};
use crate::headless::redact::Redactor;
use crate::ids::new_run_id;
use crate::protocol::Event;
use crate::protocol::input::Prompt;
use crate::run;

const TICK: Duration = Duration::from_millis(100);

type RunFuture = Pin<Box<dyn Future<Output = i32>>>;

/// Forwards every event of a run to the app loop; widgets never see the bus.
struct TuiSink(mpsc::UnboundedSender<(String, Event)>);

impl Sink for TuiSink {
    fn emit(&self, run_id: &str, event: &Event) {
        let _ = self.0.send((run_id.to_string(), event.clone()));
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
}

async fn run_to_end(run: &mut Option<RunFuture>) -> i32 {
    match run {
        Some(run) => run.await,
        None => std::future::pending().await,
    }
}

/// Run the TUI until the user quits; the exit code of the last run, or 0.
pub async fn run_loop(input: LoopInput) -> std::io::Result<i32> {
    let LoopInput {
        mut app,
        prompt,
        mut session,
    } = input;
    let guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;

    let (event_tx, mut event_rx) = mpsc::unbounded_channel::<(String, Event)>();
    let (ask_tx, mut ask_rx) = mpsc::unbounded_channel::<PermissionAsk>();
    let mut terminal_events = EventStream::new();
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;

    let mut run: Option<RunFuture> = None;
    let mut interrupt: Option<oneshot::Sender<()>> = None;
    let mut last_code = 0;
    if let Some(prompt) = prompt.filter(|p| !p.trim().is_empty()) {
        app.submit(prompt);
    }
    loop {
        for request in app.take_requests() {
            match request {
                Request::StartRun(text) => {
                    if let Some(log) = session.as_mut()
                        && let Err(e) = log.append(&Record::Prompt { text: text.clone() })
                    {
                        app.notice(Level::Warning, format!("session not saved: {e}"));
                    }
                    let bus = Bus::with_responder(
                        new_run_id(),
                        vec![Arc::new(TuiSink(event_tx.clone())) as Arc<dyn Sink>],
                        ask_tx.clone(),
                    );
                    let settings = app.settings.clone();
                    let (stop_tx, stop_rx) = oneshot::channel::<()>();
                    interrupt = Some(stop_tx);
                    run = Some(Box::pin(async move {
                        let prompt = async { Ok(Prompt::from_text(text)) };
                        let stop = async {
                            // A dropped sender is not an interrupt.
                            if stop_rx.await.is_err() {
                                std::future::pending::<()>().await;
                            }
                        };
                        run::execute(&settings, &bus, prompt, stop).await
                    }));
                }
                Request::Interrupt | Request::Quit => {
                    if let Some(stop) = interrupt.take() {
                        let _ = stop.send(());
                    }
                }
            }
        }
        if app.quit && run.is_none() {
            break;
        }
        if app.dirty {
            terminal.draw(|frame| app.render(frame))?;
        }
        tokio::select! {
            event = terminal_events.next() => match event {
                Some(Ok(TermEvent::Key(key))) => app.on_key(key),
                Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                Some(Ok(TermEvent::Mouse(mouse))) => app.on_mouse(mouse),
                Some(Ok(TermEvent::Resize(..))) => app.dirty = true,
                Some(Ok(_)) => {}
                Some(Err(_)) | None => app.request(Request::Quit),
            },
            Some((run_id, event)) = event_rx.recv() => {
                // Take everything already queued so a burst of deltas costs one frame.
                let mut batch = vec![(run_id, event)];
                while let Ok(more) = event_rx.try_recv() {
                    batch.push(more);
                }
                for (run_id, event) in batch {
                    if let Some(log) = session.as_mut()
                        && let Err(e) = log.append(&Record::Event { run_id: run_id.clone(), event: Box::new(event.clone()) })
                    {
                        app.notice(Level::Warning, format!("session not saved: {e}"));
                    }
                    app.on_event(&run_id, event);
                }
            }
            Some(ask) = ask_rx.recv() => app.on_permission(ask),
            code = run_to_end(&mut run) => {
                last_code = code;
                run = None;
                interrupt = None;
                // Events the run emitted last are already queued; take them before drawing.
                while let Ok((run_id, event)) = event_rx.try_recv() {
                    if let Some(log) = session.as_mut() {
                        let _ = log.append(&Record::Event { run_id: run_id.clone(), event: Box::new(event.clone()) });
                    }
                    app.on_event(&run_id, event);
                }
            }
            _ = ticker.tick() => app.on_tick(Instant::now()),
            _ = sigterm.recv() => app.request(Request::Quit),
            _ = sighup.recv() => app.request(Request::Quit),
        }
    }
    drop(terminal);
    drop(guard);
    Ok(last_code)
}

/// A resumed session's prompts and answers become the model's memory of it, in prose (the
/// tool calls of old runs are not kept).
fn remember_transcript(app: &App) {
    let mut exchange: Option<(String, String)> = None;
    let conversation = &app.settings.conversation;
    for cell in app.transcript.cells() {
        match cell {
            super::cells::Cell::User(text) => {
                if let Some((request, answer)) = exchange.take() {
                    conversation.push_exchange(&request, &answer);
                }
                exchange = Some((text.clone(), String::new()));
            }
            super::cells::Cell::Assistant(text) => {
                if let Some((_, answer)) = exchange.as_mut() {
                    answer.push_str(text);
                }
            }
            _ => {}
        }
    }
    if let Some((request, answer)) = exchange {
        conversation.push_exchange(&request, &answer);
    }
}

/// Session id, log and replayed app for a fresh or a resumed session.
pub fn open_session(
    app: &mut App,
    records: Option<Vec<Record>>,
) -> Result<SessionLog, super::session::SessionError> {
    if let Some(records) = records {
        for record in records {
            match record {
                Record::Session { .. } => {}
                Record::Prompt { text } => {
                    // The saved text may carry the earlier context; show only the request.
                    let shown = text
                        .rsplit_once("\nNew request:\n")
                        .map_or(text.as_str(), |(_, r)| r)
                        .to_string();
                    app.transcript.push(super::cells::Cell::User(shown));
                }
                Record::Event { run_id, event } => app.on_event(&run_id, *event),
            }
        }
        app.run = super::app::RunState::Idle;
        app.pipeline.settle();
        app.transcript.settle_open_tools();
        remember_transcript(app);
        app.notice(Level::Info, "session resumed");
    }
    SessionLog::open(
        &app.settings.data_dir,
        &app.settings.session_id,
        &app.settings.cwd,
        Redactor::from_env(),
    )
}
