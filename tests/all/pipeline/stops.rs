//! Retries that cannot succeed (issue 19), for every model stage: a stage that does not submit
//! or runs out of turns ends the pipeline at once, a malformed submission is retried, an
//! analyzer that cannot run is not shown to the model; and the exact shapes of these end paths
//! (stage markers, `error`, `final`, `run_end`). The real binary against the fake provider,
//! counting its requests.

use crate::support;

use serde_json::{Value, json};
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::markers::{assert_well_formed, compact, markers};
use support::{Outcome, Sandbox, run, stream_json};

use crate::pipeline::code_writer::{FIX_CALC, FIXED, TEST, code, project, reasoning, verdict};

const TESTS: &str = "python3 -m unittest -q";

fn tests(id: &str) -> Reply {
    submit(
        id,
        "submit_tests",
        json!({"files": [], "summary": "test_calc.py covers add"}),
    )
}

fn findings(id: &str, tool: &str) -> Reply {
    submit(id, tool, json!({"findings": []}))
}

/// What a pipeline that (wrongly) went on would ask for next: enough replies that retrying
/// shows in the request count instead of running out.
fn more() -> Vec<Reply> {
    let mut replies = Vec::new();
    for i in 0..3 {
        replies.push(openai::answer(&["The problem restated."]));
        replies.push(code(&format!("cw_more{i}"), FIXED));
        replies.push(tests(&format!("tg_more{i}")));
        replies.push(findings(&format!("sa_more{i}"), "submit_analysis"));
        replies.push(findings(&format!("au_more{i}"), "submit_audit"));
        replies.push(verdict(&format!("av_more{i}")));
    }
    replies
}

fn exec(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(args);
    let out = run(command, None);
    out.assert_well_formed();
    assert_well_formed(&markers(&out));
    out
}

/// The stage behind each model request, by the submit tool it offered.
fn asked(provider: &FakeProvider) -> Vec<String> {
    provider
        .requests()
        .iter()
        .map(|r| {
            r.body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["function"]["name"].as_str())
                .find(|n| n.starts_with("submit_"))
                .unwrap_or("(no submit tool)")
                .to_string()
        })
        .collect()
}

/// The run failed (exit 1) without asking the model again after its `asked_for` requests.
fn assert_failed_after(out: &Outcome, provider: &FakeProvider, asked_for: usize, case: &str) {
    assert_eq!(out.code, 1, "{case}: {}", out.stdout);
    assert_eq!(
        provider.requests().len(),
        asked_for,
        "{case}: the pipeline asked the model again: {:?}",
        asked(provider)
    );
}

fn keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

const STANDARD: &[&str] = &["code_writer", "test_runner", "acceptance_verifier"];

const FULL: &[&str] = &[
    "code_writer",
    "test_generator",
    "static_analyzer",
    "security_auditor",
    "test_runner",
    "acceptance_verifier",
];

/// Markers of one iteration in which the stages before `stuck` were done, `stuck` failed and
/// the rest were skipped.
fn stopped_at(stages: &[&str], stuck: &str) -> Vec<String> {
    let mut expected = Vec::new();
    let mut reached = false;
    for stage in stages {
        if reached {
            expected.push(format!("{stage}:skipped:1"));
        } else if *stage == stuck {
            expected.push(format!("{stage}:start:1"));
            expected.push(format!("{stage}:failed:1"));
            reached = true;
        } else {
            expected.push(format!("{stage}:start:1"));
            expected.push(format!("{stage}:done:1"));
        }
    }
    expected
}

#[test]
fn a_model_stage_that_does_not_submit_ends_the_pipeline_at_once() {
    let prose = "The change looks fine to me.";
    let cases: Vec<(&str, &str, &str, Vec<Reply>)> = vec![
        (
            "standard",
            "acceptance_verifier",
            "submit_verdict",
            vec![code("cw1", FIXED), openai::answer(&[prose])],
        ),
        (
            "full",
            "test_generator",
            "submit_tests",
            vec![code("cw1", FIXED), openai::answer(&[prose])],
        ),
        (
            "full",
            "static_analyzer",
            "submit_analysis",
            vec![code("cw1", FIXED), tests("tg1"), openai::answer(&[prose])],
        ),
        (
            "full",
            "security_auditor",
            "submit_audit",
            vec![
                code("cw1", FIXED),
                tests("tg1"),
                findings("sa1", "submit_analysis"),
                openai::answer(&[prose]),
            ],
        ),
    ];
    for (tier, stuck, tool, mut replies) in cases {
        let asked_for = replies.len();
        replies.extend(more());
        let provider = FakeProvider::start(replies);
        let sandbox = project();
        let out = exec(
            &sandbox,
            &provider,
            &[
                "--tier",
                tier,
                "--permission-mode",
                "auto",
                "--test-command",
                TESTS,
                "Fix add in calc.py and make sure it is tested",
            ],
        );
        assert_failed_after(&out, &provider, asked_for, stuck);
        assert_eq!(asked(&provider).last().map(String::as_str), Some(tool));
        assert!(!reasoning(&out).contains("Step-back"), "{stuck}");
        let stages = if tier == "full" { FULL } else { STANDARD };
        assert_eq!(
            compact(&markers(&out)),
            stopped_at(stages, stuck),
            "{stuck}"
        );
        let error = out.first("error");
        assert_eq!(error["code"], "pipeline_failed", "{stuck}");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!(
                "{stuck}: the model ended the stage without calling {tool}"
            )) && message.contains(prose),
            "{stuck}: {message}"
        );
        let result = out.final_result();
        assert_eq!(result["status"], "failed", "{stuck}");
        assert_eq!(result["iterations"], 1, "{stuck}");
        assert_eq!(out.first("run_end")["status"], "failed", "{stuck}");
    }
}

#[test]
fn a_model_stage_out_of_turns_ends_the_pipeline_with_turn_limit() {
    let mut replies = vec![
        code("cw1", FIXED),
        openai::call_json("call_r", "read_file", json!({"path": "calc.py"})),
    ];
    replies.extend(more());
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = exec(
        &sandbox,
        &provider,
        &[
            "--tier",
            "standard",
            "--permission-mode",
            "auto",
            "--max-turns",
            "1",
            "--test-command",
            TESTS,
            "Fix add in calc.py",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(
        asked(&provider),
        ["submit_code", "submit_verdict"],
        "the pipeline asked the model again"
    );
    assert_eq!(
        compact(&markers(&out)),
        stopped_at(STANDARD, "acceptance_verifier")
    );
    let error = out.first("error");
    assert_eq!(error["code"], "turn_limit");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("did not call submit_verdict within 1 turns")
            && message.contains("--max-turns"),
        "{message}"
    );
    assert_eq!(out.final_result()["status"], "failed");
    assert_eq!(out.first("run_end")["exitCode"], 1);
}

#[test]
fn a_malformed_submission_is_retried() {
    let provider = FakeProvider::start(vec![
        code("cw1", FIXED),
        submit("av1", "submit_verdict", json!({"accepted": "yes"})),
        code("cw2", FIXED),
        verdict("av2"),
    ]);
    let sandbox = project();
    let out = exec(&sandbox, &provider, &FIX_CALC);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(provider.requests().len(), 4);
    let result = out.final_result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["iterations"], 2);
    assert!(out.of_type("error").is_empty(), "{}", out.stdout);
}

#[test]
fn a_test_generator_that_wrote_tests_with_its_tools_goes_on() {
    let provider = FakeProvider::start(vec![
        code("cw1", FIXED),
        openai::call_json(
            "call_w",
            "write_file",
            json!({"path": "test_more.py", "content": TEST.replace("AddTest", "MoreTest")}),
        ),
        openai::answer(&["Added test_more.py."]),
        findings("sa1", "submit_analysis"),
        findings("au1", "submit_audit"),
        verdict("av1"),
    ]);
    let sandbox = project();
    let out = exec(
        &sandbox,
        &provider,
        &[
            "--tier",
            "full",
            "--permission-mode",
            "auto",
            "--test-command",
            TESTS,
            "Fix add in calc.py and test it",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(provider.remaining(), 0);
    let found = markers(&out);
    let generator = found
        .iter()
        .find(|m| m["stage"] == "test_generator" && m["status"] == "done")
        .unwrap_or_else(|| panic!("{}", compact(&found).join("\n")));
    assert_eq!(
        generator["detail"],
        "changed files with its tools, without submit_tests"
    );
    assert_eq!(out.final_result()["status"], "completed");
    assert!(sandbox.root.join("test_more.py").exists());
}

#[test]
fn an_analyzer_that_cannot_run_is_not_shown_to_the_model() {
    // A Go module on a PATH without Go: `go vet` is detected and cannot run (127).
    let sandbox = Sandbox::new();
    sandbox.write("go.mod", "module example.com/calc\n\ngo 1.22\n");
    sandbox.write("calc.txt", "minus\n");
    support::commit_all(&sandbox.root);
    let bin = sandbox.dir.path().join("bin");
    std::fs::create_dir_all(&bin).expect("create bin");
    let git = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("git"))
        .find(|p| p.is_file())
        .expect("no git on PATH");
    std::os::unix::fs::symlink(git, bin.join("git")).expect("link git to git");
    let provider = FakeProvider::start(vec![
        submit(
            "cw1",
            "submit_code",
            json!({"files": [{"path": "calc.txt", "content": "plus\n"}], "summary": "plus"}),
        ),
        tests("tg1"),
        findings("au1", "submit_audit"),
        verdict("av1"),
        findings("extra", "submit_analysis"),
    ]);
    let mut command = sandbox.command(&provider.url);
    command.env("PATH", &bin);
    stream_json(&mut command).args([
        "--tier",
        "full",
        "--permission-mode",
        "auto",
        "--test-command",
        "true",
        "Write plus in calc.txt",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        asked(&provider),
        [
            "submit_code",
            "submit_tests",
            "submit_audit",
            "submit_verdict"
        ]
    );
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "analyzer_refused")
        .unwrap_or_else(|| panic!("no analyzer_refused warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("go vet ./...") && message.contains("exit code 127"),
        "{message}"
    );
    let found = markers(&out);
    let analyzer = found
        .iter()
        .find(|m| m["stage"] == "static_analyzer" && m["status"] == "done")
        .unwrap_or_else(|| panic!("{}", compact(&found).join("\n")));
    assert_eq!(analyzer["detail"], "no analyzer ran: none could run here");
}

/// A marker with its `ms` checked and removed, so the rest compares exactly.
fn without_ms(marker: &Value) -> Value {
    let mut marker = marker.clone();
    if let Some(object) = marker.as_object_mut()
        && let Some(ms) = object.remove("ms")
    {
        assert!(ms.is_u64(), "ms is not a count of milliseconds: {ms}");
    }
    marker
}

#[test]
fn a_stuck_pipeline_ends_with_the_shapes_the_protocol_fixes() {
    let mut replies = vec![code("cw1", FIXED), openai::answer(&["Looks fine."])];
    replies.extend(more());
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = exec(&sandbox, &provider, &FIX_CALC);
    let found: Vec<Value> = markers(&out).iter().map(without_ms).collect();
    let stuck = "the model ended the stage without calling submit_verdict (it said: Looks fine.); another iteration would not do better";
    assert_eq!(
        found,
        [
            json!({"stage":"code_writer","status":"start","iteration":1,"index":1,"total":3}),
            json!({"stage":"code_writer","status":"done","iteration":1,"index":1,"total":3,"detail":"wrote calc.py"}),
            json!({"stage":"test_runner","status":"start","iteration":1,"index":2,"total":3}),
            json!({"stage":"test_runner","status":"done","iteration":1,"index":2,"total":3,"detail":format!("`{TESTS}` passed (exit code 0)")}),
            json!({"stage":"acceptance_verifier","status":"start","iteration":1,"index":3,"total":3}),
            json!({"stage":"acceptance_verifier","status":"failed","iteration":1,"index":3,"total":3,"detail":stuck}),
        ]
    );
    // The end: error, the summary, final, run_end; nothing after run_end.
    let types = out.types();
    let tail: Vec<&str> = types[types.len() - 4..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(tail, ["error", "text", "final", "run_end"]);
    let run_id = out.lines[0]["runId"].clone();
    assert_eq!(
        *out.first("error"),
        json!({"schemaVersion":2,"type":"error","runId":run_id,"code":"pipeline_failed",
            "message":format!("the pipeline stopped in iteration 1, since no further iteration could pass: acceptance_verifier: {stuck}"),
            "recoverable":false})
    );
    assert_eq!(
        *out.first("run_end"),
        json!({"schemaVersion":2,"type":"run_end","runId":run_id,"status":"failed","exitCode":1})
    );
    let result = out.final_result();
    assert_eq!(
        keys(&result),
        [
            "abort_reason",
            "answer",
            "iterations",
            "run_id",
            "stages",
            "status",
            "tier",
            "usage"
        ]
    );
    assert_eq!(result["run_id"], run_id);
    assert_eq!(result["status"], "failed");
    assert_eq!(result["tier"], "standard");
    assert_eq!(result["abort_reason"], Value::Null);
    assert_eq!(result["usage"]["requests"], 2);
    let records: Vec<Value> = result["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| json!([r["name"], r["status"], r["iteration"], r["detail"]]))
        .collect();
    assert_eq!(
        records,
        [
            json!(["code_writer", "done", 1, "wrote calc.py"]),
            json!([
                "test_runner",
                "done",
                1,
                format!("`{TESTS}` passed (exit code 0)")
            ]),
            json!(["acceptance_verifier", "failed", 1, stuck]),
        ]
    );
}

#[test]
fn an_answered_pipeline_ends_with_the_shapes_the_protocol_fixes() {
    let answer = "Nothing to change: add already returns a + b.";
    let provider = FakeProvider::start(vec![openai::answer(&[answer])]);
    let sandbox = project();
    let out = exec(
        &sandbox,
        &provider,
        &[
            "--tier",
            "full",
            "--permission-mode",
            "auto",
            "Does add in calc.py add?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let found: Vec<Value> = markers(&out).iter().map(without_ms).collect();
    let mut expected = vec![
        json!({"stage":"code_writer","status":"start","iteration":1,"index":1,"total":6}),
        json!({"stage":"code_writer","status":"done","iteration":1,"index":1,"total":6,
            "detail":"nothing to change; answered the request"}),
    ];
    for (i, stage) in FULL.iter().enumerate().skip(1) {
        // Skipped markers carry neither ms nor detail.
        expected
            .push(json!({"stage":stage,"status":"skipped","iteration":1,"index":i + 1,"total":6}));
    }
    assert_eq!(found, expected);
    let types = out.types();
    let tail: Vec<&str> = types[types.len() - 3..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(tail, ["text", "final", "run_end"]);
    let run_id = out.lines[0]["runId"].clone();
    assert_eq!(
        *out.first("run_end"),
        json!({"schemaVersion":2,"type":"run_end","runId":run_id,"status":"success","exitCode":0})
    );
    let result = out.final_result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["iterations"], 1);
    assert_eq!(result["abort_reason"], Value::Null);
    assert_eq!(result["answer"], format!("{answer}\n"));
    let statuses: Vec<&str> = result["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["status"].as_str())
        .collect();
    assert_eq!(
        statuses,
        [
            "done", "skipped", "skipped", "skipped", "skipped", "skipped"
        ]
    );
}

#[test]
fn a_design_plan_task_that_is_stuck_fails_once_and_says_why_and_an_answer_is_kept() {
    let task = |id: &str| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": []});
    let answer = "Nothing to change for T2.";
    let mut replies = vec![
        submit(
            "p1",
            "submit_plan",
            json!({"tasks": [task("T1"), task("T2")]}),
        ),
        submit(
            "c1",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
        // T1: the verifier answers in prose instead of submitting.
        code("t1cw", FIXED),
        openai::answer(&["Looks fine."]),
        // T2: the code writer has nothing to change.
        openai::answer(&[answer]),
    ];
    let asked_for = replies.len();
    replies.extend(more());
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = exec(
        &sandbox,
        &provider,
        &[
            "--design-plan",
            "--jobs",
            "1",
            "--permission-mode",
            "auto",
            "--test-command",
            TESTS,
            "Split the work",
        ],
    );
    assert_failed_after(&out, &provider, asked_for, "design plan");
    assert_eq!(out.first("error")["code"], "design_plan_failed");
    let said = reasoning(&out);
    assert!(
        // A marker may precede the line's text without a newline of its own.
        said.lines().any(|l| l.contains("Task T1 (run_")
            && l.contains(") failed: acceptance_verifier: the model ended the stage without calling submit_verdict (it said: Looks fine.)")),
        "{said}"
    );
    let result = out.final_result();
    assert_eq!(result["failed"], json!(["T1"]));
    assert_eq!(result["completed"], json!(["T2"]));
    let tasks = result["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(tasks[0]["result"]["iterations"], 1);
    assert_eq!(tasks[1]["result"]["answer"], answer);
}
