//! Run lifecycle at the process edge: restore, redaction, signals, output formats, bad flags.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::process::Start;
use support::{Sandbox, run, stream_json};

#[test]
fn secrets_from_the_environment_never_reach_stdout() {
    let secret = "hunter2-very-secret-value";
    let sandbox = Sandbox::new();
    sandbox.write("config.env", &format!("DB_PASSWORD={secret}\n"));
    let provider = FakeProvider::start(vec![
        openai::tool_call("c1", "read_file", &[r#"{"path":"config.env"}"#]),
        openai::answer(&["The password is ", secret, "."]),
    ]);
    let mut command = sandbox.command(&provider.url);
    command.env("DB_PASSWORD", secret);
    stream_json(&mut command).arg("show config");
    let out = run(command, None);
    out.assert_well_formed();
    assert!(!out.stdout.contains(secret), "secret leaked to stdout");
    assert!(
        !out.stdout.contains(support::TEST_KEY),
        "API key leaked to stdout"
    );
    let result = out.first("tool_result");
    assert_eq!(result["output"], "DB_PASSWORD=[REDACTED]\n");
    assert_eq!(result["redacted"], true);
    // The model itself did get the real file (redaction is for output, not for work).
    let second = &provider.requests()[1].body;
    assert!(second.to_string().contains(secret));
}

#[test]
fn text_output_puts_only_the_answer_on_stdout() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "x");
    let provider = FakeProvider::start(vec![
        openai::tool_call("c1", "read_file", &[r#"{"path":"a.txt"}"#]),
        openai::answer(&["The file ", "holds x."]),
    ]);
    let mut command = sandbox.command(&provider.url);
    command.args(["exec", "summarize"]);
    let out = support::run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The file holds x.\n");
    assert!(out.stderr.contains("→ read_file"), "{}", out.stderr);
}

#[test]
fn prompt_can_come_from_stdin_in_text_mode() {
    let provider = FakeProvider::start(vec![openai::answer(&["ok"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command);
    let out = run(command, Some("  explain the build  \n"));
    assert_eq!(out.code, 0);
    assert_eq!(
        provider.requests()[0].body["messages"][1]["content"],
        "explain the build"
    );
}

#[test]
fn empty_prompt_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    stream_json(&mut command);
    let out = run(command, Some("   \n"));
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    assert_eq!(out.first("error")["code"], "usage_error");
}

#[test]
fn bare_prompt_with_piped_stdout_speaks_stream_json() {
    let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.arg("say hi");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0);
    assert_eq!(out.text(), "hi");
}

#[test]
fn bad_flags_give_a_well_formed_stream_with_exit_2() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.args([
        "exec",
        "--output-format",
        "stream-json",
        "--no-such-flag",
        "x",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    let error = out.first("error");
    assert_eq!(error["code"], "usage_error");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("--no-such-flag")
    );
    assert!(out.stderr.contains("--no-such-flag"));

    // A multi-line clap message keeps what it names.
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.args([
        "exec",
        "--output-format",
        "stream-json",
        "--merge-back",
        "x",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    let message = out.first("error")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("--worktree"), "{message}");
}

#[test]
fn sigterm_mid_stream_still_writes_terminal_events_and_exits_130() {
    for signal in ["TERM", "INT", "HUP"] {
        let provider = FakeProvider::start(vec![Reply::Hang(vec![openai::text("working")])]);
        let sandbox = Sandbox::new();
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).arg("long task");
        // Signalled while the answer is streaming: after its first text event.
        let out = support::run_and_signal(command, signal, |lines| support::wrote(lines, "text"));
        out.assert_well_formed();
        assert_eq!(out.code, 130, "SIG{signal}");
        assert_eq!(out.text(), "working");
        assert_eq!(out.first("error")["code"], "interrupted");
        assert_eq!(out.final_result()["status"], "aborted");
        assert_eq!(out.final_result()["abort_reason"], "interrupted");
        assert_eq!(
            out.lines.last().map(|l| l["status"].clone()),
            Some(json!("interrupted"))
        );
    }
}

#[test]
fn a_secret_the_model_streams_in_pieces_never_reaches_stdout() {
    let secret = "supersecretvalue123";
    for format in ["stream-json", "text"] {
        let provider = FakeProvider::start(vec![openai::answer(&[
            "The key is supersec",
            "retvalue1",
            "23 and nothing else.",
        ])]);
        let sandbox = Sandbox::new();
        let mut command = sandbox.command(&provider.url);
        command.env("MY_API_KEY", secret).args([
            "exec",
            "--output-format",
            format,
            "what is the key?",
        ]);
        let out = support::run_raw(command, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        for fragment in ["supersec", "retvalue1", secret] {
            assert!(
                !out.stdout.contains(fragment),
                "{format}: {fragment} leaked: {}",
                out.stdout
            );
        }
        assert!(out.stdout.contains("[REDACTED]"), "{}", out.stdout);
    }
}

#[test]
fn an_interrupted_command_still_gets_its_tool_result() {
    let provider = FakeProvider::start(vec![openai::tool_call(
        "c1",
        "run_command",
        &[r#"{"command":"touch started && sleep 30"}"#],
    )]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "auto", "wait"]);
    // Signalled once the command is running.
    let started = sandbox.root.join("started");
    let out = support::run_and_signal(command, "TERM", |_| started.exists());
    out.assert_well_formed();
    assert_eq!(out.code, 130);
    let result = out.first("tool_result");
    assert_eq!(result["id"], "c1");
    assert_eq!(result["status"], "error");
    assert_eq!(result["output"], "interrupted before the tool finished");
    let types = out.types();
    let result_at = types.iter().position(|t| t == "tool_result");
    let error_at = types.iter().position(|t| t == "error");
    assert!(result_at < error_at, "{types:?}");
}

#[test]
fn a_secret_split_around_reasoning_never_reaches_stdout() {
    let secret = "supersecretvalue123";
    let provider = FakeProvider::start(vec![Reply::Sse(vec![
        openai::text("The key is supersec"),
        openai::chunk(json!({"reasoning_content": "."}), None),
        openai::text("retvalue123 ok"),
        openai::finish("stop"),
        openai::done(),
    ])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command
        .env("MY_API_KEY", secret)
        .args(["exec", "what is the key?"]);
    let out = support::run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("supersec"), "{}", out.stdout);
    assert!(out.stdout.contains("[REDACTED]"), "{}", out.stdout);
}

#[test]
fn a_reader_that_closes_the_stream_stops_the_run() {
    use std::io::{BufRead, BufReader};
    // A long answer, one piece every 50 ms: about 5 s if nobody stops it.
    let mut events: Vec<String> = (0..100)
        .map(|i| openai::text(&format!("piece {i} ")))
        .collect();
    events.push(openai::finish("stop"));
    events.push(openai::done());
    let provider = FakeProvider::start(vec![Reply::Slow(events, Duration::from_millis(50))]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "talk"]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.start().expect("start command");
    let stdout = child.stdout.take().expect("no stdout");
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .expect("read a line from reader");
    assert!(first.contains("run_start"));
    // Like `splice exec … | head -1`: the reader goes away.
    drop(reader);
    let status = child.wait().expect("wait for child");
    assert_eq!(status.code(), Some(130), "the run went on for nobody");
}
