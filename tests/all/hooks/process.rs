//! A hook is a process group of its own: at its timeout, or at an interrupt, it is killed with
//! everything it started; a timeout is a warning and the session goes on.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{exec, script, user_hooks, warnings};
use crate::support::fake_provider::{FakeProvider, openai};
use crate::support::{Sandbox, alive, ended};

/// A hook that starts a child, writes its pid, and hangs; the script and the pid file.
fn hanging_hook(sandbox: &Sandbox) -> (PathBuf, PathBuf) {
    let pid_file = sandbox.dir.path().join("child.pid");
    let hang = script(
        sandbox,
        "hang.sh",
        &format!(
            "#!/bin/sh\nsleep 300 &\necho $! > {0}.tmp\nmv {0}.tmp {0}\nsleep 300\n",
            pid_file.display()
        ),
    );
    (hang, pid_file)
}

fn child_pid(pid_file: &Path) -> i32 {
    std::fs::read_to_string(pid_file)
        .expect("the hook started its child")
        .trim()
        .parse()
        .expect("a pid")
}

#[test]
fn a_hook_that_hangs_is_killed_at_its_timeout_with_what_it_started() {
    let sandbox = Sandbox::new();
    let (hang, pid_file) = hanging_hook(&sandbox);
    user_hooks(
        &sandbox,
        json!({"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": hang.display().to_string(), "timeout": 1}]}]}),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "read_file", json!({"path": "a.txt"})),
        openai::answer(&["Read."]),
    ]);
    sandbox.write("a.txt", "content\n");
    let started = std::time::Instant::now();
    let out = exec(&sandbox, &provider, &["read a.txt"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let warned = warnings(&out, "hook_failed");
    assert_eq!(warned.len(), 1, "{}", out.stdout);
    assert!(warned[0].contains("timed out"), "{}", warned[0]);
    // A hook that fails is not a block: the call ran.
    assert_eq!(out.first("tool_result")["status"], "ok");
    let pid = child_pid(&pid_file);
    assert!(ended(pid), "the hook's child outlived its timeout");
    assert!(!alive(pid));
}

/// An interrupt while a hook runs ends the run at once, and the hook with everything it
/// started.
#[test]
fn an_interrupt_ends_a_running_hook_with_what_it_started() {
    let sandbox = Sandbox::new();
    let (hang, pid_file) = hanging_hook(&sandbox);
    user_hooks(
        &sandbox,
        super::hook("UserPromptSubmit", "", &hang.display().to_string()),
    );
    let provider = FakeProvider::start(vec![openai::answer(&["never"])]);
    let mut command = sandbox.command(&provider.url);
    crate::support::stream_json(&mut command).args(["--tier", "light", "hello"]);
    let out = crate::support::run_and_signal(command, "INT", |_| pid_file.exists());
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stdout);
    assert!(
        ended(child_pid(&pid_file)),
        "the hook's child outlived the interrupt"
    );
    assert!(provider.requests().is_empty());
}
