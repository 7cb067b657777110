//! Subagents in the whole screen, drawn with `TestBackend`: two running under their `agent`
//! calls (each with its latest calls and note), one folded to a line once its call has its
//! result, and unfolded with Ctrl-O.

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::app::App;
use super::snapshot_tests::app;
use splice_core::bus::AgentScope;
use splice_core::protocol::events::{ToolStatus, UsageEvent};
use splice_core::protocol::{Event, SideEffect};

fn draw(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    terminal.backend().to_string()
}

fn scope(id: &str, call: &str, name: &str) -> AgentScope {
    AgentScope {
        id: id.into(),
        parent_call: call.into(),
        name: name.into(),
    }
}

fn result(id: &str, status: ToolStatus, output: &str) -> Event {
    Event::ToolResult {
        id: id.into(),
        status,
        output: output.into(),
        truncated: false,
        changed_files: None,
        display: None,
    }
}

fn read(id: &str, path: &str) -> Event {
    Event::ToolCall {
        id: id.into(),
        name: "read_file".into(),
        args: json!({"path": path}),
        side_effect: SideEffect::Read,
    }
}

/// Two `agent` calls, each with a subagent at work.
fn two_running() -> App {
    let mut app = app();
    app.submit("find where the config is read and who calls the parser".into());
    for (call, what) in [("call_a", "config reading"), ("call_b", "parser callers")] {
        app.on_event(
            "run_1",
            Event::ToolCall {
                id: call.into(),
                name: "agent".into(),
                args: json!({"description": what, "prompt": format!("Find the {what}.")}),
                side_effect: SideEffect::None,
            },
        );
    }
    let one = scope("agent_1", "call_a", "general");
    let two = scope("agent_2", "call_b", "reviewer");
    app.on_agent_event(
        &one,
        &Event::reasoning("Subagent agent_1 (general) started\n"),
    );
    app.on_agent_event(&one, &read("call_1", "src/config.rs"));
    app.on_agent_event(&one, &result("call_1", ToolStatus::Ok, "fn load() {}"));
    app.on_agent_event(&one, &read("call_2", "src/main.rs"));
    app.on_agent_event(&one, &Event::reasoning("Looking at how main calls load"));
    app.on_agent_event(
        &two,
        &Event::ToolCall {
            id: "call_3".into(),
            name: "search_files".into(),
            args: json!({"pattern": "parse("}),
            side_effect: SideEffect::Read,
        },
    );
    let usage = UsageEvent {
        total_tokens: 1540,
        ..UsageEvent::default()
    };
    app.on_agent_event(&two, &Event::Usage(usage));
    app
}

#[test]
fn running_subagents_are_live_under_their_calls() {
    let mut app = two_running();
    let screen = draw(&mut app, 80, 20);
    assert!(
        screen.contains("agent_1 (general) · 2 tool calls running…"),
        "{screen}"
    );
    assert!(screen.contains("◌ read_file src/main.rs"), "{screen}");
    assert!(
        screen.contains("Looking at how main calls load"),
        "{screen}"
    );
    assert!(
        screen.contains("agent_2 (reviewer) · 1 tool call · 1.5k tokens"),
        "{screen}"
    );
    // Its prose is its own: nothing of it is the run's answer.
    assert!(
        !app.transcript()
            .cells()
            .any(|c| matches!(c, super::cells::Cell::Assistant(_)))
    );
    assert_snapshot!(screen);
}

#[test]
fn an_ended_subagent_folds_to_one_line_and_ctrl_o_unfolds_it() {
    let mut app = two_running();
    app.on_agent_event(
        &scope("agent_1", "call_a", "general"),
        &result("call_2", ToolStatus::Ok, "fn main() {}"),
    );
    app.on_event(
        "run_1",
        result(
            "call_a",
            ToolStatus::Ok,
            "The config is read in src/config.rs (load),\ncalled from main.",
        ),
    );
    let screen = draw(&mut app, 80, 20);
    assert!(
        screen.contains("⎿ ok · agent_1 (general) · 2 tool calls"),
        "{screen}"
    );
    assert!(!screen.contains("src/main.rs"), "folded: {screen}");
    assert!(screen.contains("agent_2 (reviewer) · 1 tool call · 1.5k tokens running…"));
    assert_snapshot!("an_ended_subagent_folded", screen);
    app.on_key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('o'),
        crossterm::event::KeyModifiers::CONTROL,
    ));
    let screen = draw(&mut app, 80, 20);
    assert!(screen.contains("● read_file src/main.rs"), "{screen}");
    assert!(screen.contains("called from main."), "{screen}");
    assert_snapshot!("an_ended_subagent_unfolded", screen);
}
