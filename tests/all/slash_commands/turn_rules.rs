//! `allowed-tools` are allow rules of the command's turn alone: the next turn asks again.

use crate::support;

use std::sync::Arc;

use splice::bus::{Recorder, Sink};
use splice::protocol::{Event, ToolStatus};
use splice::run::Tier;
use splice::session::{Frontend, Input, Op, Session};
use support::Sandbox;
use support::fake_provider::{FakeProvider, openai};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_tools_let_the_commands_turn_run_a_command_but_not_the_next_turn() {
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "run_command", &[r#"{"command":"echo one"}"#]),
        openai::answer(&["Ran it."]),
        openai::tool_call("call_2", "run_command", &[r#"{"command":"echo two"}"#]),
        openai::answer(&["Could not."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write(
        ".splice/commands/echo.md",
        "---\nallowed-tools: run_command(echo *)\n---\nRun echo.",
    );
    super::approve(&sandbox, "echo");
    // Ask mode, and no one to ask: a command not allowed by a rule is denied.
    let settings = crate::session::conversation::settings(&sandbox, &provider.url, Tier::Light);
    let recorder = Arc::new(Recorder::default());
    let session = Session::spawn(
        settings,
        Frontend::headless(vec![recorder.clone() as Arc<dyn Sink>]),
    );
    session.submit(Op::UserTurn(Input::text("/echo")));
    session.submit(Op::UserTurn(Input::text("Run echo again.")));
    session.submit(Op::Shutdown);
    session.ended().await;
    let results: Vec<(String, ToolStatus)> = recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::ToolResult { id, status, .. } => Some((id, status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_1".to_string(), ToolStatus::Ok),
            ("call_2".to_string(), ToolStatus::Denied)
        ]
    );
    assert_eq!(provider.remaining(), 0);
}
