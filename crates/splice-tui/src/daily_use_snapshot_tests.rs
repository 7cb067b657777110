//! The TUI defects found in daily use (issue 19), drawn with `TestBackend`: a denied call said
//! once, a call waiting for approval, an applied submission's diff, the `/` popup on a wide
//! terminal, the start without a provider key and the `transcribe` prompt.

use insta::assert_snapshot;
use serde_json::json;

use super::app::App;
use super::permission::GUARD;
use super::snapshot_tests::{app, draw};
use splice_core::bus::{PermissionQuestion, Preview};
use splice_core::protocol::events::{Risk, ToolStatus};
use splice_core::protocol::{Event, SideEffect};

fn ctrl(c: char) -> crossterm::event::KeyEvent {
    crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char(c),
        crossterm::event::KeyModifiers::CONTROL,
    )
}

fn key(c: char) -> crossterm::event::KeyEvent {
    crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c))
}

fn started(prompt: &str) -> App {
    let mut app = app();
    app.submit(prompt.to_string());
    app
}

fn write_call(app: &mut App, id: &str, path: &str) {
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: id.into(),
            name: "write_file".into(),
            args: json!({"path": path, "content": "x"}),
            side_effect: SideEffect::Write,
        },
    );
}

fn asked(app: &mut App, id: &str) {
    app.on_event(
        "run_1",
        Event::PermissionRequest {
            id: id.into(),
            name: "write_file".into(),
            action: splice_core::protocol::PermissionAction::Prompt,
            permission: "prompt".into(),
            permission_mode: "ask".into(),
            side_effect: SideEffect::Write,
            reason: "Creates or overwrites files.".into(),
            risk: Some(Risk::Low),
        },
    );
}

fn denied(app: &mut App, id: &str, output: &str) {
    app.on_event(
        "run_1",
        Event::ToolResult {
            id: id.into(),
            status: ToolStatus::Denied,
            output: output.into(),
            truncated: false,
            changed_files: None,
            display: None,
        },
    );
}

/// The person's "no" reads as one plain line, not `denied in TUI`, `denied` and
/// `denied: denied in TUI`; a refusal by the mode gives its reason once.
#[test]
fn a_denied_call_says_so_once_in_plain_words() {
    let mut app = started("Write notes.txt");
    write_call(&mut app, "call_1", "notes.txt");
    asked(&mut app, "call_1");
    app.on_event(
        "run_1",
        Event::PermissionDecision {
            id: "call_1".into(),
            name: "write_file".into(),
            action: splice_core::protocol::PermissionAction::Deny,
            permission_granted: false,
            decision_reason: "denied in TUI".into(),
        },
    );
    denied(&mut app, "call_1", "denied: denied in TUI");
    write_call(&mut app, "call_2", "other.txt");
    app.on_event(
        "run_1",
        Event::Permission {
            id: "call_2".into(),
            name: "write_file".into(),
            action: splice_core::protocol::PermissionAction::Deny,
            permission_mode: "read-only".into(),
            side_effect: SideEffect::Write,
            reason: "read-only mode refuses writes".into(),
            risk: Some(Risk::Low),
            block: None,
        },
    );
    denied(&mut app, "call_2", "denied: read-only mode refuses writes");
    let screen = draw(&mut app, 80, 14);
    assert!(screen.contains("⎿ you denied it"), "{screen}");
    assert!(
        screen.contains("⎿ denied: read-only mode refuses writes"),
        "{screen}"
    );
    assert!(!screen.contains("denied in TUI"), "{screen}");
    assert_eq!(screen.matches("denied").count(), 2, "{screen}");
    assert_snapshot!(screen);
}

/// Between the permission request and the person's answer the call is not running.
#[test]
fn a_call_waiting_for_approval_says_so_not_running() {
    let mut app = started("Write notes.txt");
    write_call(&mut app, "call_1", "notes.txt");
    asked(&mut app, "call_1");
    let screen = draw(&mut app, 80, 10);
    assert!(screen.contains("⎿ waiting for your approval"), "{screen}");
    assert!(!screen.contains("running…"), "{screen}");
    assert_snapshot!(screen);
    app.on_event(
        "run_1",
        Event::PermissionDecision {
            id: "call_1".into(),
            name: "write_file".into(),
            action: splice_core::protocol::PermissionAction::Allow,
            permission_granted: true,
            decision_reason: "approved in TUI".into(),
        },
    );
    let screen = draw(&mut app, 80, 10);
    assert!(!screen.contains("waiting for your approval"), "{screen}");
    assert!(screen.contains("running…"), "{screen}");
}

/// A submission applied without a prompt (accept-edits) shows its diff: folded to a count,
/// and in full after Ctrl-O.
#[test]
fn an_applied_submission_shows_its_diff_folded_then_in_full() {
    let mut app = started("Fix add");
    app.on_event(
        "run_1",
        Event::ToolCallStart {
            id: "call_0".into(),
            name: "submit_code".into(),
        },
    );
    let raw = json!({
        "files": [
            {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"},
            {"path": "test_calc.py", "content": "from calc import add\n"}
        ],
        "summary": "swap minus for plus"
    })
    .to_string();
    app.on_event(
        "run_1",
        Event::ToolCallDelta {
            id: "call_0".into(),
            delta: raw,
        },
    );
    app.on_changes(
        "call_0",
        vec![
            Preview::Write {
                path: "calc.py".into(),
                before: Some("def add(a, b):\n    return a - b\n".into()),
                after: Some("def add(a, b):\n    return a + b\n".into()),
            },
            Preview::Write {
                path: "test_calc.py".into(),
                before: None,
                after: Some("from calc import add\n".into()),
            },
        ],
    );
    // A short result after it (the test run) has nothing to fold: Ctrl-O still means the diff.
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_1".into(),
            name: "run_command".into(),
            args: json!({"command": "true"}),
            side_effect: SideEffect::Execute,
        },
    );
    app.on_event(
        "run_1",
        Event::ToolResult {
            id: "call_1".into(),
            status: ToolStatus::Ok,
            output: "exit code 0".into(),
            truncated: false,
            changed_files: None,
            display: None,
        },
    );
    let folded = draw(&mut app, 80, 16);
    assert!(
        folded.contains("⎿ +2 -1 lines · Ctrl-O shows the diff"),
        "{folded}"
    );
    assert!(!folded.contains("return a - b"), "{folded}");
    assert_snapshot!("submission_diff_folded", folded);
    app.on_key(ctrl('o'));
    let expanded = draw(&mut app, 80, 22);
    assert!(
        expanded.contains("- ") && expanded.contains("return a - b"),
        "{expanded}"
    );
    assert!(expanded.contains("+     return a + b"), "{expanded}");
    assert!(expanded.contains("+ from calc import add"), "{expanded}");
    assert_snapshot!("submission_diff_expanded", expanded);
    app.on_key(ctrl('o'));
    assert_eq!(draw(&mut app, 80, 16), folded);
}

/// On a 120-column terminal the popup is as wide as its longest description needs.
#[test]
fn the_slash_popup_uses_the_width_it_has() {
    let mut app = app();
    app.on_key(key('/'));
    app.on_key(key('m'));
    let screen = draw(&mut app, 120, 14);
    assert!(
        screen.contains("[ask|accept-edits|auto|read-only] · show or set the permission mode"),
        "{screen}"
    );
    assert!(
        screen.contains("MCP servers: state, tools, last error; approve a project's servers"),
        "{screen}"
    );
    assert!(!screen.contains('…'), "{screen}");
    assert_snapshot!(screen);
}

/// Started against a provider's own service without its key: said at once, with what to do.
#[test]
fn starting_without_a_provider_key_says_what_to_set() {
    let mut app = app();
    app.settings_mut().provider.base_url = "https://api.openai.com".into();
    app.settings_mut().provider.api_key = None;
    app.hint_missing_key();
    let screen = draw(&mut app, 100, 14);
    assert!(screen.contains("OPENAI_API_KEY is not set"), "{screen}");
    assert!(screen.contains("--provider anthropic"), "{screen}");
    assert!(screen.contains("OPENAI_BASE_URL"), "{screen}");
    assert_snapshot!(screen);
    // With a key, or another server (a local one may need none), nothing is said.
    for (key, base) in [
        (Some("sk-test"), "https://api.openai.com"),
        (None, "http://127.0.0.1:11434"),
    ] {
        let mut quiet = app_with(key, base);
        quiet.hint_missing_key();
        assert!(quiet.transcript().is_empty());
    }
}

fn app_with(key: Option<&str>, base: &str) -> App {
    let mut app = app();
    app.settings_mut().provider.api_key = key.map(str::to_string);
    app.settings_mut().provider.base_url = base.into();
    app
}

/// The `transcribe` prompt shows a tool call and says the recording is uploaded and paid for.
#[test]
fn the_transcribe_prompt_says_the_recording_is_uploaded_and_costs_money() {
    let root = tempfile::tempdir().expect("create a temporary directory");
    std::fs::write(root.path().join("demo.mp4"), b"not really a video").expect("write demo.mp4");
    let input = splice_core::tools::transcribe::input(root.path(), "demo.mp4").expect("input root");
    let mut app = started("Transcribe demo.mp4");
    app.on_permission(PermissionQuestion {
        token: "q_1".into(),
        id: "call_1".into(),
        tool: "transcribe".into(),
        side_effect: SideEffect::Network,
        risk: Some(Risk::Medium),
        reason: "Reaches the network.".into(),
        rule: "transcribe".into(),
        always: splice_core::bus::AlwaysScope::Session,
        previews: splice_core::tools::transcribe::previews("demo.mp4", &input),
    });
    app.set_now(app.now() + GUARD);
    let screen = draw(&mut app, 100, 20);
    assert!(screen.contains("uploaded to Scribiz"), "{screen}");
    assert!(screen.contains("costs money"), "{screen}");
    assert!(!screen.contains("$ transcribe"), "{screen}");
    assert_snapshot!(screen);
}
