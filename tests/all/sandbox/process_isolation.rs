//! The processes Splice starts (commands, MCP stdio servers, the Scribiz CLI) read nothing of
//! Splice's environment or memory and end with their run, escaped grandchildren included.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splice::mcp::ServerConfig;
use support::fake_provider::{FakeProvider, Reply, anthropic, openai};
use support::{Outcome, Sandbox, TEST_KEY, run, stream_json};

/// The provider key reversed: what the probe is told to look for, so that no process on the
/// way holds the key itself because of the test.
fn needle() -> String {
    TEST_KEY.chars().rev().collect()
}

/// A stdio server in `modes` with this `env`, as the user's config names it.
fn configure_server(sandbox: &Sandbox, name: &str, modes: &[&str], env: &[(&str, &str)]) {
    let entry = support::mcp::hostile(name, modes, env);
    let ServerConfig::Stdio {
        command, args, env, ..
    } = &entry.config
    else {
        panic!("not a stdio server");
    };
    let config = json!({"mcpServers": {name: {"command": command, "args": args, "env": env}}});
    std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
        .expect("write config.json");
}

fn mcp_exec(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> std::process::Command {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--provider", "anthropic", "--tier", "light"])
        .args(args);
    command
}

/// The report the probe wrote (bounded wait: it is written before the server answers).
fn report(path: &Path) -> Vec<Value> {
    let until = Instant::now() + Duration::from_secs(10);
    while !path.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the probe wrote no report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// No ancestor showed the key, in its environment or its memory. The walk went past Splice up
/// to this test process, which holds the key itself (it gives it to Splice and its fake
/// provider receives it): as root that one is unreadable too (it keeps its capabilities, the
/// probe has none); as another user it is the test's, not Splice's, and is left out.
fn assert_nothing_read(report: &[Value], what: &str) {
    let harness = i64::from(std::process::id());
    assert!(
        report.iter().any(|e| e["pid"] == harness),
        "{what}: the probe did not get up to the test process: {report:?}"
    );
    let root = rustix::process::geteuid().is_root();
    for entry in report {
        if entry["pid"] == harness && !root {
            continue;
        }
        assert_eq!(
            entry["environ_has_key"], false,
            "{what} read the key from an ancestor's environment: {entry}"
        );
        assert_eq!(
            entry["mem_has_key"], false,
            "{what} read the key from an ancestor's memory: {entry}"
        );
    }
}

fn assert_gone(pid: i32, what: &str) {
    assert!(support::ended(pid), "{what} (pid {pid}) outlived splice");
}

fn pid_in(file: &Path) -> i32 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {}", file.display()))
}

#[test]
fn an_mcp_server_reads_nothing_of_splices_environment_or_memory() {
    let sandbox = Sandbox::new();
    let report_path = sandbox.dir.path().join("report.json");
    let report_text = report_path.display().to_string();
    let needle = needle();
    configure_server(
        &sandbox,
        "h",
        &["probe"],
        &[
            ("HOSTILE_PROBE_REPORT", &report_text),
            ("HOSTILE_PROBE_NEEDLE", &needle),
        ],
    );
    // A call to the server, so the run waits until it has started (and probed).
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__h__echo", &[r#"{"text":"x"}"#]),
        anthropic::answer(&["Done."]),
    ]);
    let out = run(
        mcp_exec(&sandbox, &provider, &["--allow", "mcp__h__*", "Echo."]),
        None,
    );
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.first("tool_result")["status"], "ok");
    assert_nothing_read(&report(&report_path), "an MCP server");
}

/// A server that ignores SIGTERM and leaves a grandchild in a session of its own, and Splice
/// killed (SIGKILL) in the middle of a run: the grandchild ends anyway.
#[test]
fn an_mcp_servers_escaped_grandchild_ends_when_splice_is_killed() {
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("grandchild.pid");
    let pid_text = pid_file.display().to_string();
    configure_server(
        &sandbox,
        "stub",
        &["stubborn"],
        &[("HOSTILE_PID_FILE", &pid_text)],
    );
    // The model never answers: Splice is killed while it waits.
    let provider = FakeProvider::start(vec![Reply::Silent]);
    let watched = pid_file.clone();
    let out = support::run_and_signal(
        mcp_exec(&sandbox, &provider, &["Hello."]),
        "KILL",
        move |_| std::fs::read_to_string(&watched).is_ok_and(|t| t.trim().parse::<i32>().is_ok()),
    );
    assert_ne!(out.code, 0);
    assert_gone(pid_in(&pid_file), "the MCP server's grandchild");
}

/// A sandbox for the `transcribe` tool: a recording in the root, a priced model, a temp folder
/// of its own.
fn scribiz_setup() -> (Sandbox, PathBuf) {
    let sandbox = Sandbox::new();
    sandbox.write("demo.mp3", "not really audio: the fake CLI never reads it");
    let pricing = json!({"source": "tests", "asOf": "2026-01-01", "models": {
        "openai/priced-model": {"input": 1.0, "output": 2.0, "contextWindow": 128000}}});
    std::fs::write(sandbox.dir.path().join("pricing.json"), pricing.to_string())
        .expect("write pricing.json");
    let tmp = sandbox.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("create tmp");
    (sandbox, tmp)
}

/// `splice exec` transcribing `demo.mp3` through the fake CLI with these hooks, and the fake's
/// record file.
fn transcribe_command(
    sandbox: &Sandbox,
    provider: &FakeProvider,
    tmp: &Path,
    hooks: &[(&str, &str)],
) -> (std::process::Command, PathBuf) {
    let record = sandbox.dir.path().join("record.jsonl");
    let mut command = sandbox.command(&provider.url);
    command
        // The system's python3 first for the fake CLI.
        .env(
            "PATH",
            format!(
                "/usr/bin:/bin:{}",
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("TMPDIR", tmp)
        .env(
            "SCRIBIZ_BIN",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_scribiz/scribiz"),
        )
        .env("SCRIBIZ_FAKE_SCENARIO", "transcribe")
        .env("SCRIBIZ_FAKE_RECORD", &record)
        .env("SCRIBIZ_FAKE_HEARTBEAT_MS", "100")
        .env("SCRIBIZ_FAKE_RESULT", "out-file")
        // The CLI's own key (it gets this one): not the provider key it must not find.
        .env("GEMINI_API_KEY", "gemini-key-for-scribiz-only");
    for (name, value) in hooks {
        command.env(name, value);
    }
    stream_json(&mut command)
        .args(["--tier", "light", "--model", "priced-model"])
        .args(["--permission-mode", "auto", "transcribe demo.mp3"]);
    (command, record)
}

/// The transcription run to its end.
fn transcribe(sandbox: &Sandbox, tmp: &Path, hooks: &[(&str, &str)]) -> (Outcome, PathBuf) {
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "transcribe", json!({"path": "demo.mp3"})),
        openai::answer(&["Done."]),
    ]);
    let (command, record) = transcribe_command(sandbox, &provider, tmp, hooks);
    let out = run(command, None);
    out.assert_well_formed();
    (out, record)
}

/// The pids the fake recorded: its own (`None`) or an event's.
fn recorded_pids(record: &Path, event: Option<&str>) -> Vec<i32> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| match event {
            None => r["argv"].is_array(),
            Some(event) => r["event"] == event,
        })
        .filter_map(|r| r["pid"].as_i64().and_then(|p| i32::try_from(p).ok()))
        .collect()
}

#[test]
fn the_scribiz_cli_reads_nothing_of_splices_environment_or_memory() {
    let (sandbox, tmp) = scribiz_setup();
    let report_path = sandbox.dir.path().join("report.json");
    let report_text = report_path.display().to_string();
    let needle = needle();
    let (out, _) = transcribe(
        &sandbox,
        &tmp,
        &[
            ("SCRIBIZ_FAKE_PROBE", &report_text),
            ("SCRIBIZ_FAKE_NEEDLE", &needle),
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_nothing_read(&report(&report_path), "the Scribiz CLI");
}

#[test]
fn the_scribiz_clis_escaped_grandchild_ends_with_the_run() {
    let (sandbox, tmp) = scribiz_setup();
    let (out, record) = transcribe(&sandbox, &tmp, &[("SCRIBIZ_FAKE_SETSID", "1")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok", "{result}");
    let pids = recorded_pids(&record, Some("setsid-grandchild"));
    // `transcribe`, then `format`: each left one.
    assert!(!pids.is_empty(), "the CLI started no grandchild");
    for pid in pids {
        assert_gone(pid, "the Scribiz CLI's grandchild");
    }
}

/// Splice killed (SIGKILL) while the CLI waits after its plan, with a grandchild in its group
/// and one in a session of its own: all three end.
#[test]
fn the_scribiz_cli_and_its_escaped_grandchild_end_when_splice_is_killed() {
    let (sandbox, tmp) = scribiz_setup();
    let provider = FakeProvider::start(vec![openai::call_json(
        "call_1",
        "transcribe",
        json!({"path": "demo.mp3"}),
    )]);
    let hooks = [
        ("SCRIBIZ_FAKE_SETSID", "1"),
        ("SCRIBIZ_FAKE_AFTER_PLAN", "wait"),
    ];
    let (command, record) = transcribe_command(&sandbox, &provider, &tmp, &hooks);
    let watched = record.clone();
    let out = support::run_and_signal(command, "KILL", move |_| {
        std::fs::read_to_string(&watched).is_ok_and(|r| r.contains("waiting-after-plan"))
    });
    assert_ne!(out.code, 0);
    let cli = recorded_pids(&record, None);
    let escaped = recorded_pids(&record, Some("setsid-grandchild"));
    let grouped = recorded_pids(&record, Some("grandchild"));
    assert!(!cli.is_empty() && !escaped.is_empty() && !grouped.is_empty());
    for pid in cli.into_iter().chain(escaped).chain(grouped) {
        assert_gone(pid, "the Scribiz CLI or a child of it");
    }
}
