//! `--jobs N`: design-plan tasks side by side, each in its own worktree, merged in the plan's
//! order. Requests of tasks that run at once arrive in any order, so every task's replies are
//! matched by its text ("This is task X of").

use crate::support;

use serde_json::{Value, json};
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply};
use support::{Outcome, Sandbox, processes_with, run, stream_json, worktrees_left};

fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("README", "a project\n");
    support::commit_all(&sandbox.root);
    sandbox
}

fn task(id: &str, deps: &[&str]) -> Value {
    json!({"id": id, "title": format!("task {id}"), "description": format!("do {id}"), "depends_on": deps})
}

/// The plan, approved as drafted: the first two requests, made one after the other.
fn plan(tasks: Vec<Value>) -> Vec<Reply> {
    vec![
        submit("plan", "submit_plan", json!({"tasks": tasks})),
        submit(
            "critique",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        ),
    ]
}

fn needle(id: &str) -> String {
    format!("This is task {id} of")
}

fn code(id: &str, path: &str, content: &str) -> Reply {
    submit(
        &format!("{id}cw"),
        "submit_code",
        json!({"files": [{"path": path, "content": content}], "summary": format!("task {id}")}),
    )
}

/// Task `id`'s code writer and verifier replies; with `after`, its code writer is answered only
/// once task `after`'s request has arrived too.
fn task_replies(id: &str, path: &str, content: &str, after: Option<&str>) -> Vec<Reply> {
    let written = match after {
        Some(other) => Reply::when_after(&needle(id), &needle(other), code(id, path, content)),
        None => Reply::when(&needle(id), code(id, path, content)),
    };
    let verdict = submit(
        &format!("{id}av"),
        "submit_verdict",
        json!({"accepted": true, "reasons": ["ok"]}),
    );
    vec![written, Reply::when(&needle(id), verdict)]
}

fn run_jobs(sandbox: &Sandbox, provider: &FakeProvider, test_command: &str) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "2",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        test_command,
        "Do the plan",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

fn ids(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn a_diamond_runs_its_middle_tasks_at_once_and_the_last_sees_both() {
    let mut replies = plan(vec![
        task("A", &[]),
        task("B", &["A"]),
        task("C", &["A"]),
        task("D", &["B", "C"]),
    ]);
    replies.extend(task_replies("A", "a.txt", "a\n", None));
    // B and C each wait for the other's request: only tasks in flight together pass.
    replies.extend(task_replies("B", "b.txt", "b\n", Some("C")));
    replies.extend(task_replies("C", "c.txt", "c\n", Some("B")));
    replies.extend(task_replies("D", "d.txt", "d\n", None));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    // D's tests pass only where B's, C's and A's files are.
    let out = run_jobs(
        &sandbox,
        &provider,
        "test ! -f d.txt || (test -f a.txt && test -f b.txt && test -f c.txt)",
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let result = out.final_result();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(ids(&result["completed"]), ["A", "B", "C", "D"]);
    for (path, content) in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("c.txt", "c\n"),
        ("d.txt", "d\n"),
    ] {
        let found = std::fs::read_to_string(sandbox.root.join(path)).unwrap_or_default();
        assert_eq!(found, content, "{path}");
    }
    assert!(out.of_type("warning").is_empty(), "{}", out.stdout);
    assert_task_ids(&out, &["A", "B", "C", "D"]);
    // The checkout's branch did not move: the work is there uncommitted, as a plan run in place
    // leaves it.
    let log = std::process::Command::new("git")
        .args(["rev-list", "--count", "HEAD"])
        .current_dir(&sandbox.root)
        .output()
        .expect("git rev-list");
    assert_eq!(String::from_utf8_lossy(&log.stdout).trim(), "1");
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
    // A task's merge is checkpointed as its own: its run id undoes its files only, the plan's
    // every task's.
    let restore = |run_id: &str| {
        let mut command = sandbox.command("http://127.0.0.1:9");
        command.args(["restore", run_id, "--output-format", "stream-json"]);
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 0, "{}", out.stdout);
    };
    restore(result["tasks"][1]["run_id"].as_str().unwrap_or_default());
    assert!(!sandbox.root.join("b.txt").exists());
    assert!(sandbox.root.join("c.txt").is_file());
    restore(out.lines[0]["runId"].as_str().unwrap_or_default());
    for path in ["a.txt", "c.txt", "d.txt"] {
        assert!(!sandbox.root.join(path).exists(), "{path}");
    }
}

/// Every event of a task carries its `taskId` (its stage markers too) and the run's own events
/// none; each task's `usage` events are its own, two requests each, as its result says.
fn assert_task_ids(out: &Outcome, tasks: &[&str]) {
    for line in &out.lines {
        let Some(task) = line.get("taskId") else {
            continue;
        };
        let task = task.as_str().unwrap_or_default();
        assert!(tasks.contains(&task), "{line}");
        let keys: Vec<&String> = line
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(
            keys[..4],
            ["schemaVersion", "type", "runId", "taskId"],
            "{line}"
        );
    }
    for kind in ["run_start", "final", "run_end"] {
        assert!(out.first(kind).get("taskId").is_none(), "{kind}");
    }
    let usage = out.of_type("usage");
    assert!(
        usage[..2].iter().all(|u| u.get("taskId").is_none()),
        "plan and critique"
    );
    let result = out.final_result();
    for (index, task) in tasks.iter().enumerate() {
        let spent = usage.iter().filter(|u| u["taskId"] == *task).count();
        assert_eq!(spent, 2, "{task}");
        assert_eq!(
            result["tasks"][index]["result"]["usage"]["requests"], 2,
            "{task}"
        );
        let marked = out
            .of_type("reasoning")
            .into_iter()
            .filter(|l| {
                l["delta"]
                    .as_str()
                    .is_some_and(|d| d.contains("\u{0}STAGE"))
            })
            .filter(|l| l["taskId"] == *task)
            .count();
        assert!(marked > 0, "{task} has no stage markers");
    }
    for marker in support::markers::markers(out) {
        assert!(marker["taskId"].is_string(), "{marker}");
    }
}

#[test]
fn a_merge_conflict_fails_that_task_keeps_the_other_and_skips_its_dependants() {
    let mut replies = plan(vec![task("A", &[]), task("B", &[]), task("C", &["B"])]);
    replies.extend(task_replies("A", "shared.txt", "from A\n", Some("B")));
    replies.extend(task_replies("B", "shared.txt", "from B\n", Some("A")));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let out = run_jobs(&sandbox, &provider, "true");
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let warning = out
        .of_type("warning")
        .into_iter()
        .find(|w| w["code"] == "merge_conflict")
        .cloned()
        .unwrap_or_else(|| panic!("no merge_conflict warning: {}", out.stdout));
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("task B") && message.contains("shared.txt"),
        "{message}"
    );
    let result = out.final_result();
    assert_eq!(ids(&result["completed"]), ["A"]);
    assert_eq!(ids(&result["failed"]), ["B"]);
    assert_eq!(ids(&result["skipped"]), ["C"]);
    assert_eq!(out.first("error")["code"], "design_plan_failed");
    let kept = std::fs::read_to_string(sandbox.root.join("shared.txt")).unwrap_or_default();
    assert_eq!(kept, "from A\n");
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
}

#[test]
fn without_a_repository_tasks_run_one_at_a_time_and_a_warning_says_why() {
    let mut replies = plan(vec![task("A", &[]), task("B", &[])]);
    replies.extend(task_replies("A", "a.txt", "a\n", None));
    replies.extend(task_replies("B", "b.txt", "b\n", None));
    let provider = FakeProvider::start(replies);
    let sandbox = Sandbox::new();
    sandbox.write("README", "no repository\n");
    let out = run_jobs(&sandbox, &provider, "true");
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let warning = out.first("warning");
    assert_eq!(warning["code"], "tasks_serial");
    assert!(
        warning["message"]
            .as_str()
            .unwrap_or_default()
            .contains("not in a git repository"),
        "{warning}"
    );
    assert_eq!(ids(&out.final_result()["completed"]), ["A", "B"]);
    assert!(sandbox.root.join("a.txt").is_file() && sandbox.root.join("b.txt").is_file());
}

/// Commands still running whose command line holds `mark`.
#[test]
fn an_interrupt_while_three_tasks_run_ends_them_all_and_accounts_for_every_task() {
    let mut replies = plan(vec![
        task("A", &[]),
        task("B", &[]),
        task("C", &[]),
        task("D", &["A"]),
    ]);
    for (id, path) in [("A", "a.txt"), ("B", "b.txt"), ("C", "c.txt")] {
        replies.push(Reply::when(&needle(id), code(id, path, "x\n")));
    }
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    // Each task's tests hang, so all three are running when the interrupt comes.
    let seconds = format!("3{}.25", std::process::id() % 1000);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "3",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        &format!("sleep {seconds}"),
        "Do the plan",
    ]);
    let testing = |lines: &[Value]| {
        lines
            .iter()
            .filter(|l| {
                l["type"] == "reasoning"
                    && l["delta"].as_str().is_some_and(|d| {
                        d.contains("\"stage\":\"test_runner\"")
                            && d.contains("\"status\":\"start\"")
                    })
            })
            .count()
            == 3
    };
    let out = support::run_and_signal(command, "INT", testing);
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stderr);
    let result = out.final_result();
    assert_eq!(result["status"], "aborted");
    let mut failed = ids(&result["failed"]);
    failed.sort_unstable();
    assert_eq!(failed, ["A", "B", "C"]);
    assert_eq!(ids(&result["completed"]), Vec::<&str>::new());
    assert_eq!(ids(&result["skipped"]), ["D"]);
    let statuses: Vec<&str> = result["tasks"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["status"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(statuses, ["failed", "failed", "failed", "skipped"]);
    // Every stage that started ended (the tasks' markers interleave), and no test command
    // outlived the run.
    let markers = support::markers::markers(&out);
    let count = |status: &[&str]| {
        markers
            .iter()
            .filter(|m| status.iter().any(|s| m["status"] == *s))
            .count()
    };
    assert_eq!(count(&["start"]), count(&["done", "failed"]), "{markers:?}");
    // Those the interrupt closed too carry their task's id, on the line and in the marker.
    assert!(
        markers.iter().all(|m| m["taskId"].is_string()),
        "{markers:?}"
    );
    for line in out.of_type("reasoning") {
        if line["delta"]
            .as_str()
            .is_some_and(|d| d.contains("\u{0}STAGE"))
        {
            assert!(line["taskId"].is_string(), "{line}");
        }
    }
    let mark = format!("sleep {seconds}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !processes_with(&mark).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(processes_with(&mark), Vec::<String>::new());
    // The interrupted tasks' worktrees are discarded, as a failed task's is.
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
}

#[test]
fn a_budget_spent_by_tasks_side_by_side_stops_the_whole_plan() {
    let mut replies = plan(vec![task("A", &[]), task("B", &[]), task("C", &["A"])]);
    replies.extend(task_replies("A", "a.txt", "a\n", Some("B")));
    replies.extend(task_replies("B", "b.txt", "b\n", Some("A")));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let mut command = sandbox.command(&provider.url);
    // The plan and its critique spend 240 tokens; the two tasks' first requests spend it all.
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "2",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--max-tokens",
        "300",
        "--test-command",
        "true",
        "Do the plan",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.requests().len(), 4, "no request after the budget");
    assert_eq!(out.first("error")["code"], "budget_exceeded");
    let result = out.final_result();
    assert_eq!(result["status"], "aborted");
    assert!(
        result["abort_reason"]
            .as_str()
            .unwrap_or_default()
            .contains("token budget exceeded"),
        "{result}"
    );
    let mut failed = ids(&result["failed"]);
    failed.sort_unstable();
    assert_eq!(failed, ["A", "B"]);
    assert_eq!(ids(&result["skipped"]), ["C"]);
    assert_eq!(ids(&result["completed"]), Vec::<&str>::new());
    assert!(!sandbox.root.join("a.txt").exists() && !sandbox.root.join("b.txt").exists());
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
}

#[test]
fn with_worktree_the_tasks_branch_off_the_runs_worktree_and_merge_back() {
    let mut replies = plan(vec![task("A", &[]), task("B", &[])]);
    replies.extend(task_replies("A", "a.txt", "a\n", Some("B")));
    replies.extend(task_replies("B", "b.txt", "b\n", Some("A")));
    let provider = FakeProvider::start(replies);
    let sandbox = project();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--design-plan",
        "--jobs",
        "2",
        "--worktree",
        "--merge-back",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        "true",
        "Do the plan",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(ids(&out.final_result()["completed"]), ["A", "B"]);
    for path in ["a.txt", "b.txt"] {
        assert!(sandbox.root.join(path).is_file(), "{path} merged back");
    }
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
}
