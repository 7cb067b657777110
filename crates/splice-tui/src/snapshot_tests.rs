//! Snapshots of every visible state, drawn with ratatui's `TestBackend`.

use std::path::PathBuf;
use std::time::Duration;

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::app::App;
use super::permission::GUARD;
use super::theme::Theme;
use splice_core::bus::{Answer, PermissionQuestion, Preview};
use splice_core::permissions::{PermissionMode, Policy};
use splice_core::protocol::events::{Risk, ToolStatus, UsageEvent};
use splice_core::protocol::marker::{StageMarker, StageStatus};
use splice_core::protocol::{ErrorCode, Event, SideEffect, WarningCode};
use splice_core::provider::pricing::PriceTable;
use splice_core::provider::{ProviderConfig, ProviderKind};
use splice_core::settings::{RunSettings, Tier};
use splice_core::usage::Budget;

pub fn settings() -> RunSettings {
    let mut provider =
        ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4.1")).expect("from env");
    provider.api_key = None;
    RunSettings {
        session_id: "session_test".into(),
        cwd: PathBuf::from("/repo"),
        provider,
        policy: Policy::new(PermissionMode::Ask, vec![]),
        tier: Tier::Auto,
        max_turns: 40,
        layout: splice_core::layout::Layout::at(std::path::Path::new("/nonexistent/splice-data")),
        pricing: PriceTable::default(),
        budget: Budget::default(),
        pipeline: Default::default(),
        conversation: Default::default(),
        packages: Default::default(),
        mcp: Default::default(),
        hooks: Default::default(),
    }
}

pub fn app() -> App {
    App::new(settings(), Theme::ansi())
}

pub fn draw(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    let screen = terminal.backend().to_string();
    assert!(!screen.contains('\u{0}'), "a raw NUL reached the screen");
    screen
}

fn start(app: &mut App, prompt: &str) {
    app.submit(prompt.to_string());
    app.on_event(
        "run_1",
        Event::RunStart {
            session_id: "session_test".into(),
            cwd: "/repo".into(),
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            api_model: "gpt-4.1".into(),
        },
    );
}

fn usage(cost: Option<f64>) -> Event {
    Event::Usage(UsageEvent {
        provider: "openai".into(),
        model: "gpt-4.1".into(),
        stage: "agent".into(),
        iteration: 1,
        usage_sequence: 1,
        usage_reported: true,
        prompt_tokens: 1000,
        completion_tokens: 234,
        total_tokens: 1234,
        cost_usd: cost,
        cost_status: cost
            .is_none()
            .then_some(splice_core::protocol::events::CostStatus::Unpriced),
        ..UsageEvent::default()
    })
}

const ANSWER: &str = "## Plan\n\nI will change **two** things:\n\n1. rename `parse` to `parse_line`\n2. add a test\n\n```rust\nfn parse_line(s: &str) -> Option<u32> {\n    s.trim().parse().ok()\n}\n```\n";

#[test]
fn empty_screen() {
    let mut app = app();
    assert_snapshot!(draw(&mut app, 80, 16));
}

#[test]
fn streaming_text() {
    let mut app = app();
    start(&mut app, "Rename parse and add a test");
    // Deltas cut mid-word and mid-fence, as a model streams them.
    let cut = ANSWER.len() - 30;
    app.on_event("run_1", Event::text(&ANSWER[..40]));
    app.on_event("run_1", Event::text(&ANSWER[40..cut]));
    app.on_event("run_1", usage(None));
    let screen = draw(&mut app, 80, 24);
    assert!(screen.contains("cost unpriced"), "{screen}");
    assert!(!screen.contains("$0"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn tool_call_with_folded_result() {
    let mut app = app();
    start(&mut app, "What is in src?");
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_1".into(),
            name: "run_command".into(),
            args: json!({"command": "ls src"}),
            side_effect: SideEffect::Execute,
        },
    );
    app.on_event(
        "run_1",
        Event::PermissionDecision {
            id: "call_1".into(),
            name: "run_command".into(),
            action: splice_core::protocol::PermissionAction::Allow,
            permission_granted: true,
            decision_reason: "approved in TUI".into(),
        },
    );
    app.on_event(
        "run_1",
        Event::ToolResult {
            id: "call_1".into(),
            status: ToolStatus::Ok,
            output: "agent.rs\nbus.rs\ncli.rs\nmain.rs\nrun.rs\n".into(),
            truncated: false,
            changed_files: None,
            display: None,
        },
    );
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_2".into(),
            name: "read_file".into(),
            args: json!({"path": "src/main.rs"}),
            side_effect: SideEffect::Read,
        },
    );
    app.on_event("run_1", usage(Some(0.0123)));
    let screen = draw(&mut app, 80, 20);
    assert!(screen.contains("… 2 more lines"), "{screen}");
    assert!(screen.contains("$0.0123"), "{screen}");
    assert_snapshot!(screen);
}

fn write_ask() -> PermissionQuestion {
    PermissionQuestion {
        token: "q_1".into(),
        id: "call_1".into(),
        tool: "edit_file".into(),
        side_effect: SideEffect::Write,
        risk: Some(Risk::Medium),
        reason: "Changes files in the working tree.".into(),
        rule: "edit_file".into(),
        always: splice_core::bus::AlwaysScope::Session,
        previews: vec![Preview::Write {
            path: "src/parse.rs".into(),
            before: Some("fn parse(s: &str) -> u32 {\n    s.parse().unwrap()\n}\n".into()),
            after: Some(
                "fn parse_line(s: &str) -> Option<u32> {\n    s.trim().parse().ok()\n}\n".into(),
            ),
        }],
    }
}

#[test]
fn permission_prompt_for_a_write_shows_its_diff_and_queues() {
    let mut app = app();
    start(&mut app, "Make parse safe");
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_1".into(),
            name: "edit_file".into(),
            args: json!({"path": "src/parse.rs"}),
            side_effect: SideEffect::Write,
        },
    );
    let first = write_ask();
    let second = write_ask();
    app.on_permission(first);
    app.on_permission(second);
    app.set_now(app.now() + GUARD);
    let screen = draw(&mut app, 90, 26);
    assert!(screen.contains("1 more waiting"), "{screen}");
    assert!(screen.contains("waiting for you"), "{screen}");
    assert_snapshot!(screen);
    // `a` twice answers the first; the second then shows, and Esc denies it once its own
    // guard is over.
    app.set_now(app.now() + GUARD);
    app.on_key(key('a'));
    app.on_key(key('a'));
    assert_eq!(answered(&mut app), Some(Answer::AllowAlways));
    assert!(answered(&mut app).is_none());
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 1);
    // A key right after an answer is not taken as the next prompt's answer.
    app.on_key(key('n'));
    assert!(answered(&mut app).is_none());
    assert_eq!(app.composer().text(), "n");
    app.set_now(app.now() + GUARD);
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Esc,
    ));
    assert_eq!(answered(&mut app), Some(Answer::Deny));
    assert!(!app.modals().has(super::modals::Kind::Permission));
}

/// A question the session withdrew (its subagent's time ran out) leaves the screen; the one
/// queued behind it shows, and nothing was answered. Prompts are told apart by their token,
/// not by the tool call's id (the model's, which a later question may share): the answer to
/// the one left names its own token.
#[test]
fn a_withdrawn_permission_prompt_leaves_the_screen() {
    let mut app = app();
    start(&mut app, "Make parse safe");
    let second = PermissionQuestion {
        token: "q_2".into(),
        ..write_ask()
    };
    app.on_permission(write_ask());
    app.on_permission(second);
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 2);
    app.on_session(splice_core::session::SessionEvent::PermissionWithdrawn {
        token: "q_1".into(),
        id: "call_1".into(),
        why: splice_core::session::Withdrawal::AskerStopped,
    });
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 1);
    assert!(answered(&mut app).is_none());
    app.set_now(app.now() + GUARD);
    let screen = draw(&mut app, 90, 26);
    assert!(!screen.contains("1 more waiting"), "{screen}");
    assert!(screen.contains("withdrawn"), "{screen}");
    app.set_now(app.now() + GUARD);
    app.on_key(key('y'));
    let token = app.take_ops().into_iter().find_map(|op| match op {
        splice_core::session::Op::AnswerPermission { token, .. } => Some(token),
        _ => None,
    });
    assert_eq!(token.as_deref(), Some("q_2"));
    assert!(!app.modals().has(super::modals::Kind::Permission));
}

/// The next answer the app sent the session, if any.
fn answered(app: &mut App) -> Option<Answer> {
    app.take_ops().into_iter().find_map(|op| match op {
        splice_core::session::Op::AnswerPermission { answer, .. } => Some(answer),
        _ => None,
    })
}

fn key(c: char) -> crossterm::event::KeyEvent {
    crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c))
}

fn marker(stage: &str, status: StageStatus, ms: Option<u64>) -> String {
    StageMarker {
        stage: stage.into(),
        status,
        iteration: 2,
        index: 1,
        total: 6,
        ms,
        detail: (status == StageStatus::Failed).then(|| "2 tests failed".into()),
        task_id: None,
    }
    .encode()
}

fn pipeline_app() -> App {
    let mut app = app();
    start(&mut app, "Add input validation");
    let t0 = app.now();
    app.on_event(
        "run_1",
        Event::reasoning(format!(
            "Starting pipeline iteration 2\n{}{}{}",
            marker("code_writer", StageStatus::Done, Some(4200)),
            marker("test_generator", StageStatus::Failed, Some(1300)),
            marker("static_analyzer", StageStatus::Skipped, None),
        )),
    );
    app.on_event(
        "run_1",
        Event::reasoning(marker("security_auditor", StageStatus::Start, None)),
    );
    app.set_now(t0 + Duration::from_millis(2500));
    app.set_tick(3);
    app
}

#[test]
fn pipeline_panel_mid_run() {
    let mut app = pipeline_app();
    let screen = draw(&mut app, 100, 16);
    assert!(screen.contains("2.5s"), "{screen}");
    assert!(screen.contains("iteration 2"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn stage_submissions_stream_then_decode() {
    let mut app = pipeline_app();
    let id = "call_cw".to_string();
    app.on_event(
        "run_1",
        Event::ToolCallStart {
            id: id.clone(),
            name: "submit_code".into(),
        },
    );
    app.on_event(
        "run_1",
        Event::ToolCallDelta {
            id: id.clone(),
            delta: r#"{"files":[{"path":"src/config.rs","#.into(),
        },
    );
    let streaming = draw(&mut app, 100, 16);
    assert!(streaming.contains("receiving…"), "{streaming}");
    app.on_event(
        "run_1",
        Event::ToolCallDelta {
            id,
            delta: r#""content":"fn x() {}"}],"summary":"validate parse_config input"}"#.into(),
        },
    );
    let screen = draw(&mut app, 100, 16);
    assert!(screen.contains("⎿ src/config.rs"), "{screen}");
    assert!(
        !screen.contains("running…"),
        "a submission is not an execution: {screen}"
    );
    assert_snapshot!(screen);
}

#[test]
fn pipeline_panel_is_hidden_without_markers() {
    let mut app = app();
    start(&mut app, "hi");
    app.on_event("run_1", Event::reasoning("Tier auto: light\n"));
    let screen = draw(&mut app, 100, 10);
    assert!(!screen.contains("pipeline"), "{screen}");
    assert!(screen.contains("Tier auto: light"), "{screen}");
}

#[test]
fn error_and_run_end() {
    let mut app = app();
    start(&mut app, "hi");
    app.on_event(
        "run_1",
        Event::warning(
            WarningCode::ProviderRetry,
            "rate limited (429); retrying in 1s",
        ),
    );
    app.on_event(
        "run_1",
        Event::error(
            ErrorCode::AuthError,
            "the provider refused the API key (401)",
        ),
    );
    app.on_event("run_1", Event::run_end(splice_core::exit::Exit::Provider));
    let screen = draw(&mut app, 80, 12);
    assert!(screen.contains("exit 3"), "{screen}");
    assert_snapshot!(screen);
}

fn busy_app() -> App {
    let mut app = pipeline_app();
    app.on_event("run_1", Event::text(ANSWER));
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_9".into(),
            name: "search_files".into(),
            args: json!({"pattern": "fn parse", "path": "src"}),
            side_effect: SideEffect::Read,
        },
    );
    app
}

#[test]
fn narrow_terminal() {
    let mut app = busy_app();
    let screen = draw(&mut app, 40, 30);
    assert_snapshot!(screen);
}

#[test]
fn wide_terminal() {
    let mut app = busy_app();
    let screen = draw(&mut app, 160, 30);
    assert_snapshot!(screen);
}

#[test]
fn slash_popup() {
    let mut app = app();
    app.on_key(key('/'));
    app.on_key(key('m'));
    let screen = draw(&mut app, 80, 14);
    assert!(screen.contains("/model"), "{screen}");
    assert!(screen.contains("/mode"), "{screen}");
    assert!(!screen.contains("/quit"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn custom_commands_in_the_popup_and_help() {
    let root = tempfile::tempdir().expect("a project");
    let commands = root.path().join(".claude/commands/git");
    std::fs::create_dir_all(&commands).expect("commands folder");
    std::fs::write(
        commands.join("commit.md"),
        "---\ndescription: Commit the staged changes\nargument-hint: MESSAGE\n---\nCommit: $ARGUMENTS",
    )
    .expect("command file");
    std::fs::write(root.path().join(".claude/commands/model.md"), "shadow").expect("file");
    let mut app = app_with_custom(root.path());
    app.on_key(key('/'));
    app.on_key(key('g'));
    let screen = draw(&mut app, 80, 14);
    assert!(screen.contains("/git:commit"), "{screen}");
    // A file that is not offered says so once, at the start.
    assert!(
        screen.contains("model.md is not offered: /model is"),
        "{screen}"
    );
    assert_snapshot!(screen);
    let mut app = app_with_custom(root.path());
    app.submit("/help".into());
    let screen = draw(&mut app, 100, 30);
    assert!(
        screen.contains("Commit the staged changes (project, .claude)"),
        "{screen}"
    );
    // A file cannot replace a built-in command.
    assert!(!screen.contains("shadow"), "{screen}");
    // A custom command is sent as the request; the session expands it.
    let mut app = app_with_custom(root.path());
    app.submit("/git:commit fix it".into());
    assert!(app.is_running());
    // A first word that is a path, not a command name, is a request as written.
    let mut app = app_with_custom(root.path());
    app.submit("/usr/bin/foo is broken".into());
    assert!(app.is_running());
}

fn app_with_custom(root: &std::path::Path) -> App {
    let mut settings = settings();
    settings.cwd = root.to_path_buf();
    let mut app = App::new(settings, Theme::ansi());
    app.set_custom_commands(splice_core::slash::Catalog::load(root, None));
    app
}

#[test]
fn scrolled_view_stays_put_while_text_streams() {
    let mut app = app();
    start(&mut app, "long answer");
    for i in 0..60 {
        app.on_event("run_1", Event::text(format!("line {i}\n\n")));
    }
    draw(&mut app, 60, 12);
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::PageUp,
    ));
    let before = draw(&mut app, 60, 12);
    app.on_event("run_1", Event::text("more text arriving\n\n"));
    let after = draw(&mut app, 60, 12);
    let body = |s: &str| s.lines().take(6).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&before), body(&after));
    // Back at the bottom (the view moved up by the new rows), the newest text is visible.
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::PageDown,
    ));
    assert!(app.transcript().scrolled());
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::PageDown,
    ));
    assert!(!app.transcript().scrolled());
    let bottom = draw(&mut app, 60, 12);
    assert!(bottom.contains("more text arriving"), "{bottom}");
}

#[test]
fn themes_render_with_their_colours() {
    for name in ["dark", "light", "high-contrast"] {
        let theme = Theme::load(name).expect("load name");
        let mut app = App::new(settings(), theme.clone());
        start(&mut app, "hi");
        let mut terminal =
            Terminal::new(TestBackend::new(40, 8)).unwrap_or_else(|e| panic!("terminal: {e}"));
        terminal
            .draw(|frame| app.render(frame))
            .unwrap_or_else(|e| panic!("draw: {e}"));
        let buffer = terminal.backend().buffer();
        // The user's prompt is drawn in the theme's user colour.
        let cell = &buffer[(0, 0)];
        assert_eq!(cell.symbol(), "›");
        assert_eq!(cell.fg, theme.user, "{name}");
        // The theme's own background under everything, empty cells included.
        assert_eq!(buffer[(39, 3)].bg, theme.background, "{name}");
        assert_ne!(theme.background, ratatui::style::Color::Reset, "{name}");
    }
}

#[test]
fn interrupt_keys() {
    let mut app = app();
    start(&mut app, "hi");
    app.take_requests();
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Esc,
    ));
    assert_eq!(app.take_requests(), vec![super::app::Request::Interrupt]);
    app.on_event(
        "run_1",
        Event::run_end(splice_core::exit::Exit::Interrupted),
    );
    let ctrl_c = crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('c'),
        crossterm::event::KeyModifiers::CONTROL,
    );
    app.on_key(ctrl_c);
    assert!(!app.quitting());
    app.on_key(ctrl_c);
    assert!(app.quitting());
}

#[test]
fn tiny_terminals_never_panic() {
    for (width, height) in [
        (40, 1),
        (40, 2),
        (40, 4),
        (1, 1),
        (11, 30),
        (12, 5),
        (13, 6),
        (200, 5),
    ] {
        let mut app = busy_app();
        // A permission prompt and the slash popup open too: the largest things on screen.
        let ask = write_ask();
        app.on_permission(ask);
        app.on_key(key('/'));
        let screen = draw(&mut app, width, height);
        if height < 5 || width < 12 {
            assert!(
                screen.contains("terminal") || width < 18,
                "{width}x{height}: {screen}"
            );
        }
    }
}

/// Records what the session reports, for a test that plays the event loop.
pub(super) struct SessionReports(
    pub(super) std::sync::mpsc::Sender<splice_core::session::SessionEvent>,
);

impl splice_core::session::ReportSink for SessionReports {
    fn session(&self, event: &splice_core::session::SessionEvent) {
        let _ = self.0.send(event.clone());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_walks_back_across_runs() {
    use splice_core::checkpoint::CheckpointStore;
    use splice_core::confine::change::{FileChange, apply};
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let root = dir.path().join("repo");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&root).expect("create root");
    let write = |run: &str, store: &CheckpointStore, path: &str, content: &str| {
        let full = root.join(path);
        let change = FileChange {
            before: std::fs::read(&full).ok(),
            after: Some(content.as_bytes().to_vec()),
            shown: path.to_string(),
            path: full,
        };
        let info = store
            .save("write_file", std::slice::from_ref(&change))
            .expect("save write_file");
        apply(&root, &[change]).expect("apply root");
        (run.to_string(), Event::Checkpoint { checkpoint: info })
    };
    let mut settings = settings();
    settings.cwd = root.clone();
    settings.layout = splice_core::layout::Layout::at(&data);
    let mut app = App::new(settings, Theme::ansi());
    let first = CheckpointStore::new(&splice_core::layout::Layout::at(&data), "run_a", &root);
    let second = CheckpointStore::new(&splice_core::layout::Layout::at(&data), "run_b", &root);
    for (run, event) in [
        write("run_a", &first, "a.txt", "a1"),
        write("run_a", &first, "new.txt", "n"),
        write("run_b", &second, "a.txt", "a2"),
    ] {
        app.on_event(&run, event);
    }
    // The event loop's part: the app's operations to a session, its reports back.
    let (reports, reported) = std::sync::mpsc::channel();
    let session = splice_core::session::Session::spawn(
        app.settings().clone(),
        splice_core::session::Frontend {
            sinks: vec![],
            reports: vec![std::sync::Arc::new(SessionReports(reports))],
            asks: false,
            turn: splice_core::session::execute_turn(),
            mcp: splice_core::session::McpScope::PerTurn,
        },
    );
    let undo = |app: &mut App| {
        app.submit("/undo".into());
        for op in app.take_ops() {
            session.submit(op);
        }
        // Up to the undo's report (the conversation's record follows it).
        loop {
            let event = reported
                .recv_timeout(Duration::from_secs(10))
                .expect("recv timeout");
            let done = matches!(
                event,
                splice_core::session::SessionEvent::Undone(_)
                    | splice_core::session::SessionEvent::UndoFailed { .. }
            );
            app.on_session(event);
            if done {
                break;
            }
        }
    };
    let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
    undo(&mut app);
    assert_eq!(read("a.txt").as_deref(), Some("a1"));
    undo(&mut app);
    assert_eq!(
        read("new.txt"),
        None,
        "the second /undo reaches into the earlier run"
    );
    undo(&mut app);
    assert_eq!(read("a.txt"), None);
    app.submit("/undo".into());
    let screen = draw(&mut app, 80, 20);
    assert!(screen.contains("nothing to undo"), "{screen}");
}

#[test]
fn a_notice_during_streaming_does_not_split_the_answer() {
    let mut app = app();
    start(&mut app, "explain");
    app.on_event("run_1", Event::text("The answer streams wor"));
    app.submit("/cost".into());
    app.on_event("run_1", Event::text("d by word."));
    let screen = draw(&mut app, 80, 14);
    assert!(
        screen.contains("The answer streams word by word."),
        "{screen}"
    );
    let answer_row = screen.find("word by word").unwrap_or(usize::MAX);
    let notice_row = screen.find("tokens (").unwrap_or(0);
    assert!(
        notice_row > answer_row,
        "the notice lands after the answer: {screen}"
    );
}

#[test]
fn a_resumed_session_whose_run_never_ended_shows_nothing_still_running() {
    use splice_core::session::log::Record;
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let mut settings = settings();
    settings.layout = splice_core::layout::Layout::at(dir.path());
    let mut app = App::new(settings, Theme::ansi());
    let marker = StageMarker {
        stage: "code_writer".into(),
        status: StageStatus::Start,
        iteration: 1,
        index: 1,
        total: 3,
        ms: None,
        detail: None,
        task_id: None,
    };
    let event = |event: Event| Record::Event {
        run_id: "run_1".into(),
        event: Box::new(event),
    };
    let records = vec![
        Record::Prompt {
            text: "fix it".into(),
        },
        event(Event::reasoning(marker.encode())),
        event(Event::ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            args: json!({"path": "a.rs"}),
            side_effect: SideEffect::Read,
        }),
    ];
    super::event_loop::open_session(&mut app, Some(records)).expect("open session app");
    let screen = draw(&mut app, 100, 16);
    assert!(!screen.contains("running…"), "{screen}");
    assert!(screen.contains("interrupted"), "{screen}");
    assert!(!app.pipeline().running(), "a stage is still spinning");
}

#[test]
fn a_themed_background_has_no_holes_under_overlays() {
    let theme = Theme::load("dark").expect("load dark");
    let mut app = busy_app();
    app.set_theme(theme.clone());
    let ask = write_ask();
    app.on_permission(ask);
    let mut terminal =
        Terminal::new(TestBackend::new(90, 26)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    let buffer = terminal.backend().buffer();
    let holes = buffer
        .content()
        .iter()
        .filter(|cell| cell.bg == ratatui::style::Color::Reset)
        .count();
    assert_eq!(holes, 0, "cells showing the terminal's own background");
}

#[test]
fn escape_sequences_in_model_and_tool_text_never_reach_the_terminal() {
    let hostile =
        "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobyBoaQ==\u{7}\u{1b}[31mred\u{1b}[2J\u{9b}1m\r";
    let mut app = app();
    start(&mut app, "Say it");
    app.on_event("run_1", Event::text(format!("answer {hostile} end\n")));
    app.on_event("run_1", Event::reasoning(format!("thinking {hostile}\n")));
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_1".into(),
            name: "run_command".into(),
            args: json!({"command": format!("printf '{hostile}'")}),
            side_effect: SideEffect::Execute,
        },
    );
    app.on_event(
        "run_1",
        Event::ToolResult {
            id: "call_1".into(),
            status: ToolStatus::Ok,
            output: format!("out {hostile}\n"),
            truncated: false,
            changed_files: None,
            display: None,
        },
    );
    app.on_event("run_1", Event::warning(WarningCode::ProviderRetry, hostile));
    let mut terminal =
        Terminal::new(TestBackend::new(100, 30)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    let buffer = terminal.backend().buffer();
    for cell in buffer.content() {
        assert!(
            !cell.symbol().chars().any(char::is_control),
            "a control character reached a cell: {:?}",
            cell.symbol()
        );
    }
    let screen = terminal.backend().to_string();
    assert!(screen.contains("answer"), "{screen}");
    assert!(screen.contains("out"), "{screen}");
}

/// A marker as any stream-json producer writes it.
fn raw_marker(payload: serde_json::Value) -> String {
    format!("\u{0}STAGE{payload}\u{0}")
}

fn iterations_app() -> App {
    let mut app = app();
    start(&mut app, "Fix add in calc.py");
    let m = |stage: &str, status: &str, iteration: u32, index: u32, detail: Option<&str>| {
        let mut payload = json!({"stage": stage, "status": status, "iteration": iteration,
            "index": index, "total": 3, "maxIterations": 3});
        if status != "start" && status != "skipped" {
            payload["ms"] = json!(1200);
        }
        if let Some(detail) = detail {
            payload["detail"] = json!(detail);
        }
        raw_marker(payload)
    };
    let failure = "test_add failed: AssertionError: 6 != 5 in test_calc.py line 10; \
                   add(2, 3) returned 6, expected 5";
    let deltas = [
        "Starting pipeline iteration 1\n".to_string(),
        m("code_writer", "start", 1, 1, None),
        m("code_writer", "done", 1, 1, None),
        m("test_runner", "start", 1, 2, None),
        m("test_runner", "failed", 1, 2, Some(failure)),
        m("acceptance_verifier", "skipped", 1, 3, None),
        "Starting pipeline iteration 2\n".to_string(),
        m("code_writer", "start", 2, 1, None),
        m("code_writer", "done", 2, 1, None),
        m("test_runner", "start", 2, 2, None),
    ];
    for delta in deltas {
        app.on_event("run_1", Event::reasoning(delta));
    }
    app.set_tick(2);
    app
}

#[test]
fn pipeline_panel_keeps_earlier_iterations_and_expands_a_failure() {
    let mut app = iterations_app();
    let folded = draw(&mut app, 100, 20);
    assert!(folded.contains("iteration 2 of 3"), "{folded}");
    assert!(folded.contains("iteration 1 ✓ ✗ –"), "{folded}");
    assert!(!folded.contains("expected 5"), "{folded}");
    assert!(folded.contains("Ctrl-T full detail"), "{folded}");
    assert_snapshot!("pipeline_iterations_folded", folded);
    let ctrl_t = crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('t'),
        crossterm::event::KeyModifiers::CONTROL,
    );
    app.on_key(ctrl_t);
    assert_eq!(
        app.composer().text(),
        "",
        "the key is the panel's, not the composer's"
    );
    let expanded = draw(&mut app, 100, 20);
    assert!(expanded.contains("expected 5"), "{expanded}");
    assert_snapshot!("pipeline_iterations_expanded", expanded);
    // Above the transcript on a narrow screen, the panel grows to show the detail.
    let narrow = draw(&mut app, 60, 24);
    assert!(narrow.contains("returned 6, expected"), "{narrow}");
    app.on_key(ctrl_t);
    assert!(!draw(&mut app, 100, 20).contains("expected 5"));
}

const FAMILY: &str = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
const THUMB: &str = "\u{1f44d}\u{1f3fd}";
const FLAG: &str = "\u{1f1eb}\u{1f1f7}";

/// No cell holds part of a cluster: a lone regional indicator, a bare skin tone or ZWJ.
fn assert_whole_clusters(buffer: &ratatui::buffer::Buffer) {
    for cell in buffer.content() {
        let symbol = cell.symbol();
        let lone_indicator = symbol.chars().count() == 1
            && ('\u{1f1e6}'..='\u{1f1ff}').contains(&symbol.chars().next().unwrap_or(' '));
        let bare_modifier = symbol.starts_with(|c| ('\u{1f3fb}'..='\u{1f3ff}').contains(&c));
        let loose_joiner = symbol.starts_with('\u{200d}') || symbol.ends_with('\u{200d}');
        assert!(
            !lone_indicator && !bare_modifier && !loose_joiner,
            "a cell holds part of a grapheme cluster: {symbol:?}"
        );
    }
}

#[test]
fn grapheme_clusters_and_cjk_render_whole_and_leave_no_stray_cells() {
    let mut app = app();
    start(&mut app, &format!("Say hi {FAMILY}"));
    let answer = format!(
        "Families {FAMILY}{FAMILY}{FAMILY}{FAMILY} thumbs {THUMB}{THUMB}{THUMB} flags \
         {FLAG}{FLAG}{FLAG}{FLAG}{FLAG}\n\n中文的句子应该按字符换行，而不是按单词。日本語の文も同じです。\n"
    );
    let (width, height) = (32, 18);
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("terminal: {e}"));
    // The first delta ends inside a ZWJ family, as a stream may cut it.
    let cut = answer
        .find('\u{200d}')
        .map_or(0, |i| i + '\u{200d}'.len_utf8());
    app.on_event("run_1", Event::text(&answer[..cut]));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    app.on_event("run_1", Event::text(&answer[cut..]));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    assert_whole_clusters(terminal.backend().buffer());
    // What the terminal shows after a frame of changes equals a fresh draw: no stray cells.
    let fresh = draw(&mut app, width, height);
    assert_eq!(terminal.backend().to_string(), fresh);
    // CJK fills each row instead of moving the whole sentence down.
    assert!(fresh.contains("中文的句子应该按字符换行，而不"), "{fresh}");
    assert_snapshot!(fresh);
}

#[test]
fn composer_edits_and_draws_clusters_whole() {
    let mut app = app();
    for c in format!("ok {FLAG}{THUMB}{FAMILY}x").chars() {
        app.on_key(key(c));
    }
    for code in [
        crossterm::event::KeyCode::Backspace,
        crossterm::event::KeyCode::Backspace,
    ] {
        app.on_key(crossterm::event::KeyEvent::from(code));
    }
    assert_eq!(app.composer().text(), format!("ok {FLAG}{THUMB}"));
    let mut terminal =
        Terminal::new(TestBackend::new(40, 8)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    assert_whole_clusters(terminal.backend().buffer());
    assert_snapshot!(terminal.backend().to_string());
}

#[test]
fn markdown_tables_links_and_code_lines() {
    let mut app = app();
    start(&mut app, "Summarize");
    app.on_event(
        "run_1",
        Event::text(
            "| file | lines | note |\n|:--|--:|:-:|\n| src/main.rs | 120 | entry |\n\
             | 日本.rs | 8 | ok |\n\n\
             Docs: [the guide](https://example.com/guide) and <https://example.com/>.\n\
             Hostile: [x](<https://e.com/\u{1b}]8;;https://evil\u{7}>)\n\n\
             Changed:\nsrc/a.rs\nsrc/b.rs\n\nRun:\n$ cargo build\n$ cargo test\n",
        ),
    );
    let screen = draw(&mut app, 60, 24);
    assert!(screen.contains("────────────┼───────┼──────"), "{screen}");
    assert!(screen.contains("(https://example.com/guide)"), "{screen}");
    assert!(screen.contains("$ cargo build"), "{screen}");
    assert_snapshot!(screen);
}

// Permission prompts that cannot be answered by accident (issue 8, item 4).

fn press(app: &mut App, code: crossterm::event::KeyCode) {
    app.on_key(crossterm::event::KeyEvent::from(code));
}

fn command_ask(command: &str, risk: Risk) -> PermissionQuestion {
    PermissionQuestion {
        token: "q_1".into(),
        id: "call_1".into(),
        tool: "run_command".into(),
        side_effect: SideEffect::Execute,
        risk: Some(risk),
        reason: "Runs a shell command.".into(),
        rule: format!("run_command({command})"),
        always: splice_core::bus::AlwaysScope::Session,
        previews: vec![Preview::Command(command.into())],
    }
}

#[test]
fn typing_as_a_prompt_appears_goes_to_the_composer_not_the_prompt() {
    let mut app = app();
    start(&mut app, "Run the tests");
    for c in "I mean".chars() {
        app.on_key(key(c));
        app.set_now(app.now() + Duration::from_millis(60));
    }
    let ask = command_ask("cargo test", Risk::Medium);
    app.on_permission(ask);
    // The person goes on typing " and then" at 60 ms a key, across the end of the guard.
    for c in " and then".chars() {
        app.set_now(app.now() + Duration::from_millis(60));
        app.on_key(key(c));
    }
    assert!(
        answered(&mut app).is_none(),
        "a typed key answered the prompt"
    );
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 1);
    assert_eq!(app.composer().text(), "I mean and then");
    let screen = draw(&mut app, 80, 20);
    assert!(screen.contains("keys go to the composer"), "{screen}");
    assert!(screen.contains("I mean and then"), "{screen}");
    assert_snapshot!(screen);
    // After a pause the prompt takes its keys.
    app.set_now(app.now() + GUARD);
    app.on_key(key('y'));
    assert_eq!(answered(&mut app), Some(Answer::AllowOnce));
    assert_eq!(app.composer().text(), "I mean and then");
}

#[test]
fn allow_always_asks_for_confirmation_with_the_rule() {
    let mut app = app();
    start(&mut app, "Run the tests");
    let ask = command_ask("cargo test --workspace", Risk::Medium);
    app.on_permission(ask);
    app.set_now(app.now() + GUARD);
    app.on_key(key('a'));
    assert!(answered(&mut app).is_none(), "one `a` granted allow always");
    let screen = draw(&mut app, 80, 20);
    assert!(
        screen.contains("allow always: run_command(cargo test --workspace)"),
        "{screen}"
    );
    assert_snapshot!(screen);
    // Esc goes back to the prompt; `a` then Enter grants.
    press(&mut app, crossterm::event::KeyCode::Esc);
    assert!(answered(&mut app).is_none());
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 1);
    app.on_key(key('a'));
    press(&mut app, crossterm::event::KeyCode::Enter);
    assert_eq!(answered(&mut app), Some(Answer::AllowAlways));
    assert!(!app.modals().has(super::modals::Kind::Permission));
}

/// A blocked host's prompt offers once, this session, and always (saved to the config file);
/// "always" asks twice, naming the host and the file, and typed-ahead keys answer nothing.
#[test]
fn a_blocked_host_can_be_allowed_always_in_the_config_file() {
    let mut app = app();
    start(&mut app, "Fetch the docs");
    let config = std::path::Path::new("/home/me/.config/splice/config.json");
    app.on_permission(splice_core::permissions::network::question(
        "docs.example.com",
        Some(config),
    ));
    // Typed as the prompt appears: an `s` and Enter reach the composer, not the prompt.
    app.on_key(key('s'));
    press(&mut app, crossterm::event::KeyCode::Enter);
    assert!(answered(&mut app).is_none(), "a typed-ahead `s` answered");
    app.set_now(app.now() + GUARD);
    let screen = draw(&mut app, 100, 20);
    assert!(
        screen.contains("y allow once  a this session…  s always (saved in config)…"),
        "{screen}"
    );
    assert!(screen.contains(&config.display().to_string()), "{screen}");
    assert_snapshot!(screen);
    app.on_key(key('s'));
    assert!(answered(&mut app).is_none(), "one `s` saved");
    let confirm = draw(&mut app, 100, 20);
    assert!(
        confirm.contains("always: docs.example.com added to sandbox.network.allowedDomains"),
        "{confirm}"
    );
    assert_snapshot!(confirm);
    app.on_key(key('s'));
    assert_eq!(answered(&mut app), Some(Answer::AllowAndSave));
    assert!(!app.modals().has(super::modals::Kind::Permission));
    // A tool's question keeps its options: `s` is no answer there.
    app.on_permission(command_ask("cargo test", Risk::Medium));
    app.set_now(app.now() + GUARD);
    let tool = draw(&mut app, 100, 20);
    assert!(!tool.contains("saved in config"), "{tool}");
    app.on_key(key('s'));
    app.set_now(app.now() + GUARD);
    press(&mut app, crossterm::event::KeyCode::Enter);
    assert!(
        answered(&mut app).is_none(),
        "`s` answered a tool's question"
    );
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 1);
}

#[test]
fn a_high_risk_prompt_offers_no_allow_always() {
    let mut app = app();
    start(&mut app, "Clean up");
    let ask = command_ask("rm -rf build", Risk::High);
    app.on_permission(ask);
    app.set_now(app.now() + GUARD);
    let screen = draw(&mut app, 80, 20);
    assert!(!screen.contains("allow always"), "{screen}");
    assert!(screen.contains("high risk: no allow-always"), "{screen}");
    assert_snapshot!(screen);
    app.on_key(key('a'));
    app.set_now(app.now() + GUARD);
    press(&mut app, crossterm::event::KeyCode::Enter);
    assert!(answered(&mut app).is_none(), "high risk was allowed always");
    assert_eq!(app.modals().count(super::modals::Kind::Permission), 1);
}

#[test]
fn a_long_diff_scrolls_before_deciding() {
    let mut app = app();
    start(&mut app, "Number the lines");
    let before: String = (1..=60).map(|n| format!("line {n}\n")).collect();
    let after: String = (1..=60).map(|n| format!("LINE {n}\n")).collect();
    app.on_permission(PermissionQuestion {
        token: "q_1".into(),
        id: "call_1".into(),
        tool: "write_file".into(),
        side_effect: SideEffect::Write,
        risk: Some(Risk::Medium),
        reason: "Changes files in the working tree.".into(),
        rule: "write_file".into(),
        always: splice_core::bus::AlwaysScope::Session,
        previews: vec![Preview::Write {
            path: "notes.txt".into(),
            before: Some(before),
            after: Some(after),
        }],
    });
    app.set_now(app.now() + GUARD);
    draw(&mut app, 80, 24);
    press(&mut app, crossterm::event::KeyCode::PageDown);
    press(&mut app, crossterm::event::KeyCode::PageDown);
    let screen = draw(&mut app, 80, 24);
    assert!(!screen.contains("- line 1 "), "{screen}");
    assert!(screen.contains("- line 30"), "{screen}");
    assert!(screen.contains("31-45 of 123"), "{screen}");
    assert_snapshot!(screen);
    // The end of the diff is reachable: nothing is cut off.
    press(&mut app, crossterm::event::KeyCode::End);
    let end = draw(&mut app, 80, 24);
    assert!(end.contains("+ LINE 60"), "{end}");
    assert!(end.contains("-123 of 123 "), "{end}");
    assert!(answered(&mut app).is_none());
}

#[test]
fn a_tiny_terminal_keeps_the_prompt_keys_visible() {
    for (width, height) in [(30, 6), (24, 5), (60, 9)] {
        let mut app = app();
        start(&mut app, "Run the tests");
        let ask = command_ask("cargo test --workspace --all-features", Risk::Medium);
        app.on_permission(ask);
        app.set_now(app.now() + GUARD);
        let screen = draw(&mut app, width, height);
        assert!(
            screen.contains("y once") || screen.contains("y allow once"),
            "{screen}"
        );
        assert!(
            screen.contains("n deny") || screen.contains("Esc deny"),
            "{screen}"
        );
        if (width, height) == (30, 6) {
            assert_snapshot!(screen);
        }
    }
}

/// `/permissions` asks the session, which keeps the rules; its answer is shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_permissions_lists_and_removes_session_rules() {
    let mut app = app();
    let parse = |text: &str| {
        splice_core::permissions::Rule::parse(splice_core::permissions::Effect::Allow, text)
            .expect("parse")
    };
    // The rules as the session holds them: given at start, then two "allow always" answers.
    let mut settings = app.settings().clone();
    settings.policy = Policy::new(PermissionMode::Ask, vec![parse("read_file")]);
    settings.policy.add_rule(parse("write_file"));
    settings
        .policy
        .add_rule(parse("run_command(cargo test \u{202e}x)"));
    let policy = settings.policy.clone();
    let (reports, reported) = std::sync::mpsc::channel();
    let session = splice_core::session::Session::spawn(
        settings,
        splice_core::session::Frontend {
            sinks: vec![],
            reports: vec![std::sync::Arc::new(SessionReports(reports))],
            asks: false,
            turn: splice_core::session::execute_turn(),
            mcp: splice_core::session::McpScope::PerTurn,
        },
    );
    let ask = |app: &mut App, command: &str| {
        app.submit(command.into());
        for op in app.take_ops() {
            session.submit(op);
        }
        let event = reported
            .recv_timeout(Duration::from_secs(10))
            .expect("recv timeout");
        assert!(
            matches!(event, splice_core::session::SessionEvent::Rules(_)),
            "{event:?}"
        );
        app.on_session(event);
    };
    ask(&mut app, "/permissions");
    let screen = draw(&mut app, 80, 16);
    assert!(screen.contains("1. write_file"), "{screen}");
    assert!(screen.contains("2. run_command(cargo test x)"), "{screen}");
    assert!(screen.contains("1 more from the config"), "{screen}");
    assert_snapshot!(screen);
    ask(&mut app, "/permissions remove 1");
    let session_rules: Vec<String> = policy.session_rules().iter().map(|r| r.render()).collect();
    assert_eq!(session_rules, ["run_command(cargo test \u{202e}x)"]);
    ask(&mut app, "/permissions remove 5");
    assert!(matches!(
        app.transcript().last(),
        Some(super::cells::Cell::Notice(super::cells::Level::Error, text)) if text.starts_with("no session rule `5`")
    ));
    ask(&mut app, "/permissions clear");
    assert!(policy.session_rules().is_empty());
    assert_eq!(policy.rules().len(), 1);
}

#[test]
fn a_prompt_never_draws_bidi_overrides_or_controls() {
    let mut app = app();
    start(&mut app, "Say ok");
    let mut ask = command_ask(
        "echo ok #\u{202e} \u{2066}fr- mr\u{2069}; rm -f notes.txt\u{1b}[2K",
        Risk::Medium,
    );
    ask.previews.push(Preview::Write {
        path: "src/\u{202e}sr.exe".into(),
        before: None,
        after: Some("fn main() {}\u{1b}]0;title\u{7}\n".into()),
    });
    app.on_permission(ask);
    app.set_now(app.now() + GUARD);
    let screen = draw(&mut app, 80, 24);
    for c in ['\u{202e}', '\u{2066}', '\u{2069}', '\u{1b}', '\u{7}'] {
        assert!(
            !screen.contains(c),
            "U+{:04X} drawn:\n{screen}",
            u32::from(c)
        );
    }
    assert!(
        screen.contains("$ echo ok # fr- mr; rm -f notes.txt"),
        "{screen}"
    );
    assert!(screen.contains("src/sr.exe"), "{screen}");
    assert!(
        screen.contains("control or bidirectional characters are not shown"),
        "{screen}"
    );
}

fn starts(app: &mut App) -> Vec<String> {
    app.take_requests()
        .into_iter()
        .filter_map(|r| match r {
            super::app::Request::StartRun(text) => Some(text),
            _ => None,
        })
        .collect()
}

#[test]
fn a_new_request_scrolls_the_transcript_back_to_the_bottom() {
    let mut app = app();
    start(&mut app, "List the files");
    app.on_event("run_1", Event::text("a line of the answer\n\n".repeat(30)));
    app.on_event("run_1", Event::run_end(splice_core::exit::Exit::Success));
    draw(&mut app, 60, 14);
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::PageUp,
    ));
    assert!(app.transcript().scrolled());
    app.submit("And the tests?".into());
    assert!(!app.transcript().scrolled(), "still scrolled up");
    let screen = draw(&mut app, 60, 14);
    assert!(screen.contains("And the tests?"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn a_request_typed_during_a_run_is_queued_and_starts_when_the_run_ends() {
    let mut app = app();
    start(&mut app, "Fix the parser");
    assert_eq!(starts(&mut app), ["Fix the parser"]);
    app.submit("then run the tests".into());
    app.submit("and commit".into());
    assert!(starts(&mut app).is_empty(), "started during the run");
    assert_eq!(
        app.composer().text(),
        "",
        "a queued request leaves the composer"
    );
    let screen = draw(&mut app, 70, 14);
    assert!(screen.contains("2 queued"), "{screen}");
    assert_snapshot!(screen);
    app.on_event("run_1", Event::run_end(splice_core::exit::Exit::Success));
    // Typed after the run ended but before its task was seen to finish: still behind the queue.
    app.submit("and push".into());
    assert!(starts(&mut app).is_empty(), "jumped the queue");
    app.on_run_finished();
    assert_eq!(starts(&mut app), ["then run the tests"]);
    assert!(app.is_running());
    app.on_event("run_2", Event::run_end(splice_core::exit::Exit::Success));
    app.on_run_finished();
    assert_eq!(starts(&mut app), ["and commit"]);
    app.on_event("run_3", Event::run_end(splice_core::exit::Exit::Success));
    app.on_run_finished();
    assert_eq!(starts(&mut app), ["and push"]);
    app.on_event("run_4", Event::run_end(splice_core::exit::Exit::Success));
    app.on_run_finished();
    assert!(starts(&mut app).is_empty());
}

#[test]
fn interrupting_a_run_puts_queued_requests_back_in_the_composer_unsent() {
    let mut app = app();
    start(&mut app, "Fix the parser");
    starts(&mut app);
    app.submit("then run the tests".into());
    app.on_key(crossterm::event::KeyEvent::from(
        crossterm::event::KeyCode::Esc,
    ));
    assert_eq!(app.composer().text(), "then run the tests");
    app.on_event(
        "run_1",
        Event::run_end(splice_core::exit::Exit::Interrupted),
    );
    app.on_run_finished();
    assert!(
        starts(&mut app).is_empty(),
        "a queued request ran after Esc"
    );
}

#[test]
fn resume_picker_lists_sessions_and_enter_opens_the_selected_one() {
    use super::picker::{Picker, PickerAction};
    use crossterm::event::{KeyCode, KeyEvent};
    let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let summary = |id: &str, ago: u64, prompt: &str| splice_core::session::log::Summary {
        id: id.into(),
        modified: now - Duration::from_secs(ago),
        first_prompt: prompt.into(),
    };
    let sessions = vec![
        summary("session_new000000001", 30, "fix the add function"),
        summary("session_old000000002", 7_200, "rename parse to parse_line"),
        summary(
            "session_old000000003",
            200_000,
            "a request far too long to fit on one line of this box at all",
        ),
    ];
    let mut picker = Picker::new(sessions.clone(), now);
    assert_eq!(
        picker.handle_key(KeyEvent::from(KeyCode::Down)),
        PickerAction::Stay
    );
    let mut terminal =
        Terminal::new(TestBackend::new(60, 8)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| picker.render(frame.area(), frame.buffer_mut(), &Theme::ansi()))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    let screen = terminal.backend().to_string();
    assert!(screen.contains("› session_old000000002"), "{screen}");
    assert!(screen.contains("Esc cancel"), "{screen}");
    assert_snapshot!(screen);
    assert_eq!(
        picker.handle_key(KeyEvent::from(KeyCode::Enter)),
        PickerAction::Open("session_old000000002".into())
    );
    let mut picker = Picker::new(sessions, now);
    assert_eq!(
        picker.handle_key(KeyEvent::from(KeyCode::Esc)),
        PickerAction::Cancel
    );
}
