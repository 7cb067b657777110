//! Headless runs against the fake OpenAI-compatible provider: the event sequence, the request
//! bodies Splice sent, the files on disk and the exit code.

mod support;

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, TEST_KEY, run, stream_json};

#[test]
fn text_answer_streams_deltas_and_final_result() {
    let provider = FakeProvider::start(vec![openai::answer(&["Hello", ", world"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "Say hello"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.types(),
        ["run_start", "text", "text", "usage", "final", "run_end"]
    );
    assert_eq!(out.text(), "Hello, world");
    let start = out.first("run_start");
    assert_eq!(start["provider"], "openai");
    assert_eq!(start["cwd"], sandbox.root.display().to_string());
    let usage = out.first("usage");
    assert_eq!(usage["usageSequence"], 1);
    assert_eq!(usage["promptTokens"], 100);
    assert_eq!(usage["completionTokens"], 20);
    assert_eq!(usage["totalTokens"], 120);
    assert_eq!(usage["stage"], "agent");
    let result = out.final_result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["tier"], "light");
    assert_eq!(result["stages"], json!([]));
    assert_eq!(result["run_id"], start["runId"]);

    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    let body = &requests[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "gpt-4.1");
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Say hello"})
    );
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        tools,
        [
            "read_file",
            "write_file",
            "edit_file",
            "list_files",
            "search_files",
            "run_command"
        ]
    );
}

#[test]
fn tool_call_arguments_split_across_chunks_are_reassembled() {
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "read_file", &["{\"pa", "th\":\"notes", ".txt\"}"]),
        openai::answer(&["It says hi."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "hi there\n");
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).arg("What do the notes say?");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let call = out.first("tool_call");
    assert_eq!(call["args"], json!({"path": "notes.txt"}));
    assert_eq!(call["sideEffect"], "read");
    let result = out.first("tool_result");
    assert_eq!(result["id"], "call_1");
    assert_eq!(result["status"], "ok");
    assert_eq!(result["output"], "hi there\n");
    // The second request carries the call and its result back to the model.
    let second = &provider.requests()[1].body;
    let messages = second["messages"].as_array().cloned().unwrap_or_default();
    let assistant = &messages[2];
    assert_eq!(
        assistant["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"notes.txt\"}"
    );
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "hi there\n"})
    );
    let usage: Vec<Value> = out.of_type("usage").into_iter().cloned().collect();
    assert_eq!(usage.len(), 2);
    assert_eq!(usage[1]["usageSequence"], 2);
}

#[test]
fn rate_limit_is_retried_with_a_warning() {
    let provider = FakeProvider::start(vec![
        Reply::Status {
            code: 429,
            headers: vec![("retry-after".into(), "0".into())],
            body: "{\"error\":{\"message\":\"slow down\"}}".into(),
        },
        openai::answer(&["ok"]),
    ]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).arg("hi");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0);
    let warning = out.first("warning");
    assert_eq!(warning["code"], "provider_retry");
    assert!(
        warning["message"]
            .as_str()
            .unwrap_or_default()
            .contains("429")
    );
    assert_eq!(provider.requests().len(), 2);
}
