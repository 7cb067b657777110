//! Pipeline runs against the fake provider in a temporary git repository holding a tiny Python
//! package: stage markers, iterations, checkpoints, the real test command, the final JSON.

use crate::support;

use serde_json::{Value, json};
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::markers::{assert_well_formed, compact, markers};
use support::{Outcome, Sandbox, run, stream_json};

const BUGGY: &str = "def add(a, b):\n    return a - b\n";

const FIXED: &str = "def add(a, b):\n    return a + b\n";

/// A different length from FIXED: Python trusts a cached .pyc whose source has the same size
/// and mtime second, and these files are rewritten within one second.
const WRONG: &str = "def add(a, b):\n    return a * b  # wrong\n";

/// A test that leaves a line in test_runs.log each time it really runs.
const TEST: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        with open(\"test_runs.log\", \"a\") as log:\n            log.write(\"ran\\n\")\n        self.assertEqual(add(2, 3), 5)\n";

/// A git repository with `files`, committed.
fn project(files: &[(&str, &str)]) -> Sandbox {
    let sandbox = Sandbox::new();
    for (path, content) in files {
        sandbox.write(path, content);
    }
    sandbox.write(".gitignore", "__pycache__/\ntest_runs.log\n");
    support::commit_all(&sandbox.root);
    sandbox
}

fn files(files: &[(&str, &str)]) -> Value {
    Value::Array(
        files
            .iter()
            .map(|(path, content)| json!({"path": path, "content": content}))
            .collect(),
    )
}

fn no_findings(id: &str, name: &str) -> Reply {
    submit(id, name, json!({"findings": []}))
}

fn stage_records(result: &Value) -> Vec<String> {
    result["stages"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|r| {
                    format!(
                        "{}:{}:{}",
                        r["name"].as_str().unwrap_or("?"),
                        r["status"].as_str().unwrap_or("?"),
                        r["iteration"]
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn run_splice(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(args);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

#[test]
fn full_run_fails_the_tests_once_then_passes() {
    let provider = FakeProvider::start(vec![
        // Iteration 1: a wrong fix that the generated test catches.
        submit(
            "cw1",
            "submit_code",
            json!({"files": files(&[("calc.py", WRONG)]), "summary": "multiply"}),
        ),
        submit(
            "tg1",
            "submit_tests",
            json!({"files": files(&[("test_calc.py", TEST)]), "summary": "add(2, 3) == 5"}),
        ),
        no_findings("sa1", "submit_analysis"),
        submit(
            "au1",
            "submit_audit",
            json!({"findings": [{"severity": "low", "path": "calc.py", "line": 1, "message": "no type hints"}]}),
        ),
        // Iteration 2: the right fix.
        submit(
            "cw2",
            "submit_code",
            json!({"files": files(&[("calc.py", FIXED)]), "summary": "add"}),
        ),
        submit(
            "tg2",
            "submit_tests",
            json!({"files": [], "summary": "the test stands"}),
        ),
        no_findings("sa2", "submit_analysis"),
        no_findings("au2", "submit_audit"),
        submit(
            "av2",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["add adds"]}),
        ),
    ]);
    let sandbox = project(&[
        ("calc.py", BUGGY),
        ("AGENTS.md", "Keep calc.py free of imports."),
    ]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--tier",
            "full",
            "--permission-mode",
            "auto",
            "Fix add in calc.py and test it",
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);

    let found = markers(&out);
    assert_well_formed(&found);
    assert_eq!(
        compact(&found),
        [
            "code_writer:start:1",
            "code_writer:done:1",
            "test_generator:start:1",
            "test_generator:done:1",
            "static_analyzer:start:1",
            "static_analyzer:done:1",
            "security_auditor:start:1",
            "security_auditor:done:1",
            "test_runner:start:1",
            "test_runner:failed:1",
            "acceptance_verifier:skipped:1",
            "code_writer:start:2",
            "code_writer:done:2",
            "test_generator:start:2",
            "test_generator:done:2",
            "static_analyzer:start:2",
            "static_analyzer:done:2",
            "security_auditor:start:2",
            "security_auditor:done:2",
            "test_runner:start:2",
            "test_runner:done:2",
            "acceptance_verifier:start:2",
            "acceptance_verifier:done:2",
        ]
    );
    assert!(found.iter().all(|m| m["total"] == 6));
    assert_eq!(found[8]["index"], 5);
    assert!(
        found[9]["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("failed"),
        "{}",
        found[9]
    );
    let reasoning: String = out
        .of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect();
    assert!(reasoning.contains("Starting pipeline iteration 1\n"));
    assert!(reasoning.contains("Starting pipeline iteration 2\n"));

    // Submissions stream as tool_call_start + tool_call_delta and get no tool_result.
    let starts: Vec<&str> = out
        .of_type("tool_call_start")
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(starts.iter().filter(|n| **n == "submit_code").count(), 2);
    let cw1: String = out
        .of_type("tool_call_delta")
        .iter()
        .filter(|l| l["id"] == "cw1")
        .filter_map(|l| l["delta"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&cw1).unwrap_or_default()["summary"],
        "multiply"
    );
    assert!(
        out.of_type("tool_result")
            .iter()
            .all(|r| !r["id"].as_str().unwrap_or("").starts_with("cw"))
    );

    // Checkpoints before each applied submission (the empty test submission writes nothing).
    let checkpoints: Vec<(String, Value)> = out
        .of_type("checkpoint")
        .iter()
        .map(|c| {
            (
                c["checkpoint"]["tool"].as_str().unwrap_or("").to_string(),
                c["checkpoint"]["files"].clone(),
            )
        })
        .collect();
    assert_eq!(
        checkpoints,
        [
            ("submit_code".to_string(), json!(["calc.py"])),
            ("submit_tests".to_string(), json!(["test_calc.py"])),
            ("submit_code".to_string(), json!(["calc.py"])),
        ]
    );

    // The real analyzer and the real test command ran as run_command executions.
    let commands: Vec<String> = out
        .of_type("tool_call")
        .iter()
        .filter(|c| c["name"] == "run_command")
        .filter_map(|c| c["args"]["command"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        commands.iter().filter(|c| c.contains("unittest")).count(),
        2,
        "{commands:?}"
    );
    assert!(
        commands
            .iter()
            .any(|c| c.contains("compileall") || c.contains("ruff")),
        "{commands:?}"
    );
    let test_results: Vec<&Value> = out
        .of_type("tool_result")
        .into_iter()
        .filter(|r| {
            r["id"]
                .as_str()
                .unwrap_or("")
                .starts_with("splice_test_runner")
        })
        .collect();
    assert_eq!(test_results.len(), 2);
    assert_eq!(test_results[0]["status"], "error");
    assert!(
        test_results[0]["output"]
            .as_str()
            .unwrap_or("")
            .contains("AssertionError")
    );
    assert_eq!(test_results[1]["status"], "ok");
    assert_eq!(sandbox.read("test_runs.log").as_deref(), Some("ran\nran\n"));

    // Files on disk.
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
    assert_eq!(sandbox.read("test_calc.py").as_deref(), Some(TEST));
    // The analyzer really ran, and left no bytecode in the repository.
    assert!(
        out.of_type("tool_call").iter().any(|c| c["args"]["command"]
            .as_str()
            .unwrap_or("")
            .contains("compileall")),
        "no analyzer ran"
    );
    assert!(
        !sandbox.root.join("__pycache__").exists(),
        "compileall wrote into the repository"
    );

    // The second code writer was told why the first iteration failed.
    let requests = provider.requests();
    // Every stage's system prompt carries the project's instructions (read once per run).
    for request in &requests {
        let system = request.body["messages"][0]["content"]
            .as_str()
            .unwrap_or("");
        assert!(system.contains("Keep calc.py free of imports."), "{system}");
    }
    let second_writer = requests[4].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        second_writer.contains("test_runner failed"),
        "{second_writer}"
    );
    assert!(second_writer.contains("AssertionError"), "{second_writer}");
    // Review stages offer only read-only tools plus their submit tool.
    let audit_tools: Vec<&str> = requests[3].body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        audit_tools,
        ["read_file", "list_files", "search_files", "submit_audit"]
    );

    // A human summary, then the final JSON.
    let types = out.types();
    let n = types.len();
    assert_eq!(&types[n - 3..], ["text", "final", "run_end"]);
    assert!(
        out.text()
            .starts_with("Pipeline completed after 2 iteration(s) (tier full)"),
        "{}",
        out.text()
    );
    let result = out.final_result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["tier"], "full");
    assert_eq!(result["iterations"], 2);
    assert_eq!(result["abort_reason"], Value::Null);
    assert_eq!(result["run_id"], out.lines[0]["runId"]);
    assert_eq!(result["usage"]["requests"], 9);
    assert_eq!(result["usage"]["total_tokens"], 9 * 120);
    let records = stage_records(&result);
    assert_eq!(records.len(), 12);
    assert_eq!(records[4], "test_runner:failed:1");
    assert_eq!(records[5], "acceptance_verifier:skipped:1");
    assert_eq!(records[11], "acceptance_verifier:done:2");
    assert!(
        result["stages"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|s| s["ms"].is_u64())
    );
}

#[test]
fn failing_every_iteration_steps_back_before_the_last() {
    let writer = |id: &str| {
        submit(
            id,
            "submit_code",
            json!({"files": files(&[("calc.py", WRONG)]), "summary": "try"}),
        )
    };
    let provider = FakeProvider::start(vec![
        writer("cw1"),
        writer("cw2"),
        openai::answer(&["The problem: add must return the sum.\n", "Plan: use +."]),
        writer("cw3"),
    ]);
    let sandbox = project(&[("calc.py", BUGGY), ("test_calc.py", TEST)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--tier",
            "standard",
            "--permission-mode",
            "auto",
            "--test-command",
            "python3 -m unittest test_calc",
            "Fix add",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(provider.remaining(), 0);
    let found = markers(&out);
    assert_well_formed(&found);
    assert!(found.iter().all(|m| m["total"] == 3));
    assert_eq!(found.iter().filter(|m| m["status"] == "failed").count(), 3);
    let reasoning: String = out
        .of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect();
    let step_back = reasoning
        .find("Step-back analysis before iteration 3")
        .unwrap_or_else(|| panic!("{reasoning}"));
    let third = reasoning
        .find("Starting pipeline iteration 3")
        .unwrap_or_else(|| panic!("{reasoning}"));
    assert!(third < step_back, "the step-back opens the last iteration");
    let last_marker = reasoning.rfind("\u{0}STAGE").unwrap_or(0);
    assert!(step_back < last_marker, "before its stages");
    assert!(reasoning.contains("Plan: use +."));
    // The last code writer sees the step-back analysis.
    let last = provider.requests()[3].body["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        last.contains("Step-back analysis") && last.contains("Plan: use +."),
        "{last}"
    );
    assert_eq!(out.first("error")["code"], "pipeline_failed");
    let result = out.final_result();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["iterations"], 3);
    assert_eq!(result["tier"], "standard");
    assert_eq!(
        stage_records(&result).last().map(String::as_str),
        Some("acceptance_verifier:skipped:3")
    );
    assert_eq!(
        sandbox.read("test_runs.log").as_deref(),
        Some("ran\nran\nran\n")
    );
}

#[test]
fn malformed_submission_fails_the_stage_not_the_process() {
    let provider = FakeProvider::start(vec![submit(
        "cw1",
        "submit_code",
        json!({"files": [{"content": "x"}], "summary": "no path"}),
    )]);
    let sandbox = project(&[("calc.py", BUGGY)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--tier",
            "standard",
            "--permission-mode",
            "auto",
            "--max-iterations",
            "1",
            "Fix add",
        ],
    );
    assert_eq!(out.code, 1);
    let found = markers(&out);
    assert_well_formed(&found);
    assert_eq!(
        compact(&found),
        [
            "code_writer:start:1",
            "code_writer:failed:1",
            "test_runner:skipped:1",
            "acceptance_verifier:skipped:1"
        ]
    );
    assert!(
        found[1]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("missing required field `path`"),
        "{}",
        found[1]
    );
    assert_eq!(out.final_result()["status"], "failed");
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
}

#[test]
fn token_budget_aborts_the_run() {
    let provider = FakeProvider::start(vec![
        submit(
            "cw1",
            "submit_code",
            json!({"files": files(&[("calc.py", FIXED)]), "summary": "fix"}),
        ),
        submit(
            "tg1",
            "submit_tests",
            json!({"files": [], "summary": "none"}),
        ),
    ]);
    let sandbox = project(&[("calc.py", BUGGY)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--tier",
            "full",
            "--permission-mode",
            "auto",
            "--max-tokens",
            "50",
            "Fix add in calc.py and test it",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        provider.requests().len(),
        1,
        "no request after the budget is spent"
    );
    let found = markers(&out);
    assert_well_formed(&found);
    assert_eq!(
        compact(&found)[..2],
        ["code_writer:start:1", "code_writer:failed:1"]
    );
    assert_eq!(found.len(), 7, "the rest of the iteration is skipped");
    assert_eq!(out.first("error")["code"], "budget_exceeded");
    let result = out.final_result();
    assert_eq!(result["status"], "aborted");
    assert!(
        result["abort_reason"]
            .as_str()
            .unwrap_or("")
            .contains("token budget exceeded"),
        "{result}"
    );
    assert_eq!(result["usage"]["total_tokens"], 120);
    assert_eq!(
        sandbox.read("calc.py").as_deref(),
        Some(BUGGY),
        "nothing applied after the abort"
    );
}

#[test]
fn auto_and_light_tiers_schedule_no_stage() {
    let provider = FakeProvider::start(vec![
        openai::answer(&["It adds."]),
        openai::answer(&["Done."]),
    ]);
    let sandbox = project(&[("calc.py", BUGGY)]);
    let out = run_splice(&sandbox, &provider, &["What does add do?"]);
    assert_eq!(out.code, 0);
    assert!(markers(&out).is_empty());
    let reasoning = out.first("reasoning")["delta"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(reasoning, "Tier auto: light (the request is a question)\n");
    assert_eq!(out.final_result()["stages"], json!([]));
    let out = run_splice(&sandbox, &provider, &["--tier", "light", "Tidy calc.py"]);
    assert_eq!(out.code, 0);
    assert!(markers(&out).is_empty());
    assert_eq!(out.final_result()["tier"], "light");
}

#[test]
fn design_plan_skips_the_dependent_of_a_failed_task() {
    let task = |id: &str, deps: &[&str]| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": deps});
    let provider = FakeProvider::start(vec![
        submit(
            "p1",
            "submit_plan",
            json!({"tasks": [task("T1", &[]), task("T2", &[]), task("T3", &["T2"])]}),
        ),
        submit(
            "c1",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
        // T1 passes.
        submit(
            "t1cw",
            "submit_code",
            json!({"files": files(&[("calc.py", FIXED)]), "summary": "fix add"}),
        ),
        submit(
            "t1av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["ok"]}),
        ),
        // T2 breaks add; its only iteration fails the tests.
        submit(
            "t2cw",
            "submit_code",
            json!({"files": files(&[("calc.py", WRONG)]), "summary": "break add"}),
        ),
    ]);
    let sandbox = project(&[("calc.py", BUGGY), ("test_calc.py", TEST)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--design-plan",
            "--jobs",
            "1",
            "--permission-mode",
            "auto",
            "--max-iterations",
            "1",
            "--test-command",
            "python3 -m unittest test_calc",
            "Split the work",
        ],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let error = out.first("error");
    assert_eq!(error["code"], "design_plan_failed");
    assert!(
        error["message"].as_str().unwrap_or("").contains("[T2]"),
        "{error}"
    );
    let found = markers(&out);
    assert_well_formed(&found);
    assert_eq!(
        compact(&found),
        [
            "code_writer:start:1",
            "code_writer:done:1",
            "test_runner:start:1",
            "test_runner:done:1",
            "acceptance_verifier:start:1",
            "acceptance_verifier:done:1",
            "code_writer:start:1",
            "code_writer:done:1",
            "test_runner:start:1",
            "test_runner:failed:1",
            "acceptance_verifier:skipped:1",
        ]
    );
    let result = out.final_result();
    assert_eq!(result["kind"], "design_plan");
    assert_eq!(result["completed"], json!(["T1"]));
    assert_eq!(result["failed"], json!(["T2"]));
    assert_eq!(result["skipped"], json!(["T3"]));
    assert_eq!(result["status"], "failed");
    let tasks = result["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(tasks.len(), 3);
    let t1_run = tasks[0]["run_id"].as_str().unwrap_or_default().to_string();
    let t2_run = tasks[1]["run_id"].as_str().unwrap_or_default().to_string();
    assert!(t1_run.starts_with("run_") && t2_run.starts_with("run_") && t1_run != t2_run);
    assert_ne!(t1_run, out.lines[0]["runId"].as_str().unwrap_or_default());
    assert_eq!(tasks[0]["result"]["run_id"], t1_run.as_str());
    assert_eq!(tasks[0]["result"]["status"], "completed");
    assert_eq!(tasks[1]["result"]["status"], "failed");
    assert_eq!(tasks[2]["status"], "skipped");
    assert_eq!(tasks[2]["run_id"], Value::Null);
    assert_eq!(tasks[2]["depends_on"], json!(["T2"]));
    let reasoning: String = out
        .of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect();
    assert!(
        reasoning.contains(&format!("runs as {t1_run}")),
        "{reasoning}"
    );
    assert!(reasoning.contains(&format!("runs as {t2_run}")));
    assert!(reasoning.contains("Task T3 skipped: its dependency T2 did not complete"));
    assert!(reasoning.contains("Design critique: plan approved"));
}

#[test]
fn headless_ask_mode_refuses_the_write_and_stops_after_one_iteration() {
    let provider = FakeProvider::start(vec![submit(
        "cw1",
        "submit_code",
        json!({"files": files(&[("calc.py", FIXED)]), "summary": "add"}),
    )]);
    let sandbox = project(&[("calc.py", BUGGY)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &["--tier", "standard", "Fix add in calc.py"],
    );
    assert_eq!(out.code, 1);
    assert_eq!(
        compact(&markers(&out)),
        [
            "code_writer:start:1",
            "code_writer:failed:1",
            "test_runner:skipped:1",
            "acceptance_verifier:skipped:1"
        ]
    );
    let decision = out.first("permission_decision");
    assert_eq!(decision["permissionGranted"], false);
    // The headless denial sequence of docs/stream-json.md: request, decision, denied result.
    let denied = out.first("tool_result");
    assert_eq!(denied["id"], "cw1");
    assert_eq!(denied["status"], "denied");
    let result = out.final_result();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["iterations"], 1);
    let detail = result["stages"][0]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("--permission-mode accept-edits"),
        "{detail}"
    );
    assert_eq!(provider.requests().len(), 1, "no further model requests");
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
}

#[test]
fn splices_own_test_command_runs_unasked_even_with_backslashes_and_operators() {
    let provider = FakeProvider::start(vec![
        submit(
            "cw1",
            "submit_code",
            json!({"files": files(&[("calc.py", FIXED), ("test_calc.py", TEST)]), "summary": "add"}),
        ),
        submit(
            "av1",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["ok"]}),
        ),
    ]);
    let sandbox = project(&[("calc.py", BUGGY)]);
    let command = r"printf 'start\n' && python3 -m unittest -q";
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--tier",
            "standard",
            "--permission-mode",
            "accept-edits",
            "--test-command",
            command,
            "Fix add in calc.py",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.of_type("permission_request").is_empty(),
        "Splice asked about its own command"
    );
    let call = out
        .of_type("tool_call")
        .into_iter()
        .find(|c| c["args"]["command"] == command)
        .expect("the test command did not run");
    let result = out
        .of_type("tool_result")
        .into_iter()
        .find(|r| r["id"] == call["id"])
        .expect("no result");
    assert_eq!(result["status"], "ok");
    assert_eq!(sandbox.read("test_runs.log").as_deref(), Some("ran\n"));
}

#[test]
fn a_refused_test_command_stops_the_pipeline() {
    let provider = FakeProvider::start(vec![submit(
        "cw1",
        "submit_code",
        json!({"files": files(&[("calc.py", FIXED)]), "summary": "add"}),
    )]);
    let sandbox = project(&[("calc.py", BUGGY), ("test_calc.py", TEST)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--tier",
            "standard",
            "--permission-mode",
            "auto",
            "--deny",
            "run_command(python3*)",
            "--test-command",
            "python3 -m unittest",
            "Fix add in calc.py",
        ],
    );
    assert_eq!(out.code, 1);
    let result = out.final_result();
    assert_eq!(result["iterations"], 1, "a refusal is not retried");
    let detail = result["stages"][1]["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("was refused"), "{detail}");
}

#[test]
fn the_critique_can_repair_a_plan_that_cannot_run_as_drafted() {
    let task = |id: &str, deps: &[&str]| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": deps});
    let provider = FakeProvider::start(vec![
        // The draft depends on a task that does not exist.
        submit("p1", "submit_plan", json!({"tasks": [task("T1", &["T0"])]})),
        submit(
            "c1",
            "submit_critique",
            json!({"approved": false, "issues": ["T0 does not exist"], "tasks": [task("T1", &[])]}),
        ),
        submit(
            "t1cw",
            "submit_code",
            json!({"files": files(&[("calc.py", FIXED)]), "summary": "fix add"}),
        ),
        submit(
            "t1av",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["ok"]}),
        ),
    ]);
    let sandbox = project(&[("calc.py", BUGGY), ("test_calc.py", TEST)]);
    let out = run_splice(
        &sandbox,
        &provider,
        &[
            "--design-plan",
            "--permission-mode",
            "auto",
            "--test-command",
            "python3 -m unittest test_calc",
            "Fix add",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let critique_request = &provider.requests()[1].body;
    assert!(
        critique_request
            .to_string()
            .contains("cannot run as drafted"),
        "the critique was told what is wrong"
    );
    let result = out.final_result();
    assert_eq!(result["kind"], "design_plan");
    assert_eq!(result["completed"], json!(["T1"]));
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
}

#[test]
fn an_interrupted_plan_puts_every_task_in_exactly_one_list() {
    let task = |id: &str, deps: &[&str]| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": deps});
    let provider = FakeProvider::start(vec![
        submit(
            "p1",
            "submit_plan",
            json!({"tasks": [task("T1", &[]), task("T2", &[]), task("T3", &["T2"])]}),
        ),
        submit(
            "c1",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
        // T1's code writer is still answering when the interrupt comes.
        Reply::Hang(vec![openai::text("thinking")]),
    ]);
    let sandbox = project(&[("calc.py", BUGGY), ("test_calc.py", TEST)]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "1",
        "--permission-mode",
        "auto",
        "--test-command",
        "python3 -m unittest test_calc",
        "Split the work",
    ]);
    // T1's code writer has begun answering (a stage's text is reasoning).
    let in_task = |lines: &[serde_json::Value]| {
        lines.iter().any(|l| {
            l["type"] == "reasoning" && l["delta"].as_str().is_some_and(|d| d.starts_with("think"))
        })
    };
    let out = support::run_and_signal(command, "INT", in_task);
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stderr);
    let result = out.final_result();
    assert_eq!(result["kind"], "design_plan");
    assert_eq!(result["status"], "aborted");
    assert_eq!(result["abort_reason"], "interrupted");
    assert_eq!(result["completed"], json!([]));
    assert_eq!(result["failed"], json!(["T1"]));
    assert_eq!(result["skipped"], json!(["T2", "T3"]));
    let statuses: Vec<&str> = result["tasks"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["status"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(statuses, ["failed", "skipped", "skipped"]);
}
