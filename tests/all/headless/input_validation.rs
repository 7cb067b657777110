//! Stream-json input validation: one test per rule. Every violation is `run_start`, an `error`
//! with code `protocol_error` naming the line and the field, and `run_end` with exit code 2;
//! nothing reaches the provider.

use crate::support;

use base64::Engine;
use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::process::Start;
use support::{Sandbox, run};

const OK: &str = r#"{"schemaVersion":2,"type":"prompt","content":"hello"}"#;

fn rejected(input: &str, expected: &str) {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ]);
    let out = run(command, Some(input));
    out.assert_well_formed();
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.types(), ["run_start", "error", "run_end"]);
    let error = out.first("error");
    assert_eq!(error["code"], "protocol_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(expected),
        "expected {expected:?} in {message:?}"
    );
    assert_eq!(out.lines[2]["status"], "error");
    assert!(
        provider.requests().is_empty(),
        "invalid input reached the provider"
    );
}

fn message_with_image(image: serde_json::Value) -> String {
    json!({"schemaVersion": 2, "type": "message", "role": "user", "content": "see", "images": [image]}).to_string()
}

#[test]
fn invalid_json_names_the_line() {
    rejected(
        &format!("{OK}\n{{oops"),
        "line 2: field `(line)`: invalid JSON",
    );
}

#[test]
fn a_line_must_be_an_object() {
    rejected("[1,2]", "line 1: field `(line)`: expected a JSON object");
}

#[test]
fn schema_version_is_required() {
    rejected(
        r#"{"type":"prompt","content":"x"}"#,
        "line 1: field `schemaVersion`: missing",
    );
}

#[test]
fn schema_version_must_be_2() {
    rejected(
        r#"{"schemaVersion":1,"type":"prompt","content":"x"}"#,
        "field `schemaVersion`: unsupported value 1",
    );
}

#[test]
fn type_is_required() {
    rejected(
        r#"{"schemaVersion":2,"content":"x"}"#,
        "field `type`: missing",
    );
}

#[test]
fn unknown_event_type_is_rejected() {
    rejected(
        r#"{"schemaVersion":2,"type":"command","content":"x"}"#,
        "field `type`: unknown input event type `command`",
    );
}

#[test]
fn unknown_field_is_rejected() {
    rejected(
        &format!(
            "{OK}\n\n{}",
            r#"{"schemaVersion":2,"type":"prompt","content":"x","priority":1}"#
        ),
        "line 3: field `priority`: unknown field",
    );
}

#[test]
fn message_role_must_be_user() {
    rejected(
        r#"{"schemaVersion":2,"type":"message","role":"assistant","content":"x"}"#,
        "field `role`: unsupported role \"assistant\"",
    );
}

#[test]
fn message_role_is_required() {
    rejected(
        r#"{"schemaVersion":2,"type":"message","content":"x"}"#,
        "field `role`: missing",
    );
}

#[test]
fn content_is_required() {
    rejected(
        r#"{"schemaVersion":2,"type":"prompt"}"#,
        "field `content`: missing",
    );
}

#[test]
fn content_must_be_a_string() {
    rejected(
        r#"{"schemaVersion":2,"type":"prompt","content":["x"]}"#,
        "field `content`: must be a string",
    );
}

#[test]
fn at_least_one_event_has_prompt_text() {
    rejected(
        r#"{"schemaVersion":2,"type":"prompt","content":""}"#,
        "no input event contains prompt text",
    );
}

#[test]
fn empty_input_has_no_prompt_text() {
    rejected("\n\n", "no input event contains prompt text");
}

#[test]
fn images_must_be_an_array() {
    rejected(
        r#"{"schemaVersion":2,"type":"message","role":"user","content":"x","images":{}}"#,
        "field `images`: must be an array",
    );
}

#[test]
fn image_unknown_field_is_rejected() {
    rejected(
        &message_with_image(json!({"mediaType": "image/png", "data": "AAAA", "url": "x"})),
        "field `images[0].url`: unknown field",
    );
}

#[test]
fn image_media_type_must_be_supported() {
    rejected(
        &message_with_image(json!({"mediaType": "image/bmp", "data": "AAAA"})),
        "field `images[0].mediaType`: unsupported media type `image/bmp`",
    );
}

#[test]
fn image_data_must_not_be_a_data_url() {
    rejected(
        &message_with_image(
            json!({"mediaType": "image/png", "data": "data:image/png;base64,AAAA"}),
        ),
        "field `images[0].data`: expected bare base64",
    );
}

#[test]
fn image_data_must_be_standard_base64() {
    rejected(
        &message_with_image(json!({"mediaType": "image/png", "data": "not base64!!"})),
        "field `images[0].data`: invalid base64",
    );
}

#[test]
fn image_over_10_mib_is_rejected() {
    let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; 10 * 1024 * 1024 + 1]);
    rejected(
        &message_with_image(json!({"mediaType": "image/jpeg", "data": big})),
        "field `images[0].data`: image exceeds the 10 MiB limit",
    );
}

#[test]
fn prompt_argument_conflicts_with_stream_json_input() {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "extra",
    ]);
    let out = run(command, Some(OK));
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    assert_eq!(out.first("error")["code"], "usage_error");
}

#[test]
fn valid_events_are_joined_in_order_with_a_blank_line() {
    let provider = FakeProvider::start(vec![openai::answer(&["ok"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ]);
    let input = concat!(
        r#"{"schemaVersion":2,"type":"message","role":"user","content":"Inspect this repository."}"#,
        "\n\n",
        r#"{"schemaVersion":2,"type":"prompt","content":"Report only blockers."}"#,
        "\n"
    );
    let out = run(command, Some(input));
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        provider.requests()[0].body["messages"][1]["content"],
        "Inspect this repository.\n\nReport only blockers."
    );
}

#[test]
fn duplicate_keys_are_rejected() {
    rejected(
        r#"{"schemaVersion":2,"type":"prompt","content":"a","content":"b"}"#,
        "line 1: field `(line)`: invalid JSON: duplicate key `content`",
    );
    rejected(
        &format!(
            "{OK}\n{}",
            r#"{"schemaVersion":2,"type":"message","role":"user","content":"see","images":[{"mediaType":"image/png","mediaType":"image/gif","data":"AAAA"}]}"#
        ),
        "line 2: field `(line)`: invalid JSON: duplicate key `mediaType`",
    );
}

#[test]
fn empty_image_data_is_rejected() {
    rejected(
        &message_with_image(json!({"mediaType": "image/png", "data": ""})),
        "field `images[0].data`: empty image data",
    );
}

#[test]
fn invalid_utf8_names_the_line() {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command
        .args([
            "exec",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.start().expect("start command");
    let mut input = format!("{OK}\n").into_bytes();
    input
        .extend_from_slice(b"{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":\"\xff\xfe\"}\n");
    if let Some(mut stdin) = child.stdin.take() {
        std::io::Write::write_all(&mut stdin, &input).expect("write to mutstdin");
    }
    let out = support::parse(child.wait_with_output().expect("wait for child"));
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    let error = out.first("error");
    assert_eq!(error["code"], "protocol_error");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("line 2: "), "{message}");
    assert!(message.contains("not valid UTF-8"), "{message}");
    assert!(provider.requests().is_empty());
}
