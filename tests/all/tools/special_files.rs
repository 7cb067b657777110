//! File tools on FIFOs, huge sparse files and files over the size cap: refused or cheap, and the
//! run always finishes.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::one_call::{one_call, result_of};
use support::process::{HUNG, finish, spawn};
use support::{Sandbox, mkfifo, stream_json};

#[test]
fn read_file_on_a_fifo_is_refused_and_the_run_finishes() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.root.join("pipe"));
    let out = one_call(&sandbox, "read_file", json!({"path": "pipe"}), &[]);
    assert_eq!(out.code, 0);
    let (status, output) = result_of(&out);
    assert_eq!(status, "error");
    assert!(output.contains("not a regular file"), "{output}");
}

#[test]
fn write_and_edit_on_a_fifo_are_refused() {
    for (tool, args) in [
        ("write_file", json!({"path": "pipe", "content": "x"})),
        (
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let sandbox = Sandbox::new();
        mkfifo(&sandbox.root.join("pipe"));
        let out = one_call(&sandbox, tool, args, &["--permission-mode", "accept-edits"]);
        assert_eq!(out.code, 0, "{tool}");
        let (status, output) = result_of(&out);
        assert_eq!(status, "error", "{tool}: {output}");
        assert!(output.contains("not a regular file"), "{tool}: {output}");
    }
}

#[test]
fn sigint_ends_a_run_that_met_a_fifo() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.root.join("pipe"));
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "read_file", &[r#"{"path":"pipe"}"#]),
        Reply::Hang(vec![openai::text("thinking")]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).arg("read the pipe");
    // Whether the read hangs or not, SIGINT must end the process: sent once the read's
    // result is out (it is refused, never blocks) and the next answer hangs.
    let out = support::run_and_signal(command, "INT", |lines| support::wrote(lines, "tool_result"));
    out.assert_well_formed();
    assert_eq!(out.code, 130);
}

/// Peak resident memory of a live process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

#[test]
fn five_lines_of_a_huge_sparse_file_cost_little_memory() {
    let sandbox = Sandbox::new();
    let lines: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    sandbox.write("huge.txt", &lines);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(sandbox.root.join("huge.txt"))
        .expect("open huge.txt for writing");
    file.set_len(512 * 1024 * 1024)
        .expect("set the length of file");
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "read_file", &[r#"{"path":"huge.txt","limit":5}"#]),
        Reply::Hang(vec![openai::text("reading")]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).arg("read it");
    let child = spawn(command);
    // The second request carries the tool result: the read is over, the process still alive.
    let deadline = Instant::now() + HUNG;
    while provider.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(provider.requests().len(), 2, "the read never finished");
    let peak = peak_rss_kib(child.id());
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = finish(child, "huge read");
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    assert!(output.starts_with("line 1\nline 2\nline 3\nline 4\nline 5\n"));
    assert!(!output.contains("line 6"), "{output}");
    assert!(peak < 64 * 1024, "peak RSS {peak} KiB for a 5-line read");
}

#[test]
fn editing_a_file_over_the_size_cap_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write("big.txt", "needle\n");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(sandbox.root.join("big.txt"))
        .expect("open big.txt for writing");
    file.set_len(64 * 1024 * 1024)
        .expect("set the length of file");
    for (tool, args) in [
        (
            "edit_file",
            json!({"path": "big.txt", "old_string": "needle", "new_string": "pin"}),
        ),
        ("write_file", json!({"path": "big.txt", "content": "small"})),
    ] {
        let out = one_call(&sandbox, tool, args, &["--permission-mode", "accept-edits"]);
        let (status, output) = result_of(&out);
        assert_eq!(status, "error", "{tool}: {output}");
        assert!(output.contains("larger than"), "{tool}: {output}");
        let size = std::fs::metadata(sandbox.root.join("big.txt")).map(|m| m.len());
        assert_eq!(size.ok(), Some(64 * 1024 * 1024), "{tool} changed the file");
    }
}
