//! MCP in the TUI, drawn with `TestBackend`: `/mcp` with a server in each state, the approval
//! modal for a stdio and an HTTP project server, a prompt for an MCP tool, and an MCP tool's
//! cell with fraction-and-detail progress.

use std::time::Instant;

use insta::assert_snapshot;
use serde_json::json;

use super::app::App;
use super::mcp_overlay::McpOverlay;
use super::modals::{Kind, Modal};
use super::permission::GUARD;
use super::snapshot_tests::{app, draw};
use splice_core::bus::{PermissionQuestion, Preview};
use splice_core::mcp::{ServerConfig, ServerEntry, ServerState, ServerStatus, Source};
use splice_core::protocol::events::Risk;
use splice_core::protocol::{Event, SideEffect};
use splice_core::session::mcp_plan::Plan;

fn status(name: &str, source: Source, state: ServerState, target: &str) -> ServerStatus {
    ServerStatus {
        name: name.into(),
        source,
        target: target.into(),
        state,
        tools: vec![],
        last_error: None,
    }
}

/// One server in each state, as the hub reports them.
fn statuses() -> Vec<ServerStatus> {
    let mut everything = status(
        "everything",
        Source::User,
        ServerState::Ready,
        "npx -y @modelcontextprotocol/server-everything stdio",
    );
    everything.tools = ["echo", "get-sum", "get-tiny-image"]
        .iter()
        .map(|t| format!("mcp__everything__{t}"))
        .collect();
    let mut broken = status(
        "broken",
        Source::User,
        ServerState::Failed,
        "/usr/local/bin/broken-server --port 0",
    );
    broken.last_error = Some(
        "did not answer initialize within 10 s; its stderr said: listen EADDRINUSE: address \
         already in use 127.0.0.1:8080"
            .into(),
    );
    vec![
        everything,
        broken,
        status(
            "docs",
            Source::User,
            ServerState::Starting,
            "https://docs.example.invalid/mcp",
        ),
        status(
            "repo-tools",
            Source::Project,
            ServerState::Unapproved,
            "node scripts/mcp.js",
        ),
    ]
}

fn stdio_entry() -> ServerEntry {
    ServerEntry {
        name: "repo-tools".into(),
        config: ServerConfig::Stdio {
            command: "node".into(),
            args: vec![
                "scripts/mcp.js".into(),
                "--root".into(),
                "my project".into(),
            ],
            env: [
                ("API_TOKEN".to_string(), "sk-live-do-not-show".to_string()),
                ("DEBUG".to_string(), "1".to_string()),
            ]
            .into(),
            env_passthrough: Vec::new(),
        },
        source: Source::Project,
        pins: Vec::new(),
    }
}

fn http_entry() -> ServerEntry {
    ServerEntry {
        name: "issues".into(),
        config: ServerConfig::Http {
            url: "https://mcp.example.invalid/v1".into(),
            headers: [(
                "Authorization".to_string(),
                "Bearer do-not-show".to_string(),
            )]
            .into(),
        },
        source: Source::Project,
        pins: Vec::new(),
    }
}

/// The app as a session opens with these project servers unapproved, past the modal's guard.
fn asking(entries: Vec<ServerEntry>) -> App {
    let mut app = app();
    app.open_mcp(Plan {
        start: vec![],
        ask: entries,
        notes: vec![],
    });
    app.set_now(Instant::now() + GUARD);
    app
}

#[test]
fn mcp_overlay_with_each_state() {
    let mut app = app();
    app.open_modal(Modal::McpOverlay(McpOverlay::new(statuses())));
    let screen = draw(&mut app, 100, 34);
    for needle in [
        "mcp__everything__get-sum",
        "ready",
        "failed",
        "did not answer initialize",
        "starting",
        "unapproved",
        "needs your approval",
    ] {
        assert!(screen.contains(needle), "{needle}:\n{screen}");
    }
    assert_snapshot!(screen);
}

#[test]
fn mcp_overlay_scrolls_when_long() {
    let mut app = app();
    let mut many = statuses();
    many[0].tools = (0..30)
        .map(|n| format!("mcp__everything__tool-{n}"))
        .collect();
    app.open_modal(Modal::McpOverlay(McpOverlay::new(many)));
    let screen = draw(&mut app, 80, 20);
    assert!(screen.contains("PgUp/PgDn"), "{screen}");
    assert!(!screen.contains("tool-29"), "{screen}");
    app.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::PageDown,
        crossterm::event::KeyModifiers::NONE,
    ));
    app.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::PageDown,
        crossterm::event::KeyModifiers::NONE,
    ));
    let scrolled = draw(&mut app, 80, 20);
    assert!(scrolled.contains("tool-29"), "{scrolled}");
    assert_snapshot!(scrolled);
}

#[test]
fn mcp_overlay_with_no_servers() {
    let mut app = app();
    app.submit("/mcp".into());
    assert_snapshot!(draw(&mut app, 80, 12));
}

#[test]
fn mcp_approval_modal_for_a_stdio_server() {
    let mut app = asking(vec![stdio_entry(), http_entry()]);
    let screen = draw(&mut app, 100, 24);
    assert!(
        screen.contains("node scripts/mcp.js --root 'my project'"),
        "{screen}"
    );
    assert!(screen.contains("API_TOKEN, DEBUG"), "{screen}");
    assert!(!screen.contains("sk-live"), "a value was shown:\n{screen}");
    assert!(screen.contains("unsandboxed"), "{screen}");
    assert!(screen.contains("1 more"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn mcp_approval_modal_wraps_a_long_command_beside_its_label() {
    let mut entry = stdio_entry();
    if let ServerConfig::Stdio { command, .. } = &mut entry.config {
        *command = "/home/me/.local/share/servers/node_modules/.bin/repo-tools-server".into();
    }
    let mut app = asking(vec![entry]);
    let screen = draw(&mut app, 60, 24);
    assert!(screen.contains("│ runs     /home/me/"), "{screen}");
    assert!(
        screen.contains("│          "),
        "continuation rows are indented:\n{screen}"
    );
    assert_snapshot!(screen);
}

#[test]
fn mcp_approval_modal_for_an_http_server() {
    let mut app = asking(vec![http_entry()]);
    let screen = draw(&mut app, 100, 20);
    assert!(
        screen.contains("https://mcp.example.invalid/v1"),
        "{screen}"
    );
    assert!(screen.contains("Authorization"), "{screen}");
    assert!(
        !screen.contains("do-not-show"),
        "a value was shown:\n{screen}"
    );
    assert_snapshot!(screen);
}

/// The servers the app asked the session to approve.
fn approved(app: &mut App) -> Vec<splice_core::mcp::ServerEntry> {
    app.take_ops()
        .into_iter()
        .filter_map(|op| match op {
            splice_core::session::Op::ApproveMcp(entry) => Some(entry),
            _ => None,
        })
        .collect()
}

#[test]
fn answering_the_modals_approves_one_and_leaves_the_other_for_next_session() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = asking(vec![stdio_entry(), http_entry()]);
    let key = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
    app.on_key(key('y'));
    assert_eq!(
        approved(&mut app),
        [stdio_entry()],
        "y approves the front server"
    );
    // The next modal came to the front just now: a second `n` typed at once is the composer's.
    app.on_key(key('n'));
    assert!(approved(&mut app).is_empty());
    assert_eq!(app.modals().count(Kind::McpAsk), 1);
    assert_eq!(app.composer().text(), "n");
    app.set_now(app.now() + GUARD);
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!app.modals().has(Kind::McpAsk));
    assert!(approved(&mut app).is_empty(), "Esc starts nothing");
    assert_eq!(app.mcp_unapproved(), [http_entry()]);
    // `/mcp` then `a` on it asks again, with the same modal.
    app.open_modal(Modal::McpOverlay(McpOverlay::new(overlay_statuses_for(
        "issues",
    ))));
    app.on_key(key('a'));
    assert_eq!(app.modals().count(Kind::McpAsk), 1);
    app.set_now(app.now() + GUARD);
    app.on_key(key('a'));
    assert_eq!(approved(&mut app), [http_entry()]);
    assert!(app.mcp_unapproved().is_empty());
}

fn overlay_statuses_for(name: &str) -> Vec<ServerStatus> {
    vec![status(
        name,
        Source::Project,
        ServerState::Unapproved,
        "https://mcp.example.invalid/v1",
    )]
}

#[test]
fn a_failed_server_is_named_once_in_the_transcript() {
    let mut app = app();
    let failed = || splice_core::mcp::HubNotice::ServerFailed {
        server: "broken".into(),
        message: "exited with status 1\u{1b}]0;owned\u{7}".into(),
    };
    app.on_mcp_notice(failed());
    app.on_mcp_notice(failed());
    // The run's own warning about the same server adds nothing.
    app.on_event(
        "run_1",
        Event::warning_with(
            splice_core::protocol::WarningCode::McpServerFailed,
            "MCP server `broken` failed: exited with status 1",
            splice_core::protocol::WarningDetail::McpServer {
                server: "broken".into(),
            },
        ),
    );
    let screen = draw(&mut app, 80, 10);
    assert_eq!(screen.matches("broken").count(), 1, "{screen}");
    assert!(!screen.contains("owned\u{7}"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn mcp_tool_permission_prompt() {
    let mut app = app();
    app.submit("What is 2+3? Use get-sum.".into());
    let wire = "mcp__everything__get-sum";
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_1".into(),
            name: wire.into(),
            args: json!({"a": 2, "b": 3}),
            side_effect: SideEffect::Execute,
        },
    );
    app.on_event(
        "run_1",
        Event::PermissionRequest {
            id: "call_1".into(),
            name: wire.into(),
            action: splice_core::protocol::PermissionAction::Prompt,
            permission: "prompt".into(),
            permission_mode: "ask".into(),
            side_effect: SideEffect::Execute,
            reason: "MCP tool of server `everything`: the server's own code runs".into(),
            risk: Some(Risk::Medium),
        },
    );
    app.on_permission(PermissionQuestion {
        token: "q_1".into(),
        id: "call_1".into(),
        tool: wire.into(),
        side_effect: SideEffect::Execute,
        risk: Some(Risk::Medium),
        reason: "MCP tool of server `everything`: the server's own code runs".into(),
        rule: wire.into(),
        always: splice_core::bus::AlwaysScope::Session,
        previews: vec![Preview::Call {
            tool: "get-sum".into(),
            server: Some("everything".into()),
            input: r#"{"a":2,"b":3}"#.into(),
        }],
    });
    app.set_now(Instant::now() + GUARD);
    app.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('a'),
        crossterm::event::KeyModifiers::NONE,
    ));
    let screen = draw(&mut app, 100, 24);
    assert!(
        screen.contains(&format!("allow always: {wire}")),
        "{screen}"
    );
    assert!(screen.contains("risk medium"), "{screen}");
    // A tool call, not a shell command: no `$ mcp__…` line.
    assert!(!screen.contains("$ mcp__"), "{screen}");
    assert!(
        screen.contains("get-sum  of MCP server everything"),
        "{screen}"
    );
    assert!(screen.contains(r#"input  {"a":2,"b":3}"#), "{screen}");
    assert!(screen.contains("waiting for your approval"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn mcp_tool_cell_with_fraction_progress() {
    let mut app = app();
    app.submit("Run the long operation".into());
    let wire = "mcp__everything__trigger-long-running-operation";
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: "call_1".into(),
            name: wire.into(),
            args: json!({"duration": 10, "steps": 5}),
            side_effect: SideEffect::Execute,
        },
    );
    for step in 1..=3 {
        app.on_event(
            "run_1",
            Event::ToolProgress {
                id: "call_1".into(),
                stage: None,
                fraction: Some(f64::from(step) / 5.0),
                detail: Some(format!("step {step} of 5")),
            },
        );
    }
    let screen = draw(&mut app, 100, 12);
    assert!(screen.contains(wire), "{screen}");
    assert!(screen.contains("step 3 of 5"), "{screen}");
    assert!(screen.contains("60%"), "{screen}");
    assert_snapshot!(screen);
}
