//! Defects found by trying Splice as a new user would (issue 8): each test drives the real
//! binary against the fake provider and failed before its fix.

mod support;

use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, run, run_raw, stream_json};

/// A model alias belongs to its provider: sending another provider's model name to an
/// endpoint is a usage error before any request, with the reason.
#[test]
fn a_model_alias_of_another_provider_is_a_usage_error() {
    let cases: [(&str, &[&str]); 2] = [
        (r#"{"model":"sonnet"}"#, &["--provider", "openai"]),
        ("{}", &["--provider", "anthropic", "--model", "mini"]),
    ];
    for (config, flags) in cases {
        let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), config)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).args(flags).arg("hello");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{flags:?}: {}", out.stdout);
        let error = out.first("error");
        assert_eq!(error["code"], "usage_error");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(message.contains("belongs to"), "{message}");
        assert!(provider.requests().is_empty(), "a request was sent");
    }
}

/// A turn that narrates, then calls a failing command, then answers.
fn narrated_run() -> Vec<Reply> {
    let command = r#"{"command":"printf 'line 1\\nline 2\\nreason: disk full\\n'; exit 3"}"#;
    vec![
        Reply::Sse(vec![
            openai::text("Let me look at the files."),
            openai::tool_start(0, "call_1", "run_command"),
            openai::tool_args(0, command),
            openai::finish("tool_calls"),
            openai::usage(100, 20, 0),
            openai::done(),
        ]),
        openai::answer(&["The disk ", "is full."]),
    ]
}

/// `splice exec` text output: stdout is the answer only; narration, a failed command's tail and
/// a closing line with tokens and cost go to stderr.
#[test]
fn text_output_puts_only_the_answer_on_stdout() {
    let provider = FakeProvider::start(narrated_run());
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "why is the build failing?",
    ]);
    let out = run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The disk is full.\n");
    assert!(
        out.stderr.contains("Let me look at the files."),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("reason: disk full"), "{}", out.stderr);
    assert!(
        out.stderr.contains("tokens: 240 (200 in, 40 out)"),
        "{}",
        out.stderr
    );
}

/// In stream-json the answer is told apart from narration: the result carries it.
#[test]
fn stream_json_result_carries_the_answer_without_the_narration() {
    let provider = FakeProvider::start(narrated_run());
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "why is the build failing?",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.final_result()["answer"], "The disk is full.");
}
