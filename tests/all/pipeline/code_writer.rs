//! Defects found using `splice exec` (issue 19), against the real binary and the fake provider:
//! readable stage lines in text output, the auto tier's questions, a code writer with nothing
//! to change, retries that cannot succeed, headless denials, the run id, restore twice, an
//! empty config file and `--help`.

use crate::support;
use support::exec_json;

use serde_json::json;
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::markers::{assert_well_formed, compact, markers};
use support::{Outcome, Sandbox};

pub(crate) const BUGGY: &str = "def add(a, b):\n    return a - b\n";

pub(crate) const FIXED: &str = "def add(a, b):\n    return a + b\n";

/// A different length from FIXED (Python trusts a cached .pyc of the same size and second).
const WRONG: &str = "def add(a, b):\n    return a * b  # wrong\n";

pub(crate) const TEST: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// A standard-tier fix of calc.py in `auto` mode, its tests run by unittest.
pub(crate) const FIX_CALC: [&str; 7] = fix_calc("auto");

/// A standard-tier fix of calc.py in permission mode `mode`, its tests run by unittest.
pub const fn fix_calc(mode: &'static str) -> [&'static str; 7] {
    [
        "--tier",
        "standard",
        "--permission-mode",
        mode,
        "--test-command",
        "python3 -m unittest -q",
        "Fix add in calc.py",
    ]
}

/// A committed git repository holding a tiny Python package.
pub(crate) fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", BUGGY);
    sandbox.write("test_calc.py", TEST);
    sandbox.write(".gitignore", "__pycache__/\n");
    support::commit_all(&sandbox.root);
    sandbox
}

pub(crate) fn code(id: &str, content: &str) -> Reply {
    submit(
        id,
        "submit_code",
        json!({"files": [{"path": "calc.py", "content": content}], "summary": "edit add"}),
    )
}

pub(crate) fn verdict(id: &str) -> Reply {
    submit(
        id,
        "submit_verdict",
        json!({"accepted": true, "reasons": ["add adds"]}),
    )
}

pub(crate) fn reasoning(out: &Outcome) -> String {
    out.of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect()
}

#[test]
fn a_question_that_asks_for_a_tool_gets_the_light_tier() {
    for request in [
        "what is 2 plus 40? use the sum tool",
        "fix add in calc.py: swap minus for plus",
    ] {
        let provider = FakeProvider::start(vec![openai::answer(&["42"])]);
        let sandbox = project();
        let out = exec_json(&sandbox, &provider, &[request]);
        assert_eq!(out.code, 0, "{request}: {}", out.stdout);
        assert!(
            reasoning(&out).contains("Tier auto: light"),
            "{request}: {}",
            reasoning(&out)
        );
        let result = out.final_result();
        assert_eq!(result["tier"], "light", "{request}");
        assert_eq!(result["stages"], json!([]), "{request}");
        assert_eq!(provider.requests().len(), 1, "{request}");
    }
}

#[test]
fn a_code_writer_with_nothing_to_change_ends_the_pipeline_with_its_answer() {
    let answer = "Nothing to change: add already returns a + b.";
    // What the pipeline would have asked for had it gone on failing.
    let provider = FakeProvider::start(vec![
        openai::answer(&[answer]),
        openai::answer(&["again"]),
        openai::answer(&["step back"]),
        openai::answer(&["again"]),
    ]);
    let sandbox = project();
    let out = exec_json(
        &sandbox,
        &provider,
        &[
            "--tier",
            "standard",
            "--permission-mode",
            "accept-edits",
            "Does add in calc.py add?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(provider.requests().len(), 1);
    let found = markers(&out);
    assert_well_formed(&found);
    assert_eq!(
        compact(&found),
        [
            "code_writer:start:1",
            "code_writer:done:1",
            "test_runner:skipped:1",
            "acceptance_verifier:skipped:1"
        ]
    );
    assert!(out.of_type("error").is_empty(), "{}", out.stdout);
    assert_eq!(out.text().trim(), answer);
    let result = out.final_result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["tier"], "standard");
    assert_eq!(result["iterations"], 1);
    assert_eq!(out.first("run_end")["status"], "success");
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
}

#[test]
fn a_code_writer_that_changed_files_with_its_tools_but_did_not_submit_goes_on_to_the_tests() {
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_w",
            "write_file",
            json!({"path": "calc.py", "content": FIXED}),
        ),
        openai::answer(&["Fixed add with write_file."]),
        verdict("av1"),
    ]);
    let sandbox = project();
    let out = exec_json(&sandbox, &provider, &fix_calc("accept-edits"));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        compact(&markers(&out)),
        [
            "code_writer:start:1",
            "code_writer:done:1",
            "test_runner:start:1",
            "test_runner:done:1",
            "acceptance_verifier:start:1",
            "acceptance_verifier:done:1"
        ]
    );
    assert_eq!(out.final_result()["status"], "completed");
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
}

/// Replies for a pipeline that (wrongly) retried every iteration with a step-back: enough
/// that the old behaviour shows in the request count instead of running out.
fn retries(first: Reply) -> Vec<Reply> {
    vec![
        first,
        code("cw2", FIXED),
        openai::answer(&["The problem: the test command. Plan: run it."]),
        code("cw3", FIXED),
        verdict("av"),
    ]
}

#[test]
fn a_test_command_that_cannot_run_ends_the_pipeline_at_once() {
    for (command, status) in [
        ("splice-no-such-test-runner", "exit code 127"),
        ("./run_tests.sh", "exit code 126"),
    ] {
        let provider = FakeProvider::start(retries(code("cw1", FIXED)));
        let sandbox = project();
        // Present but not executable: the shell cannot run it (126).
        sandbox.write("run_tests.sh", "#!/bin/sh\nexit 0\n");
        let out = exec_json(
            &sandbox,
            &provider,
            &[
                "--tier",
                "standard",
                "--permission-mode",
                "auto",
                "--test-command",
                command,
                "Fix add in calc.py",
            ],
        );
        assert_eq!(out.code, 1, "{command}: {}", out.stdout);
        assert_eq!(
            provider.requests().len(),
            1,
            "{command}: the pipeline asked the model again"
        );
        let error = out.first("error");
        assert_eq!(error["code"], "tool_error", "{command}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(command) && message.contains(status),
            "{command}: {message}"
        );
        assert!(!reasoning(&out).contains("Step-back"), "{command}");
        let result = out.final_result();
        assert_eq!(result["status"], "failed", "{command}");
        assert_eq!(result["iterations"], 1, "{command}");
        assert_eq!(
            compact(&markers(&out)),
            [
                "code_writer:start:1",
                "code_writer:done:1",
                "test_runner:start:1",
                "test_runner:failed:1",
                "acceptance_verifier:skipped:1"
            ],
            "{command}"
        );
    }
}

#[test]
fn a_code_writer_that_does_not_submit_after_a_failure_is_not_retried() {
    let mut replies = vec![code("cw1", WRONG)];
    replies.extend(retries(openai::answer(&["I think the test is wrong."])));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = exec_json(&sandbox, &provider, &FIX_CALC);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        provider.requests().len(),
        2,
        "the pipeline asked the model again"
    );
    assert!(!reasoning(&out).contains("Step-back"));
    let error = out.first("error");
    assert_eq!(error["code"], "pipeline_failed");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("without calling submit_code") && message.contains("test is wrong"),
        "{message}"
    );
    let result = out.final_result();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["iterations"], 2);
}
