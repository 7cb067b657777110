//! Headless runs against the fake Anthropic Messages provider.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, Reply, anthropic};
use support::{Sandbox, TEST_KEY, run, stream_json};

#[test]
fn streams_text_and_sends_the_messages_wire_format() {
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi", " there"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--provider", "anthropic", "--model", "sonnet", "Greet me"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The default tier is auto, which explains its choice in a reasoning line first.
    assert_eq!(
        out.types(),
        [
            "run_start",
            "reasoning",
            "text",
            "text",
            "usage",
            "final",
            "run_end"
        ]
    );
    assert_eq!(out.text(), "Hi there");
    let start = out.first("run_start");
    assert_eq!(start["provider"], "anthropic");
    assert_eq!(start["model"], "sonnet");
    assert_eq!(start["apiModel"], "claude-sonnet-4-5");
    let usage = out.first("usage");
    // input 50 + cache read 10 + cache write 0
    assert_eq!(usage["promptTokens"], 60);
    assert_eq!(usage["cachedInputTokens"], 10);
    assert_eq!(usage["cacheWriteTokens"], 0);
    assert_eq!(usage["completionTokens"], 12);
    assert_eq!(usage["costStatus"], "priced");
    assert!(usage.get("apiModel").is_none());

    let request = &provider.requests()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(TEST_KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.body["model"], "claude-sonnet-4-5");
    assert_eq!(request.body["stream"], true);
    // The system prompt is one text block, marked as the cached prefix.
    assert!(
        request.body["system"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Splice")
    );
    assert_eq!(request.body["system"][0]["type"], "text");
    assert_eq!(
        request.body["messages"][0],
        json!({"role": "user", "content": [{"type": "text", "text": "Greet me",
            "cache_control": {"type": "ephemeral"}}]})
    );
    assert!(request.body["tools"][0]["input_schema"].is_object());
}

#[test]
fn tool_use_with_split_input_runs_and_returns_a_tool_result_block() {
    let provider = FakeProvider::start(vec![
        anthropic::tool_call(
            "toolu_1",
            "search_files",
            &["{\"pattern\":", "\"fn main\"}"],
        ),
        anthropic::answer(&["Found it."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("src/main.rs", "fn main() {}\n");
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--provider", "anthropic", "Where is main?"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.first("tool_call")["args"],
        json!({"pattern": "fn main"})
    );
    assert_eq!(
        out.first("tool_result")["output"],
        "src/main.rs:1: fn main() {}"
    );
    let second = &provider.requests()[1].body;
    assert_eq!(
        second["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_1", "name": "search_files", "input": {"pattern": "fn main"}})
    );
    // The newest block carries the prompt-cache breakpoint (see cost_context.rs).
    assert_eq!(
        second["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "src/main.rs:1: fn main() {}", "is_error": false,
            "cache_control": {"type": "ephemeral"}})
    );
}

#[test]
fn overloaded_is_retried_and_stream_error_event_is_reported() {
    let provider = FakeProvider::start(vec![
        Reply::Status {
            code: 529,
            headers: vec![],
            body: "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}".into(),
        },
        Reply::Sse(vec![
            anthropic::message_start(5),
            anthropic::event(
                "error",
                json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}),
            ),
        ]),
    ]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--provider", "anthropic", "hi"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 3);
    assert!(
        out.first("warning")["message"]
            .as_str()
            .unwrap_or_default()
            .contains("Overloaded")
    );
    let message = out.first("error")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("Internal server error"), "{message}");
}

#[test]
fn stream_without_message_stop_is_a_provider_error() {
    let mut events = vec![anthropic::message_start(5)];
    events.extend(anthropic::text_block(0, &["cut"]));
    let provider = FakeProvider::start(vec![Reply::Sse(events)]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--provider", "anthropic", "hi"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 3);
    assert!(
        out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .contains("before the response was complete")
    );
}

#[test]
fn a_whole_message_body_instead_of_a_stream_is_read_as_the_complete_response() {
    let body = |value: serde_json::Value| Reply::Status {
        code: 200,
        headers: vec![],
        body: value.to_string(),
    };
    let provider = FakeProvider::start(vec![
        body(
            json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file",
                 "input": {"path": "notes.txt"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 11, "output_tokens": 5}}),
        ),
        body(
            json!({"id": "msg_2", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "It says hi."}],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 20, "output_tokens": 6}}),
        ),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "hi\n");
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--provider", "anthropic", "--tier", "light", "notes?"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.first("tool_call")["id"], "toolu_1");
    assert_eq!(out.first("tool_result")["output"], "hi\n");
    assert_eq!(out.text(), "Reading.It says hi.");
    assert_eq!(out.of_type("usage")[1]["promptTokens"], 20);
    assert_eq!(out.first("warning")["code"], "response_truncated");
}
