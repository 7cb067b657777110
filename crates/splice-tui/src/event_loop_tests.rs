//! The loop against a test backend and scripted keys, with runs that block.

use std::sync::Mutex;
use std::sync::mpsc as std_mpsc;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::backend::TestBackend;

use std::pin::Pin;

use super::*;

type Keys = mpsc::UnboundedSender<std::io::Result<TermEvent>>;

/// A terminal event stream fed by the returned sender; it ends when the sender is dropped.
fn scripted() -> (
    Keys,
    Pin<Box<dyn Stream<Item = std::io::Result<TermEvent>> + Send>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|event| (event, rx))
    });
    (tx, Box::pin(stream))
}

fn key(code: KeyCode) -> std::io::Result<TermEvent> {
    Ok(TermEvent::Key(KeyEvent::from(code)))
}

/// A run that says it started, then blocks its thread (as a `git diff` of a large tree does)
/// until released, for at most 10 s.
fn blocking_run(entered: std_mpsc::Sender<()>, release: std_mpsc::Receiver<()>) -> StartRun {
    let release = Arc::new(Mutex::new(release));
    let entered = Arc::new(Mutex::new(entered));
    Arc::new(move |_settings, _bus, _text, _stop| {
        let (release, entered) = (release.clone(), entered.clone());
        Box::pin(async move {
            if let Ok(entered) = entered.lock() {
                let _ = entered.send(());
            }
            if let Ok(release) = release.lock() {
                let _ = release.recv_timeout(Duration::from_secs(10));
            }
            splice_core::exit::Exit::Success
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_drawn_while_the_run_is_blocked_in_a_blocking_call() {
    let (entered_tx, entered_rx) = std_mpsc::channel();
    let (release_tx, release_rx) = std_mpsc::channel();
    let (frames_tx, frames_rx) = std_mpsc::channel::<String>();
    let (keys, events) = scripted();
    let screen = Screen {
        terminal: Terminal::new(TestBackend::new(80, 20)).expect("build"),
        events,
        start: blocking_run(entered_tx, release_rx),
        on_frame: Box::new(move |app| {
            let _ = frames_tx.send(app.composer().text());
        }),
    };
    // Types while the run is blocked, notes whether the key reached a frame within 2 s, then
    // lets the run end and closes the input (which quits).
    let typist = std::thread::spawn(move || {
        let entered = entered_rx.recv_timeout(Duration::from_secs(5)).is_ok();
        let _ = keys.send(key(KeyCode::Char('x')));
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut drawn = false;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            if frames_rx.recv_timeout(left).is_ok_and(|text| text == "x") {
                drawn = true;
                break;
            }
        }
        let _ = release_tx.send(());
        drop(keys);
        (entered, drawn)
    });
    let input = LoopInput {
        app: super::super::snapshot_tests::app(),
        prompt: Some("diff the tree".into()),
        session: None,
        history: Conversation::default(),
        mcp: splice_core::session::McpScope::PerTurn,
    };
    let code = drive(input, screen).await.expect("drive input");
    let (entered, drawn) = typist.join().unwrap_or_else(|_| panic!("typist panicked"));
    assert!(entered, "the run never started");
    assert!(
        drawn,
        "the key was not drawn within 2 s while the run was blocked"
    );
    assert_eq!(code, splice_core::exit::Exit::Success);
}

/// The app and the conversation replayed from `records`.
fn replayed(records: Vec<Record>) -> (App, Conversation, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut app = super::super::snapshot_tests::app();
    app.settings_mut().layout = splice_core::layout::Layout::at(dir.path());
    let opened = open_session(&mut app, Some(records)).expect("open session app");
    (app, opened.history, dir)
}

fn exchange(request: &str, answer: &str) -> Vec<Record> {
    vec![
        Record::Prompt {
            text: request.into(),
        },
        Record::Event {
            run_id: "run_1".into(),
            event: Box::new(Event::text(answer)),
        },
    ]
}

fn texts(conversation: &Conversation) -> Vec<String> {
    conversation
        .messages()
        .into_iter()
        .map(|m| match m {
            splice_core::provider::Message::User { text, .. } => format!("user: {text}"),
            splice_core::provider::Message::Assistant { text, .. } => format!("assistant: {text}"),
            splice_core::provider::Message::ToolResult { content, .. } => {
                format!("tool: {content}")
            }
        })
        .collect()
}

#[test]
fn a_resumed_session_has_its_undo_note_where_the_undo_happened() {
    let mut records = exchange("write a.txt", "Wrote it.");
    records.push(Record::Event {
        run_id: "run_1".into(),
        event: Box::new(Event::Checkpoint {
            checkpoint: splice_core::protocol::events::CheckpointInfo {
                sequence: 1,
                tool: "write_file".into(),
                files: vec!["a.txt".into()],
            },
        }),
    });
    records.push(Record::Undo {
        run_id: "run_1".into(),
        sequence: 1,
        files: vec!["a.txt".into()],
        deleted: Vec::new(),
    });
    records.extend(exchange("and now?", "It is back."));
    let (app, history, _dir) = replayed(records);
    let texts = texts(&history);
    assert_eq!(texts.len(), 5, "{texts:?}");
    assert_eq!(texts[1], "assistant: Wrote it.");
    assert!(
        texts[2].starts_with("user: [Note from Splice") && texts[2].contains("a.txt"),
        "{texts:?}"
    );
    assert_eq!(texts[3], "user: and now?");
    assert!(
        app.checkpoints().is_empty(),
        "the undone checkpoint is offered again"
    );
}

#[test]
fn a_resumed_session_forgets_what_clear_cleared() {
    let mut records = exchange("secret plan", "Noted.");
    records.push(Record::Clear);
    records.extend(exchange("fresh start", "Hello."));
    let (app, history, _dir) = replayed(records);
    assert_eq!(
        texts(&history),
        ["user: fresh start", "assistant: Hello."],
        "the cleared exchange came back"
    );
    let shown: Vec<String> = app.transcript().cells().map(|c| format!("{c:?}")).collect();
    assert!(
        !shown.iter().any(|c| c.contains("secret plan")),
        "{shown:?}"
    );
}

/// The servers a session starts with are asked for before its first request: the loop hands
/// the session both in that order, so the request's run waits for them (its tools offered).
#[test]
fn operations_and_requests_reach_the_loop_in_the_order_asked() {
    let mut app = super::super::snapshot_tests::app();
    app.submit_op(Op::StartMcp {
        start: Vec::new(),
        unapproved: Vec::new(),
    });
    app.submit("run the long operation".into());
    let order: Vec<&str> = app
        .take_outgoing()
        .iter()
        .map(|o| match o {
            Outgoing::Op(Op::StartMcp { .. }) => "start servers",
            Outgoing::Request(Request::StartRun(_)) => "start run",
            _ => "other",
        })
        .collect();
    assert_eq!(order, ["start servers", "start run"]);
}

/// `/model` is the session's to apply: a provider it does not know is refused, the refusal is
/// shown, and the status line keeps the model the session still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_the_session_refuses_leaves_the_old_one_shown() {
    let (frames_tx, frames_rx) = std_mpsc::channel::<(String, String)>();
    let (keys, events) = scripted();
    let screen = Screen {
        terminal: Terminal::new(TestBackend::new(100, 20)).expect("build"),
        events,
        start: execute_run(),
        on_frame: Box::new(move |app| {
            let notice = match app.transcript().last() {
                Some(super::super::cells::Cell::Notice(_, text)) => text.clone(),
                _ => String::new(),
            };
            let _ = frames_tx.send((app.settings().provider.model.clone(), notice));
        }),
    };
    // Types the command, waits (at most 10 s) for the frame showing the refusal and notes the
    // model shown with it, then closes the input (which quits).
    let typist = std::thread::spawn(move || {
        for c in "/model acme/x".chars() {
            let _ = keys.send(key(KeyCode::Char(c)));
        }
        let _ = keys.send(key(KeyCode::Enter));
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut shown = None;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match frames_rx.recv_timeout(left) {
                Ok((model, notice)) if notice.contains("unknown provider `acme`") => {
                    shown = Some(model);
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        drop(keys);
        shown
    });
    let input = LoopInput {
        app: super::super::snapshot_tests::app(),
        prompt: None,
        session: None,
        history: Conversation::default(),
        mcp: splice_core::session::McpScope::PerTurn,
    };
    drive(input, screen).await.expect("drive input");
    let shown = typist.join().unwrap_or_else(|_| panic!("typist panicked"));
    assert_eq!(
        shown.as_deref(),
        Some("gpt-4.1"),
        "the refusal was never shown"
    );
}

/// The session log is written from what the session reports: its conversation after the run,
/// then the `/clear` typed during it, just before quitting; reopened, the session starts
/// empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_log_holds_what_the_session_reported_of_its_conversation() {
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut app = super::super::snapshot_tests::app();
    app.settings_mut().layout = splice_core::layout::Layout::at(dir.path());
    let opened = open_session(&mut app, None).expect("open session app");
    // The run answers in the session's conversation, as a real one does.
    let answering: StartRun = Arc::new(|settings, _bus, _input, _stop| {
        Box::pin(async move {
            settings.conversation.push_exchange("hello", "Hi.");
            splice_core::exit::Exit::Success
        })
    });
    let (keys, events) = scripted();
    let screen = Screen {
        terminal: Terminal::new(TestBackend::new(80, 20)).expect("build"),
        events,
        start: answering,
        on_frame: Box::new(|_| {}),
    };
    // `/clear` typed during the run (the session applies it when the run ends), and at once
    // the end of input, which quits.
    for c in "/clear".chars() {
        let _ = keys.send(key(KeyCode::Char(c)));
    }
    let _ = keys.send(key(KeyCode::Enter));
    drop(keys);
    let input = LoopInput {
        app,
        prompt: Some("hello".into()),
        session: Some(opened.log),
        history: opened.history,
        mcp: splice_core::session::McpScope::PerTurn,
    };
    drive(input, screen).await.expect("drive input");
    let records = splice_core::session::log::load(
        &splice_core::layout::Layout::at(dir.path()),
        "session_test",
    )
    .expect("load dir");
    let kinds: Vec<&str> = records
        .iter()
        .filter_map(|r| match r {
            Record::Memory(_) => Some("memory"),
            Record::Clear => Some("clear"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["memory", "clear"], "{records:?}");
    let (_, history, _dir) = replayed(records);
    assert!(history.messages().is_empty(), "{:?}", history.messages());
}
