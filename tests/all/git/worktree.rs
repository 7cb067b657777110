//! `--worktree` runs and their merge-back outcomes in temporary git repositories, with real
//! merges and a real conflict; and `splice worktree list|recover|clean`.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::json;
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, openai};
use support::{Outcome, Sandbox, git, run, stream_json};

const BUGGY: &str = "def add(a, b):\n    return a - b\n";

const FIXED: &str = "def add(a, b):\n    return a + b\n";

fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", BUGGY);
    support::commit_all(&sandbox.root);
    sandbox
}

/// A standard run that writes FIXED, runs `test_command`, and is accepted.
fn standard_run(sandbox: &Sandbox, test_command: &str) -> (Outcome, String) {
    let provider = FakeProvider::start(vec![
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
    ]);
    let mut command = sandbox.command(&provider.url);
    // HOME beside the repository, not around it: the test command stands in for someone else
    // (changing the source, leaving a mark), and HOME under `/tmp` is read-only to commands.
    command.env("HOME", support::home_beside(sandbox));
    stream_json(&mut command).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--worktree",
        "--merge-back",
        "--test-command",
        test_command,
        "Fix add",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (out, run_id)
}

fn branches(root: &Path) -> String {
    git(root, &["branch", "--list", "splice/*"])
}

#[test]
fn completed_run_merges_back() {
    let sandbox = project();
    let (out, run_id) = standard_run(&sandbox, "true");
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let reasoning: String = out
        .of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect();
    assert!(
        reasoning.contains(&format!("on branch splice/{run_id}")),
        "{reasoning}"
    );
    assert!(
        out.text().contains(&format!("Merged splice/{run_id} into")),
        "{}",
        out.text()
    );
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
    assert!(git(&sandbox.root, &["log", "--oneline"]).contains(&format!("Merge splice/{run_id}")));
    assert_eq!(branches(&sandbox.root), "", "a merged branch is removed");
    assert!(!sandbox.data.join("worktrees").join(&run_id).exists());
    assert_eq!(out.final_result()["status"], "completed");
    let types = out.types();
    assert_eq!(&types[types.len() - 3..], ["text", "final", "run_end"]);
    assert!(
        out.lines[types.len() - 3]["delta"]
            .as_str()
            .unwrap_or("")
            .starts_with("Merged")
    );
}

#[test]
fn run_without_changes_merges_nothing() {
    let sandbox = project();
    let provider = FakeProvider::start(vec![openai::answer(&["Nothing to do."])]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "light",
        "--worktree",
        "--merge-back",
        "Look around",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0);
    assert!(
        out.text().ends_with("No changes to merge.\n"),
        "{}",
        out.text()
    );
    assert_eq!(branches(&sandbox.root), "");
}

#[test]
fn dirty_source_is_not_merged() {
    let sandbox = project();
    sandbox.write("calc.py", "# local edit\n");
    let (out, run_id) = standard_run(&sandbox, "true");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let warning = out.first("warning");
    assert_eq!(warning["code"], "dirty_source");
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("branch splice/{run_id}")),
        "{message}"
    );
    assert_eq!(sandbox.read("calc.py").as_deref(), Some("# local edit\n"));
    assert!(branches(&sandbox.root).contains(&format!("splice/{run_id}")));
    // The branch holds the run's work.
    let on_branch = git(
        &sandbox.root,
        &["show", &format!("splice/{run_id}:calc.py")],
    );
    assert_eq!(on_branch, FIXED);
}

/// Files and index of the source checkout, to compare before and after.
fn snapshot_script(sandbox: &Sandbox, name: &str) -> String {
    format!(
        "cd {root} && (find . -path ./.git -prune -o -type f -print | sort | xargs sha256sum; sha256sum .git/index; git rev-parse HEAD; git status --porcelain) > {out}",
        root = sandbox.root.display(),
        out = sandbox.dir.path().join(name).display()
    )
}

#[test]
fn conflict_leaves_the_source_as_it_was() {
    let sandbox = project();
    // While the run works, someone commits a conflicting change to the source; the snapshot
    // taken right after is what the source must still be after the merge attempt.
    let script = sandbox.dir.path().join("diverge.sh");
    std::fs::write(
        &script,
        format!(
            "set -e\ncd {root}\nprintf 'def add(a, b):\\n    return b - a - 0\\n' > calc.py\ngit commit -qam diverge\n{snap}\n",
            root = sandbox.root.display(),
            snap = snapshot_script(&sandbox, "before.txt")
        ),
    )
    .expect("write script");
    let (out, run_id) = standard_run(&sandbox, &format!("sh {}", script.display()));
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let warning = out.first("warning");
    assert_eq!(warning["code"], "merge_conflict", "{warning}");
    let message = warning["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("calc.py") && message.contains(&format!("splice/{run_id}")),
        "{message}"
    );
    let status = Command::new("sh")
        .arg("-c")
        .arg(snapshot_script(&sandbox, "after.txt"))
        .status()
        .expect("run sh");
    assert!(status.success());
    let before = std::fs::read(sandbox.dir.path().join("before.txt")).unwrap_or_default();
    let after = std::fs::read(sandbox.dir.path().join("after.txt")).unwrap_or_default();
    assert!(!before.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&before),
        String::from_utf8_lossy(&after)
    );
    assert!(!sandbox.root.join(".git/MERGE_HEAD").exists());
    assert!(branches(&sandbox.root).contains(&format!("splice/{run_id}")));
}

#[test]
fn git_failure_is_merge_back_failed() {
    let sandbox = project();
    // A stale index lock makes `git merge` in the source fail.
    let lock = sandbox.root.join(".git/index.lock");
    let (out, run_id) = standard_run(&sandbox, &format!("touch {}", lock.display()));
    std::fs::remove_file(&lock).expect("remove lock");
    assert_eq!(out.code, 1, "{}", out.stdout);
    let error = out.first("error");
    assert_eq!(error["code"], "merge_back_failed");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("splice/{run_id}"))
    );
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
    assert!(branches(&sandbox.root).contains(&format!("splice/{run_id}")));
    assert_eq!(out.first("run_end")["status"], "failed");
    // `final` waits for the merge: it comes after the error and counts the failed merge.
    let types = out.types();
    assert_eq!(&types[types.len() - 3..], ["error", "final", "run_end"]);
    assert_eq!(out.final_result()["status"], "failed");
}

#[test]
fn leftover_worktrees_are_listed_recovered_and_cleaned() {
    let sandbox = project();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "w1",
            "write_file",
            &[&json!({"path": "calc.py", "content": FIXED}).to_string()],
        ),
        openai::answer(&["Fixed."]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "--worktree",
        "Fix add",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        out.text().contains(&format!("on branch splice/{run_id}")),
        "{}",
        out.text()
    );
    assert_eq!(
        sandbox.read("calc.py").as_deref(),
        Some(BUGGY),
        "the source is untouched"
    );
    // What an interrupted run leaves: uncommitted work in the worktree.
    let path = sandbox.data.join("worktrees").join(&run_id);
    std::fs::write(path.join("notes.txt"), "half done\n").expect("write notes.txt");

    let splice = |args: &[&str]| {
        let mut command = sandbox.command("http://127.0.0.1:9");
        command.args(args);
        let output = command.output().expect("run command");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    // A misspelled action is a usage error, never the destructive `clean`.
    for action in ["clen", "cleanup", "remove", ""] {
        let (code, _) = splice(&["worktree", action, &run_id]);
        assert_eq!(code, Some(2), "worktree {action:?}");
        assert!(path.exists(), "worktree {action:?} touched the worktree");
    }
    let (code, listed) = splice(&["worktree", "list"]);
    assert_eq!(code, Some(0));
    assert!(
        listed.contains(&run_id) && listed.contains("1 uncommitted change(s), 1 commit(s)"),
        "{listed}"
    );
    let (code, recovered) = splice(&["worktree", "recover", &run_id]);
    assert_eq!(code, Some(0), "{recovered}");
    assert!(
        recovered.contains(&format!("recovered 2 commit(s) on branch splice/{run_id}")),
        "{recovered}"
    );
    assert!(!path.exists());
    let notes = git(
        &sandbox.root,
        &["show", &format!("splice/{run_id}:notes.txt")],
    );
    assert_eq!(notes, "half done\n");
    let (code, listed) = splice(&["worktree", "list"]);
    assert_eq!(
        (code, listed.as_str()),
        (Some(0), "no leftover worktrees\n")
    );
    let (code, _) = splice(&["worktree", "clean", "run_nope"]);
    assert_eq!(code, Some(2));
}

#[test]
fn interrupted_worktree_run_closes_its_stage_and_leaves_a_recoverable_worktree() {
    let sandbox = project();
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
        "--merge-back",
        "--test-command",
        &format!("touch {} && sleep 30", started.display()),
        "Fix add",
    ]);
    let out = support::run_and_signal(command, "INT", |_| started.exists());
    out.assert_well_formed();
    assert_eq!(out.code, 130);
    let found = support::markers::markers(&out);
    support::markers::assert_well_formed(&found);
    // The interrupted stage fails; the one it kept from starting is skipped.
    assert_eq!(
        support::markers::compact(&found),
        [
            "code_writer:start:1",
            "code_writer:done:1",
            "test_runner:start:1",
            "test_runner:failed:1",
            "acceptance_verifier:skipped:1"
        ]
    );
    let failed = &found[3];
    assert_eq!(failed["detail"], "interrupted");
    let result = out.final_result();
    assert_eq!(result["status"], "aborted");
    assert_eq!(result["abort_reason"], "interrupted");
    let records: Vec<&str> = result["stages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["status"].as_str())
        .collect();
    assert_eq!(records, ["done", "failed", "skipped"]);
    // Nothing was merged; the worktree holds the uncommitted work and can be recovered.
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(BUGGY));
    let run_id = out.lines[0]["runId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let listed = sandbox
        .command("http://127.0.0.1:9")
        .args(["worktree", "list"])
        .output()
        .expect("run splice");
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains(&run_id) && listed.contains("1 uncommitted change(s), 0 commit(s)"),
        "{listed}"
    );
}
