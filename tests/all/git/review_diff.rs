//! The reviewing stage's `git diff`: an untracked link to a FIFO does not hang it, and an interrupt
//! ends the run while it waits.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, stream_json};

use support::mkfifo;
use support::one_call::one_call_with;

/// The real git, found on PATH as Splice finds it.
fn real_git() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|candidate| candidate.is_file())
        .expect("no git on PATH")
}

/// A `git` that stalls for 30 s on `diff` (as on a huge tree) after writing its pid to
/// `marker`, and is the real git for everything else.
fn stalling_git(dir: &Path, marker: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("create bin");
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = diff ]; then echo $$ > '{}'; exec sleep 30; fi\ndone\nexec '{}' \"$@\"\n",
        marker.display(),
        real_git().display()
    );
    let path = bin.join("git");
    std::fs::write(&path, script).expect("write path");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("set the mode of path");
    bin
}

#[test]
fn an_interrupt_ends_the_run_while_a_reviewing_stage_waits_on_git_diff() {
    let sandbox = Sandbox::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")));
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    support::commit_all(&sandbox.root);
    let provider = FakeProvider::start(vec![openai::tool_call(
        "cw",
        "submit_code",
        &[&json!({
            "files": [{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}],
            "summary": "fix"
        })
        .to_string()],
    )]);
    let diffing = sandbox.dir.path().join("diffing");
    let bin = stalling_git(sandbox.dir.path(), &diffing);
    let mut command = sandbox.command(&provider.url);
    let path = std::env::var("PATH").unwrap_or_default();
    command.env("PATH", format!("{}:{path}", bin.display()));
    stream_json(&mut command).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "1",
        "--test-command",
        "true",
        "Fix add",
    ]);
    let started = Instant::now();
    let out = support::run_and_signal(command, "INT", |_| diffing.exists());
    let took = started.elapsed();
    out.assert_well_formed();
    assert_eq!(out.code, 130, "stderr: {}", out.stderr);
    // The diff takes 30 s; the interrupt must not wait for it.
    assert!(
        took < Duration::from_secs(15),
        "the run took {took:?} to end after the interrupt"
    );
    let found = support::markers::compact(&support::markers::markers(&out));
    assert_eq!(
        found.last().map(String::as_str),
        Some("acceptance_verifier:failed:1"),
        "{found:?}"
    );
    // The stalled git was stopped, not left running: gone, or a zombie waiting for init.
    let pid = std::fs::read_to_string(&diffing).expect("read diffing");
    let stat = Path::new("/proc").join(pid.trim()).join("stat");
    let deadline = Instant::now() + Duration::from_secs(5);
    let running = || {
        std::fs::read_to_string(&stat).is_ok_and(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    };
    while running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!running(), "git diff was left running after the run ended");
    // The write the code writer made stays, checkpointed.
    assert_eq!(
        sandbox.read("calc.py").as_deref(),
        Some("def add(a, b):\n    return a + b\n")
    );
}

#[test]
fn an_untracked_link_to_a_fifo_does_not_hang_the_review_diff() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    support::git(&sandbox.root, &["init", "-q", "-b", "main"]);
    support::git(&sandbox.root, &["add", "-A"]);
    support::git(
        &sandbox.root,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "init",
        ],
    );
    // Untracked, so the reviewers' diff reads it in full: it must not wait on the FIFO.
    let fifo = sandbox.dir.path().join("outside-fifo");
    mkfifo(&fifo);
    std::os::unix::fs::symlink(&fifo, sandbox.root.join("notes.txt"))
        .expect("link notes.txt to fifo");
    let fixed = json!({
        "files": [{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}],
        "summary": "add"
    });
    let verdict = json!({"accepted": true, "reasons": ["ok"]});
    let provider = FakeProvider::start(vec![
        openai::tool_call("cw1", "submit_code", &[&fixed.to_string()]),
        openai::tool_call("av1", "submit_verdict", &[&verdict.to_string()]),
    ]);
    let flags = [
        "--tier",
        "standard",
        "--permission-mode",
        "accept-edits",
        "--test-command",
        "true",
    ];
    let out = one_call_with(&sandbox, &provider, &flags, |_| {});
    assert_eq!(out.code, 0, "{}", out.stdout);
}
