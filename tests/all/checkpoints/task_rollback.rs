//! Issue 8, item 7: a failed plan task's writes are rolled back before the next task starts;
//! `restore` works on a task's run id, says so when the run's worktree is gone (and never
//! recreates it), and names the files it skipped in text mode. Each runs the real binary
//! against the fake provider, in a sandbox whose HOME no confined command may write.

use crate::support;

use serde_json::{Value, json};
use support::attack::sandbox_outside_tmp;
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Outcome, Sandbox, run, run_raw, stream_json};

const FIXED: &str = "def add(a, b):\n    return a + b\n";

const WRONG: &str = "def add(a, b):\n    return a * b  # wrong\n";

const TEST: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// A committed git repository with a working `add` and its test.
fn project() -> Sandbox {
    let sandbox = sandbox_outside_tmp();
    sandbox.write("calc.py", FIXED);
    sandbox.write("test_calc.py", TEST);
    sandbox.write(".gitignore", "__pycache__/\n");
    support::commit_all(&sandbox.root);
    sandbox
}

fn code(id: &str, files: &[(&str, &str)]) -> Reply {
    let files: Vec<Value> = files
        .iter()
        .map(|(path, content)| json!({"path": path, "content": content}))
        .collect();
    submit(
        id,
        "submit_code",
        json!({"files": files, "summary": "the change"}),
    )
}

fn accepted(id: &str) -> Reply {
    submit(
        id,
        "submit_verdict",
        json!({"accepted": true, "reasons": ["ok"]}),
    )
}

/// A plan of two independent tasks T1 and T2, approved as drafted.
fn two_task_plan() -> Vec<Reply> {
    let task = |id: &str| json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": []});
    vec![
        submit(
            "plan",
            "submit_plan",
            json!({"tasks": [task("T1"), task("T2")]}),
        ),
        submit(
            "critique",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
    ]
}

fn run_plan(sandbox: &Sandbox, provider: &FakeProvider, test_command: &str) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "1",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        test_command,
        "Two independent changes",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

fn run_id(out: &Outcome) -> String {
    out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn strings(value: &Value) -> Vec<String> {
    let mut found: Vec<String> = value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

fn restore(sandbox: &Sandbox, run_id: &str, extra: &[&str]) -> Outcome {
    let mut splice = sandbox.command("http://127.0.0.1:9");
    splice
        .args(["restore", run_id, "--output-format", "stream-json"])
        .args(extra);
    let out = run(splice, None);
    out.assert_well_formed();
    out
}

#[test]
fn a_failed_plan_task_is_rolled_back_before_the_next_task_starts() {
    let mut replies = two_task_plan();
    // T1 breaks add and adds a file; its only iteration fails the tests.
    replies.push(code("t1", &[("calc.py", WRONG), ("t1_notes.txt", "t1\n")]));
    // T2 only adds a file: with T1's changes gone, the tests pass.
    replies.push(code("t2", &[("t2.txt", "t2\n")]));
    replies.push(accepted("t2v"));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = run_plan(&sandbox, &provider, "python3 -m unittest test_calc");
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let result = out.final_result();
    assert_eq!(result["failed"], json!(["T1"]), "{result}");
    assert_eq!(result["completed"], json!(["T2"]), "{result}");
    let tasks = result["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        strings(&tasks[0]["rolled_back"]),
        ["calc.py", "t1_notes.txt"]
    );
    assert!(tasks[0].get("rollback_skipped").is_none(), "{result}");
    assert!(tasks[1].get("rolled_back").is_none(), "{result}");
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
    assert!(sandbox.read("t1_notes.txt").is_none());
    assert_eq!(sandbox.read("t2.txt").as_deref(), Some("t2\n"));
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "task_rolled_back")
        .unwrap_or_else(|| panic!("no task_rolled_back warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("T1") && message.contains("calc.py") && message.contains("t1_notes.txt"),
        "{message}"
    );
    // The rollback comes before T2 starts.
    let position =
        |wanted: &dyn Fn(&Value) -> bool| out.lines.iter().position(wanted).expect("missing event");
    let rolled = position(&|l| l["code"] == "task_rolled_back");
    let t2_starts = position(&|l| {
        l["type"] == "reasoning"
            && l["delta"]
                .as_str()
                .is_some_and(|d| d.starts_with("Task T2 "))
    });
    assert!(rolled < t2_starts);
}

#[test]
fn a_rollback_leaves_a_file_changed_after_splice_wrote_it_and_names_it() {
    let mut replies = two_task_plan();
    replies.push(code("t1", &[("calc.py", WRONG), ("t1_notes.txt", "t1\n")]));
    replies.push(code("t2", &[("t2.txt", "t2\n")]));
    replies.push(accepted("t2v"));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    // Something other than Splice's writes changes t1_notes.txt after T1 wrote it.
    let out = run_plan(
        &sandbox,
        &provider,
        "echo later >> t1_notes.txt; python3 -m unittest test_calc",
    );
    let result = out.final_result();
    let tasks = result["tasks"].as_array().cloned().unwrap_or_default();
    assert_eq!(strings(&tasks[0]["rolled_back"]), ["calc.py"], "{result}");
    assert_eq!(
        strings(&tasks[0]["rollback_skipped"]),
        ["t1_notes.txt"],
        "{result}"
    );
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
    // Kept as the later writer left it (T2's test run appends once more).
    let notes = sandbox.read("t1_notes.txt").unwrap_or_default();
    assert!(notes.starts_with("t1\nlater\n"), "{notes:?}");
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "task_rolled_back")
        .unwrap_or_else(|| panic!("no task_rolled_back warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("left alone") && message.contains("t1_notes.txt"),
        "{message}"
    );
    assert_eq!(result["completed"], json!(["T2"]), "{result}");
}

#[test]
fn restore_of_a_task_run_id_puts_back_that_tasks_files_only() {
    let mut replies = two_task_plan();
    replies.push(code("t1", &[("a.txt", "from T1\n")]));
    replies.push(accepted("t1v"));
    replies.push(code("t2", &[("b.txt", "from T2\n")]));
    replies.push(accepted("t2v"));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = run_plan(&sandbox, &provider, "true");
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let result = out.final_result();
    let t1_run = result["tasks"][0]["run_id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(t1_run.starts_with("run_"), "{result}");

    let undo = restore(&sandbox, &t1_run, &[]);
    assert_eq!(undo.code, 0, "{}\n{}", undo.stderr, undo.stdout);
    assert_eq!(undo.lines[0]["runId"], t1_run.as_str());
    let deleted: Vec<String> = undo
        .of_type("restore")
        .iter()
        .flat_map(|r| strings(&r["checkpoint"]["filesDeleted"]))
        .collect();
    assert_eq!(deleted, ["a.txt"]);
    assert!(sandbox.read("a.txt").is_none());
    assert_eq!(sandbox.read("b.txt").as_deref(), Some("from T2\n"));

    // The plan's own run id still restores what is left: T2's file.
    let undo = restore(&sandbox, &run_id(&out), &[]);
    assert_eq!(undo.code, 0, "{}\n{}", undo.stderr, undo.stdout);
    assert!(sandbox.read("b.txt").is_none());
}

#[test]
fn restore_after_worktree_clean_says_the_worktree_is_gone_and_never_recreates_it() {
    let sandbox = project();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "w1",
            "write_file",
            &[r#"{"path":"a.txt","content":"worktree\n"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "light",
        "--permission-mode",
        "accept-edits",
        "--worktree",
        "write a.txt",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let run = run_id(&out);
    let worktree = sandbox.data.join("worktrees").join(&run);
    assert!(worktree.join("a.txt").exists(), "the worktree stays");

    let mut clean = sandbox.command("http://127.0.0.1:9");
    clean.args(["worktree", "clean", &run]);
    let cleaned = run_raw(clean, None);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    assert!(!worktree.exists());

    for extra in [&[][..], &["--force"][..]] {
        let undo = restore(&sandbox, &run, extra);
        assert_eq!(undo.code, 1, "{extra:?}: {}", undo.stdout);
        assert!(undo.of_type("restore").is_empty(), "{extra:?}");
        let error = undo.first("error");
        assert_eq!(error["code"], "restore_failed");
        let message = error["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("gone")
                && message.contains(&run)
                && message.contains(&worktree.display().to_string()),
            "{message}"
        );
        assert!(!message.contains("changed after"), "{message}");
        assert!(!worktree.exists(), "{extra:?} recreated the worktree dir");
    }

    // A stray directory where the worktree was is not the worktree: --force writes nothing there.
    std::fs::create_dir_all(&worktree).expect("create worktree");
    let undo = restore(&sandbox, &run, &["--force"]);
    assert_eq!(undo.code, 1, "{}", undo.stdout);
    assert_eq!(undo.first("error")["code"], "restore_failed");
    let left: Vec<_> = std::fs::read_dir(&worktree)
        .expect("list worktree")
        .collect();
    assert!(left.is_empty(), "restore wrote into a stray directory");
}

#[test]
fn text_mode_restore_names_the_files_it_restored_and_skipped() {
    let sandbox = sandbox_outside_tmp();
    sandbox.write("kept.txt", "before\n");
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "write_file",
            &[r#"{"path":"kept.txt","content":"splice\n"}"#],
        ),
        openai::tool_call(
            "c2",
            "write_file",
            &[r#"{"path":"edited.txt","content":"splice\n"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "--permission-mode", "auto", "edit"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    sandbox.write("edited.txt", "a person's edit\n");

    let mut splice = sandbox.command("http://127.0.0.1:9");
    splice.args(["restore", &run_id(&out), "--output-format", "text"]);
    let undo = run_raw(splice, None);
    assert_eq!(undo.code, 1, "{}", undo.stderr);
    let shown = format!("{}{}", undo.stdout, undo.stderr);
    assert!(
        shown.contains("skipped edited.txt") || shown.contains("skipped: edited.txt"),
        "{shown}"
    );
    assert!(shown.contains("kept.txt"), "{shown}");
    assert_eq!(sandbox.read("kept.txt").as_deref(), Some("before\n"));
    assert_eq!(
        sandbox.read("edited.txt").as_deref(),
        Some("a person's edit\n")
    );
}
