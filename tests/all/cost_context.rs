//! Cost and context: Anthropic prompt-cache breakpoints in every conversation, as the requests
//! reach the provider.

use crate::support;

use serde_json::Value;
use support::fake_provider::{FakeProvider, anthropic};
use support::{Sandbox, run, stream_json};

/// Where the request puts `cache_control`, as JSON paths, sorted.
fn breakpoints(body: &Value) -> Vec<String> {
    fn walk(value: &Value, path: String, found: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if map.get("cache_control") == Some(&serde_json::json!({"type": "ephemeral"})) {
                    found.push(path.clone());
                }
                for (key, child) in map {
                    walk(child, format!("{path}.{key}"), found);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{path}[{i}]"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(body, String::new(), &mut found);
    found.sort();
    found
}

fn anthropic_run(sandbox: &Sandbox, provider: &FakeProvider, flags: &[&str]) -> support::Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--provider", "anthropic"])
        .args(flags)
        .arg("Where is main?");
    let out = run(command, None);
    out.assert_well_formed();
    out
}

#[test]
fn a_light_conversation_caches_its_prefix_and_its_newest_message() {
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "search_files", &[r#"{"pattern":"fn main"}"#]),
        anthropic::tool_call("toolu_2", "read_file", &[r#"{"path":"src/main.rs"}"#]),
        anthropic::answer(&["In src/main.rs."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("src/main.rs", "fn main() {}\n");
    let out = anthropic_run(&sandbox, &provider, &["--tier", "light"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        breakpoints(&requests[0].body),
        [".messages[0].content[0]", ".system[0]"]
    );
    assert_eq!(
        breakpoints(&requests[1].body),
        [
            ".messages[0].content[0]",
            ".messages[2].content[0]",
            ".system[0]"
        ]
    );
    // The third: where the second ended (the first tool result) and the newest.
    assert_eq!(
        breakpoints(&requests[2].body),
        [
            ".messages[2].content[0]",
            ".messages[4].content[0]",
            ".system[0]"
        ]
    );
    // The tools come before the system prompt in the cached prefix: the same in every request.
    assert_eq!(requests[0].body["tools"], requests[2].body["tools"]);
    assert_eq!(requests[0].body["system"], requests[2].body["system"]);
}

#[test]
fn every_pipeline_stage_request_caches_its_prefix() {
    let provider = FakeProvider::start(vec![
        anthropic::tool_call(
            "cw_submit",
            "submit_code",
            &[r#"{"files":[],"summary":"nothing to change"}"#],
        ),
        anthropic::tool_call(
            "av_submit",
            "submit_verdict",
            &[r#"{"accepted":true,"reasons":["ok"]}"#],
        ),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("src/main.rs", "fn main() {}\n");
    let out = anthropic_run(&sandbox, &provider, &["--tier", "standard"]);
    let requests = provider.requests();
    assert!(requests.len() >= 2, "{}", out.stdout);
    for request in &requests {
        let marks = breakpoints(&request.body);
        assert!(marks.contains(&".system[0]".to_string()), "{marks:?}");
        let newest = request.body["messages"]
            .as_array()
            .map_or(0, Vec::len)
            .saturating_sub(1);
        assert!(
            marks
                .iter()
                .any(|m| m.starts_with(&format!(".messages[{newest}].content["))),
            "{marks:?}"
        );
        assert!(marks.len() <= 4, "{marks:?}");
    }
}
