//! `/compact` in the real TUI (tmux) against the fake provider: the summary request goes out
//! without tools, the transcript says what was compacted, the status line's context meter
//! reads the window from the user's pricing file, and the next run continues from the summary.

use crate::support;

use support::Sandbox;
use support::fake_provider::{Reply, openai};
use support::tmux::{Tmux, quote, splice_shell};

const SUMMARY: &str = "Task: answer two questions. Decisions: none. Remaining: the third.";

/// An answer whose usage reports `prompt` prompt tokens.
fn answer(text: &str, prompt: u64) -> Reply {
    Reply::Sse(vec![
        openai::text(text),
        openai::finish("stop"),
        openai::usage(prompt, 20, 0),
        openai::done(),
    ])
}

#[test]
fn compact_in_the_tui_summarises_without_tools_and_the_next_run_continues_from_the_summary() {
    let provider = support::fake_provider::FakeProvider::start(vec![
        answer("First answer.", 50_000),
        answer("Second answer.", 52_000),
        // The summary request's answer.
        answer(SUMMARY, 60_000),
        answer("Third answer.", 9_000),
    ]);
    let sandbox = Sandbox::new();
    // The user's pricing file gives the model a window of 100,000 tokens.
    std::fs::write(
        sandbox.dir.path().join("pricing.json"),
        r#"{"source":"tests","asOf":"2026-01-01","models":{"openai/gpt-4.1":
            {"input":2.0,"output":8.0,"contextWindow":100000}}}"#,
    )
    .expect("write pricing.json");
    let home = sandbox.dir.path();
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        home,
        &format!("--tier light {}", quote("first question")),
    );
    let tmux = Tmux::new("compact");
    tmux.start("splice", (110, 30), &shell);
    let first = tmux.wait_for("splice", "✓ done");
    assert!(first.contains("First answer."), "{first}");
    assert!(first.contains("ctx 50% · "), "{first}");

    tmux.type_text("splice", "second question");
    tmux.keys("splice", &["Enter"]);
    let second = tmux.wait_for("splice", "Second answer.");
    tmux.wait_for("splice", "ctx 52% · ");
    assert!(!second.contains("context compacted"), "{second}");

    tmux.type_text("splice", "/compact");
    tmux.keys("splice", &["Enter"]);
    let compacted = tmux.wait_for(
        "splice",
        "context compacted: summarised 2 earlier exchanges",
    );
    assert!(compacted.contains("compacting: gpt-4.1"), "{compacted}");
    // The summary's own prompt (60,000 tokens) is counted, never shown as the fill.
    assert!(!compacted.contains("ctx 60%"), "{compacted}");

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let summary_request = &requests[2].body;
    assert!(
        summary_request
            .get("tools")
            .is_none_or(|t| t.as_array().is_some_and(Vec::is_empty)),
        "{summary_request}"
    );
    let told = summary_request["messages"].to_string();
    assert!(told.contains("first question"), "{told}");
    assert!(told.contains("First answer."), "{told}");

    tmux.type_text("splice", "third question");
    tmux.keys("splice", &["Enter"]);
    let third = tmux.wait_for("splice", "Third answer.");
    tmux.wait_for("splice", "ctx 9% · ");
    let requests = provider.requests();
    assert_eq!(requests.len(), 4, "{third}");
    let next = requests[3].body["messages"].to_string();
    assert!(next.contains(SUMMARY), "{next}");
    assert!(next.contains("third question"), "{next}");
    assert!(
        !next.contains("First answer."),
        "the summarised exchange is gone: {next}"
    );

    // The summary request's usage is in the session file, so a reopened session counts it.
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=0");
    let sessions: Vec<_> = std::fs::read_dir(sandbox.data.join("sessions"))
        .map(|d| d.filter_map(Result::ok).collect())
        .unwrap_or_default();
    assert_eq!(sessions.len(), 1);
    let saved = std::fs::read_to_string(sessions[0].path()).unwrap_or_default();
    assert!(saved.contains(r#""stage":"compact""#), "{saved}");
}
