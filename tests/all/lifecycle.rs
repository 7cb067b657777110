//! Run lifecycle at the process edge: restore, redaction, signals, output formats, bad flags.

use crate::support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, run, stream_json};

#[test]
fn restore_puts_back_edited_files_and_removes_created_ones() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "before\n");
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"a.txt","content":"after\n"}"#],
        ),
        openai::tool_call(
            "c2",
            "write_file",
            &[r#"{"path":"new/b.txt","content":"b"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "accept-edits", "edit"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sequences: Vec<_> = out
        .of_type("checkpoint")
        .iter()
        .map(|c| c["checkpoint"]["sequence"].clone())
        .collect();
    assert_eq!(sequences, [json!(1), json!(2)]);
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("after\n"));
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    // Undo only the second write.
    let mut restore = sandbox.command(&provider.url);
    restore.args(["restore", &run_id, "--to", "2"]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 0, "{}", undo.stderr);
    assert_eq!(undo.types(), ["run_start", "restore", "run_end"]);
    let report = &undo.lines[1];
    assert_eq!(report["runId"], run_id.as_str());
    assert_eq!(
        report["checkpoint"],
        json!({"sequence": 2, "filesRestored": [], "filesDeleted": ["new/b.txt"], "skipped": []})
    );
    assert!(!sandbox.root.join("new/b.txt").exists());
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("after\n"));

    // Then everything.
    let mut restore = sandbox.command(&provider.url);
    restore.args(["restore", &run_id]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 0);
    assert_eq!(undo.types(), ["run_start", "restore", "run_end"]);
    assert_eq!(
        undo.lines[1]["checkpoint"]["filesRestored"],
        json!(["a.txt"])
    );
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("before\n"));
}

#[test]
fn restore_skips_files_changed_since_and_exits_1() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"a.txt","content":"splice"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "auto", "edit"]);
    let out = run(command, None);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    sandbox.write("a.txt", "human edit");
    let mut restore = sandbox.command(&provider.url);
    restore.args(["restore", &run_id, "--output-format", "stream-json"]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 1);
    assert_eq!(undo.lines[1]["checkpoint"]["skipped"], json!(["a.txt"]));
    assert_eq!(undo.first("warning")["code"], "restore_skipped");
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("human edit"));

    // The skipped checkpoint stays for a forced retry, which puts the file back anyway.
    let mut forced = sandbox.command(&provider.url);
    forced.args([
        "restore",
        &run_id,
        "--force",
        "--output-format",
        "stream-json",
    ]);
    let undo = run(forced, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 0);
    assert_eq!(
        undo.lines[1]["checkpoint"]["filesDeleted"],
        json!(["a.txt"])
    );
    assert!(
        sandbox.read("a.txt").is_none(),
        "a.txt did not exist before the run"
    );
}

#[test]
fn restore_of_an_unknown_run_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let mut restore = sandbox.command("http://127.0.0.1:9");
    restore.args(["restore", "run_20260101_nosuch"]);
    let undo = run(restore, None);
    undo.assert_well_formed();
    assert_eq!(undo.code, 2);
    assert_eq!(undo.first("error")["code"], "restore_failed");
}

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
fn bad_values_are_usage_errors_naming_the_value() {
    for (flags, needle) in [
        (
            vec!["--permission-mode", "yolo"],
            "unknown permission mode `yolo`",
        ),
        (vec!["--provider", "acme"], "unknown provider `acme`"),
        (vec!["--tier", "huge"], "unknown tier `huge`"),
        (vec!["--allow", "run_command(ls"], "invalid permission rule"),
        (vec!["--cwd", "/no/such/dir"], "is not a directory"),
    ] {
        let sandbox = Sandbox::new();
        let mut command = sandbox.command("http://127.0.0.1:9");
        stream_json(&mut command).args(&flags).arg("x");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{flags:?}");
        let message = out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(needle), "{flags:?}: {message}");
    }
}

#[test]
fn broken_config_file_is_a_usage_error() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"permisionMode":"auto"}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut command = sandbox.command("http://127.0.0.1:9");
    stream_json(&mut command).arg("x");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    assert!(
        out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .contains("permisionMode")
    );
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
fn provider_precedence_is_flag_then_config_then_environment() {
    let provider = FakeProvider::start(vec![
        support::fake_provider::anthropic::answer(&["a"]),
        openai::answer(&["b"]),
        openai::answer(&["c"]),
    ]);
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"provider":"anthropic","model":"haiku"}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let start = |flags: &[&str]| {
        let mut command = sandbox.command(&provider.url);
        command
            .env("SPLICE_PROVIDER", "openai")
            .env("SPLICE_MODEL", "gpt-4o");
        stream_json(&mut command).args(flags).arg("hi");
        let out = run(command, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let start = out.first("run_start").clone();
        (start["provider"].clone(), start["model"].clone())
    };
    // The config file beats the environment.
    assert_eq!(start(&[]), (json!("anthropic"), json!("haiku")));
    // A flag beats both.
    assert_eq!(
        start(&["--provider", "openai", "--model", "mini"]),
        (json!("openai"), json!("mini"))
    );
    // Without settings in the config file, the environment decides.
    std::fs::write(sandbox.dir.path().join("config.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(start(&[]), (json!("openai"), json!("gpt-4o")));
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
    let mut child = command.spawn().unwrap_or_else(|e| panic!("{e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut reader = BufReader::new(stdout);
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(first.contains("run_start"));
    // Like `splice exec … | head -1`: the reader goes away.
    drop(reader);
    let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(130), "the run went on for nobody");
}
