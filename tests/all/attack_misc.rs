//! Attacks a hostile model or repository can make without any sandbox escape: terminal escape
//! sequences in what Splice prints, project instructions that point outside the repository,
//! and inputs that used to be read loosely. Each runs against the real binary.

use crate::support;

use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, run, run_raw, stream_json};

const HOSTILE: &str =
    "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobyBoaQ==\u{7}\u{1b}[31mred\u{1b}[0m\u{1b}[2J";

fn assert_terminal_safe(what: &str, text: &str) {
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
        "{what} carries control sequences: {text:?}"
    );
}

#[test]
fn text_output_strips_escape_sequences_from_model_and_tool_text() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"printf '\\033]0;tool\\007\\033[41mbg\\n'"}"#],
        ),
        openai::answer(&[HOSTILE, "answer\u{1b}", "]0;split\u{7}"]),
    ]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "Say it",
    ]);
    let out = run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_terminal_safe("stdout", &out.stdout);
    assert_terminal_safe("stderr", &out.stderr);
    assert!(out.stdout.contains("redanswer"), "{:?}", out.stdout);
    assert!(out.stderr.contains("run_command"), "{}", out.stderr);
}

#[test]
fn stream_json_keeps_the_text_exactly() {
    // A program reading JSON gets the model's bytes, escaped by JSON, and decides for itself.
    let provider = FakeProvider::start(vec![openai::answer(&[HOSTILE])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "Say it"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.text(), HOSTILE);
    assert_terminal_safe("the raw JSON lines", &out.stdout);
}

/// The system prompt of the first request.
fn system_prompt(provider: &FakeProvider) -> String {
    let requests = provider.requests();
    requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn project_instructions_are_not_read_through_links_out_of_the_root() {
    let secret_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET-OUTSIDE").unwrap_or_else(|e| panic!("{e}"));
    for target in [
        secret.display().to_string(),
        "/proc/self/environ".to_string(),
    ] {
        let provider = FakeProvider::start(vec![openai::answer(&["ok"])]);
        let sandbox = Sandbox::new();
        std::os::unix::fs::symlink(&target, sandbox.root.join("SPLICE.md"))
            .unwrap_or_else(|e| panic!("{e}"));
        sandbox.write("AGENTS.md", "Run `make check`.");
        let mut command = sandbox.command(&provider.url);
        command.env("MARKER_ENV_VALUE", "ENVIRONMENT-LEAKED");
        stream_json(&mut command).args(["--tier", "light", "hi"]);
        let out = run(command, None);
        out.assert_well_formed();
        let system = system_prompt(&provider);
        assert!(!system.contains("TOP-SECRET-OUTSIDE"), "{target}: {system}");
        assert!(!system.contains("ENVIRONMENT-LEAKED"), "{target}: {system}");
        assert!(!system.contains("sk-test"), "{target}: {system}");
        // The link is skipped, not the instructions: the next file still counts.
        assert!(system.contains("make check"), "{target}: {system}");
        let warnings = out.of_type("warning");
        assert!(
            warnings.iter().any(|w| w["code"] == "instructions_skipped"),
            "{target}: {warnings:?}"
        );
    }
}

#[test]
fn a_fifo_as_project_instructions_does_not_hang_the_run() {
    let provider = FakeProvider::start(vec![openai::answer(&["ok"])]);
    let sandbox = Sandbox::new();
    let fifo = sandbox.root.join("SPLICE.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(made.success());
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "hi"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!system_prompt(&provider).contains("Project instructions"));
}

/// A headless run with `env` overrides and extra flags that must stop before any request.
fn usage_error(env: &[(&str, &str)], flags: &[&str], expected: &str) {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    for (name, value) in env {
        command.env(name, value);
    }
    stream_json(&mut command).args(flags).arg("hi");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2, "{env:?} {flags:?}: {}", out.stdout);
    let error = out.first("error");
    assert_eq!(error["code"], "usage_error", "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains(expected), "{expected:?} in {message:?}");
    assert!(provider.requests().is_empty());
}

#[test]
fn bad_settings_are_usage_errors_not_silent_defaults() {
    usage_error(
        &[("SPLICE_MAX_RETRIES", "lots")],
        &[],
        "SPLICE_MAX_RETRIES=lots",
    );
    usage_error(
        &[("SPLICE_MAX_RETRIES", "-1")],
        &[],
        "SPLICE_MAX_RETRIES=-1",
    );
    usage_error(
        &[("SPLICE_REQUEST_TIMEOUT_MS", "-5")],
        &[],
        "SPLICE_REQUEST_TIMEOUT_MS=-5",
    );
    usage_error(
        &[("SPLICE_STREAM_IDLE_TIMEOUT_MS", "0")],
        &[],
        "SPLICE_STREAM_IDLE_TIMEOUT_MS=0",
    );
    usage_error(
        &[("SPLICE_RETRY_BASE_MS", "1.5")],
        &[],
        "SPLICE_RETRY_BASE_MS",
    );
    usage_error(&[], &["--model", ""], "model name is empty");
    usage_error(&[], &["--model", "  "], "model name is empty");
    usage_error(
        &[("OPENAI_BASE_URL", "localhost:11434")],
        &["--provider", "openai"],
        "OPENAI_BASE_URL=localhost:11434 is not an http(s) URL",
    );
    usage_error(
        &[("ANTHROPIC_BASE_URL", "not a url")],
        &["--provider", "anthropic"],
        "ANTHROPIC_BASE_URL",
    );
}

#[test]
fn a_config_file_named_by_splice_config_must_exist() {
    // A typo in SPLICE_CONFIG must not run with the deny rules that file holds dropped.
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let missing = dir.path().join("confg.json");
    let missing = missing.display().to_string();
    usage_error(&[("SPLICE_CONFIG", missing.as_str())], &[], "confg.json");
}

#[test]
fn restore_refuses_ids_and_checkpoints_that_do_not_name_one() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"a.txt","content":"after\n"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "accept-edits", "edit"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // `..` would name the data directory itself.
    std::fs::create_dir_all(sandbox.data.join("checkpoints")).unwrap_or_else(|e| panic!("{e}"));
    for args in [
        vec!["restore", ".."],
        vec!["restore", ""],
        vec!["restore", "../checkpoints"],
        vec!["restore", &run_id, "--to", "0"],
        vec!["restore", &run_id, "--to", "99"],
    ] {
        let mut restore = sandbox.command(&provider.url);
        restore.args(&args).args(["--output-format", "stream-json"]);
        let undo = run(restore, None);
        undo.assert_well_formed();
        assert_eq!(undo.code, 2, "{args:?}: {}", undo.stdout);
        assert_eq!(undo.first("error")["code"], "usage_error", "{args:?}");
        assert!(undo.of_type("restore").is_empty(), "{args:?}");
    }
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("after\n"));
    // The run's one checkpoint is still there to restore.
    let mut restore = sandbox.command(&provider.url);
    restore.args([
        "restore",
        &run_id,
        "--to",
        "1",
        "--output-format",
        "stream-json",
    ]);
    let undo = run(restore, None);
    assert_eq!(undo.code, 0, "{}", undo.stdout);
    assert_eq!(sandbox.read("a.txt"), None);
}
