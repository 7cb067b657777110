//! Merging a worktree run back with and without a git identity, and `splice worktree` on a live
//! run: never cleaned, an interrupt says how to recover, errors on stderr.

use crate::support;

use serde_json::json;
use support::fake_provider::FakeProvider;
use support::fixing_run::{FIXED, fixing_run, project, submit};
use support::process::Start;
use support::{Sandbox, git, run, run_raw, stream_json};

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
    let child = command.start().expect("start command");
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
        .expect("run kill");
    assert!(status.success());
    let out = support::parse(child.wait_with_output().expect("wait for child"));
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
