//! A process a command leaves behind (through `setsid`, a double fork, or by killing its
//! supervisor) dies with its command, its timeout, or Splice.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, outside_dir, stream_json};

use support::one_call::{one_call, result_of};
use support::process::{HUNG, finish, spawn};

/// The supervisor ends whatever a command leaves behind, but it runs as the same user as the
/// command: a command that left a detached process behind and then killed its supervisor
/// (`kill -9 $PPID`) left no one to end it; the process rewrote README.md after `run_end`.
#[test]
fn a_command_that_kills_its_supervisor_leaves_nothing_behind() {
    let marker = format!("splice-orphan-{}", std::process::id());
    let home = Sandbox::new_in(&outside_dir());
    home.write("README.md", "original\n");
    let command = format!(
        "setsid sh -c 'sleep 1; echo {marker} > README.md' & sleep 0.2; kill -9 $PPID; sleep 2"
    );
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": command }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut splice = home.command(&provider.url);
    stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("do it");
    let out = support::run(splice, None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Splice has exited: whatever the command started must be gone already.
    let alive = processes_with(&marker);
    assert!(
        alive.is_empty(),
        "still running after Splice exited: {alive:?}\n{}",
        out.stdout
    );
    let output = out.first("tool_result")["output"]
        .as_str()
        .unwrap_or_default();
    assert!(output.contains("Operation not permitted"), "{output}");
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|line| line.contains(marker))
        .collect()
}

/// Commands that leave a process behind which, a second later, rewrites README.md: through
/// `setsid` (out of the process group Splice kills), a double fork, and the Python.
fn escapes(marker: &str) -> Vec<String> {
    vec![
        format!("setsid sh -c 'sleep 1; echo {marker} > README.md' &"),
        format!("( ( sleep 1; echo {marker} > README.md ) & ) ; echo started"),
        format!(
            "python3 -c \"import os,time; os.setsid(); time.sleep(1); open('README.md','w').write('{marker}')\" &"
        ),
    ]
}

/// The file is untouched after the escapee's sleep, and no escapee is alive.
fn assert_nothing_outlived(sandbox: &Sandbox, marker: &str, what: &str) {
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(
        sandbox.read("README.md").as_deref(),
        Some("original\n"),
        "{what}: a process outlived its command"
    );
    let alive = processes_with(marker);
    assert!(alive.is_empty(), "{what}: still running: {alive:?}");
}

#[test]
fn a_detached_grandchild_dies_with_its_command() {
    for (mode, flags) in [
        ("confined", &["--permission-mode", "auto"][..]),
        ("approved", &["--allow", "run_command"][..]),
    ] {
        for (n, command) in escapes(&format!("splice-escape-{mode}-{}", std::process::id()))
            .into_iter()
            .enumerate()
        {
            let marker = format!("splice-escape-{mode}-{}", std::process::id());
            let sandbox = Sandbox::new();
            sandbox.write("README.md", "original\n");
            let out = one_call(&sandbox, "run_command", json!({"command": command}), flags);
            let (status, output) = result_of(&out);
            assert_eq!(status, "ok", "{mode} #{n}: {output}");
            assert_nothing_outlived(&sandbox, &marker, &format!("{mode} #{n}"));
        }
    }
}

#[test]
fn a_detached_grandchild_dies_when_its_command_times_out() {
    let marker = format!("splice-timeout-{}", std::process::id());
    let sandbox = Sandbox::new();
    sandbox.write("README.md", "original\n");
    let command = format!("setsid sh -c 'sleep 1; echo {marker} > README.md' & sleep 20");
    let out = one_call(
        &sandbox,
        "run_command",
        json!({"command": command, "timeout_ms": 300}),
        &["--permission-mode", "auto"],
    );
    assert_eq!(result_of(&out).0, "timeout");
    assert_nothing_outlived(&sandbox, &marker, "timeout");
}

#[test]
fn a_detached_grandchild_dies_when_splice_is_interrupted_or_killed() {
    for signal in ["INT", "KILL"] {
        let marker = format!("splice-signal-{signal}-{}", std::process::id());
        let sandbox = Sandbox::new();
        sandbox.write("README.md", "original\n");
        let command =
            format!("setsid sh -c 'sleep 1; echo {marker} > README.md' & touch started; sleep 20");
        let provider = FakeProvider::start(vec![openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({"command": command}).to_string()],
        )]);
        let mut splice = sandbox.command(&provider.url);
        stream_json(&mut splice)
            .args(["--permission-mode", "auto"])
            .arg("go");
        let child = spawn(splice);
        let deadline = Instant::now() + HUNG;
        while !sandbox.root.join("started").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            sandbox.root.join("started").exists(),
            "the command never ran"
        );
        let status = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let _ = finish(child, "signalled run");
        assert_nothing_outlived(&sandbox, &marker, &format!("SIG{signal}"));
    }
}
