//! Defects found by trying Splice as a new user would (issue 8): each test drives the real
//! binary against the fake provider and failed before its fix.

use crate::support;

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, git, run, run_raw, stream_json};

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

const BUGGY: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";

/// A repository with one commit; `identity` sets a local git identity, else git has none at
/// all (HOME holds no config, and `user.useConfigOnly` stops git guessing one from the host
/// name, as it fails to on a fresh container).
fn project(identity: bool) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", BUGGY);
    git(&sandbox.root, &["init", "-q", "-b", "main"]);
    if identity {
        git(&sandbox.root, &["config", "user.email", "test@example.com"]);
        git(&sandbox.root, &["config", "user.name", "Test"]);
    } else {
        git(&sandbox.root, &["config", "user.useConfigOnly", "true"]);
    }
    git(&sandbox.root, &["add", "-A"]);
    git(
        &sandbox.root,
        &[
            "-c",
            "user.name=Setup",
            "-c",
            "user.email=setup@example.com",
            "commit",
            "-q",
            "-m",
            "initial",
        ],
    );
    sandbox
}

fn submit(id: &str, name: &str, args: Value) -> Reply {
    openai::tool_call(id, name, &[&args.to_string()])
}

/// The replies of a standard run that writes FIXED and is accepted.
fn fixing_run() -> Vec<Reply> {
    vec![
        submit(
            "cw",
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        ),
        submit(
            "av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["fixed"]}),
        ),
    ]
}

/// `--worktree --merge-back` merges with and without a git identity: the merge commit uses the
/// same fallback identity as the worktree commit.
#[test]
fn merge_back_works_with_and_without_a_git_identity() {
    for identity in [true, false] {
        let sandbox = project(identity);
        let provider = FakeProvider::start(fixing_run());
        let mut command = sandbox.command(&provider.url);
        command.env("GIT_CONFIG_GLOBAL", "/dev/null");
        stream_json(&mut command).args([
            "--tier",
            "standard",
            "--permission-mode",
            "auto",
            "--worktree",
            "--merge-back",
            "--test-command",
            "true",
            "Fix add",
        ]);
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 0, "identity {identity}: {}", out.stdout);
        assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
        let author = git(&sandbox.root, &["log", "-1", "--format=%an <%ae>"]);
        let want = if identity {
            "Test <test@example.com>"
        } else {
            "Splice <splice@localhost>"
        };
        assert_eq!(author.trim(), want);
    }
}

/// `GEMINI_BASE_URL=http://host/v1` posts to `http://host/v1/chat/completions`: Gemini's base
/// URL carries its version segment and keeps it.
#[test]
fn a_gemini_base_url_keeps_its_version_segment() {
    let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.env("GEMINI_BASE_URL", format!("{}/v1/", provider.url));
    stream_json(&mut command).args(["--provider", "gemini", "--tier", "light", "hello"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let paths: Vec<String> = provider.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/v1/chat/completions"]);
}

/// Images given to a pipeline tier are not silently dropped: a `warning` says so.
#[test]
fn images_given_to_a_pipeline_tier_are_reported() {
    let sandbox = project(true);
    let provider = FakeProvider::start(fixing_run());
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
    ]);
    let input = r#"{"schemaVersion":2,"type":"message","role":"user","content":"Fix add as in the screenshot","images":[{"mediaType":"image/png","data":"iVBORw0KGgo="}]}"#;
    let out = run(command, Some(input));
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "images_dropped")
        .unwrap_or_else(|| panic!("no images_dropped warning: {:?}", out.types()));
    assert!(
        warning["message"]
            .as_str()
            .is_some_and(|m| m.contains("1 image(s)")),
        "{warning}"
    );
}

/// A config file is checked whole, even the values a flag overrides this time; `"model": ""`
/// is an error, not the default.
#[test]
fn config_values_are_checked_even_when_a_flag_overrides_them() {
    let cases: [(&str, &[&str], &str); 5] = [
        (r#"{"model":""}"#, &["--model", "gpt-4.1"], "model"),
        (r#"{"model":""}"#, &[], "model"),
        (
            r#"{"permissionMode":"sometimes"}"#,
            &["--permission-mode", "auto"],
            "sometimes",
        ),
        (r#"{"tier":"huge"}"#, &["--tier", "light"], "huge"),
        (
            r#"{"provider":"openia"}"#,
            &["--provider", "openai"],
            "openia",
        ),
    ];
    for (config, flags, named) in cases {
        let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.dir.path().join("config.json"), config)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut command = sandbox.command(&provider.url);
        stream_json(&mut command).args(flags).arg("hello");
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{config} {flags:?}: {}", out.stdout);
        let message = out.first("error")["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(message.contains(named), "{config}: {message}");
        assert!(provider.requests().is_empty());
    }
}

/// `SPLICE_PRICING_FILE` naming a missing file is a usage error, as `SPLICE_CONFIG` is.
#[test]
fn a_missing_pricing_file_named_by_the_environment_is_an_error() {
    let provider = FakeProvider::start(vec![openai::answer(&["hi"])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.env("SPLICE_PRICING_FILE", sandbox.dir.path().join("prices.jsn"));
    stream_json(&mut command).arg("hello");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2, "{}", out.stdout);
    let message = out.first("error")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains("SPLICE_PRICING_FILE"), "{message}");
    assert!(provider.requests().is_empty());
}

/// A budget stop prints enough digits to show the limit was passed.
#[test]
fn a_budget_stop_shows_the_spend_above_the_limit() {
    // gpt-4.1: 40 input and 5 output tokens cost $0.00012.
    let provider = FakeProvider::start(vec![Reply::Sse(vec![
        openai::text("hi"),
        openai::finish("stop"),
        openai::usage(40, 5, 0),
        openai::done(),
    ])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "--max-cost-usd", "0.0001", "hello"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    let message = out.first("error")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("$0.00012 spent, limit $0.0001"),
        "{message}"
    );
}

/// `splice worktree` in the sandbox, with its stdout and stderr.
fn worktree_command(sandbox: &Sandbox, args: &[&str]) -> support::Outcome {
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.arg("worktree").args(args);
    run_raw(command, None)
}

/// A `--worktree` run that is still going is listed as live and `clean` leaves it alone (its
/// work was lost before); interrupted, it names its worktree, branch and the recover command.
#[test]
fn a_live_worktree_run_is_never_cleaned_and_an_interrupt_says_how_to_recover() {
    use std::process::Stdio;
    let sandbox = project(true);
    let provider = FakeProvider::start(vec![submit(
        "cw",
        "submit_code",
        json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
    )]);
    let started = sandbox.dir.path().join("started");
    let mut command = sandbox.command(&provider.url);
    // HOME beside the repository, not around it: the test command stands in for someone else
    // (changing the source, leaving a mark), and HOME under `/tmp` is read-only to commands.
    command.env("HOME", support::home_beside(&sandbox));
    stream_json(&mut command).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--worktree",
        "--test-command",
        &format!("touch {} && sleep 30", started.display()),
        "Fix add",
    ]);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = command.spawn().unwrap_or_else(|e| panic!("{e}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(started.exists(), "the run never reached its test command");

    let listed = worktree_command(&sandbox, &["list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(listed.stdout.contains("live"), "{}", listed.stdout);
    let cleaned = worktree_command(&sandbox, &["clean"]);
    assert_eq!(cleaned.code, 1, "{}", cleaned.stdout);
    assert!(
        cleaned.stderr.contains("still running"),
        "{}",
        cleaned.stderr
    );
    assert!(!cleaned.stdout.contains("removed"), "{}", cleaned.stdout);

    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let out = support::parse(child.wait_with_output().unwrap_or_else(|e| panic!("{e}")));
    out.assert_well_formed();
    assert_eq!(out.code, 130);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "worktree_interrupted")
        .unwrap_or_else(|| panic!("no worktree_interrupted warning: {:?}", out.types()));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("branch splice/{run_id}")),
        "{message}"
    );
    assert!(
        message.contains(&format!("splice worktree recover {run_id}")),
        "{message}"
    );
    // The work survived the attempted clean, and the run is no longer live.
    let listed = worktree_command(&sandbox, &["list"]);
    assert!(
        listed.stdout.contains("1 uncommitted change(s)"),
        "{}",
        listed.stdout
    );
    let recovered = worktree_command(&sandbox, &["recover", &run_id]);
    assert_eq!(recovered.code, 0, "{}", recovered.stderr);
    let branch = format!("splice/{run_id}");
    assert_eq!(
        git(&sandbox.root, &["show", &format!("{branch}:calc.py")]),
        FIXED
    );
}

/// `splice worktree` errors go to stderr, never stdout.
#[test]
fn worktree_errors_go_to_stderr() {
    let sandbox = Sandbox::new();
    let out = worktree_command(&sandbox, &["recover", "run_20260101_abcdef"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("run_20260101_abcdef"), "{}", out.stderr);
}

/// A design plan in `ask` mode headless stops at the first refused write: the later tasks are
/// skipped instead of each spending a request on the same refusal.
#[test]
fn a_plan_in_ask_mode_stops_at_the_first_refused_write() {
    let task = |id: &str| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": []});
    let code = |id: &str| {
        submit(
            id,
            "submit_code",
            json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "fix"}),
        )
    };
    let provider = FakeProvider::start(vec![
        submit(
            "p1",
            "submit_plan",
            json!({"tasks": [task("T1"), task("T2"), task("T3")]}),
        ),
        submit(
            "c1",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
        code("t1cw"),
        code("t2cw"),
        code("t3cw"),
    ]);
    let sandbox = project(true);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--test-command",
        "true",
        "Fix add in three steps",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(provider.requests().len(), 3, "a request per refused task");
    let result = out.final_result();
    assert_eq!(result["failed"], json!(["T1"]));
    assert_eq!(result["skipped"], json!(["T2", "T3"]));
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
}
