//! The session's own moments: `PreCompact` for an automatic compaction (headless) and for
//! `/compact`, and `/clear`, which (as in Claude Code) fires `SessionEnd` with reason `clear`
//! and then `SessionStart` with source `clear`, in the real TUI.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::{exec, merged, script, user_hooks};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, Reply, openai};
use crate::support::tmux::{Tmux, quote, splice_shell};

/// A hook that appends `EVENT VALUE` (its source, reason or trigger) to a log; the log.
fn logging_hook(sandbox: &Sandbox) -> (PathBuf, PathBuf) {
    let log = sandbox.dir.path().join("hooks.log");
    let hook = script(
        sandbox,
        "log.py",
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nd = json.load(sys.stdin)\n\
             value = d.get('source') or d.get('reason') or d.get('trigger') or ''\n\
             open({:?}, 'a').write(d['hook_event_name'] + ' ' + value + '\\n')\n",
            log.display().to_string()
        ),
    );
    (hook, log)
}

fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Wait (bounded) until the log has `count` lines.
fn wait_lines(log: &Path, count: usize) -> Vec<String> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while log_lines(log).len() < count && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    log_lines(log)
}

fn every_event(hook: &Path, events: &[&str]) -> serde_json::Value {
    let command = hook.display().to_string();
    let parts: Vec<serde_json::Value> = events
        .iter()
        .map(|e| json!({ *e: [{"hooks": [{"type": "command", "command": command}]}] }))
        .collect();
    merged(&parts)
}

/// A run past its model's window is compacted automatically: `PreCompact` fires first, with
/// trigger `auto`.
#[test]
fn an_automatic_compaction_fires_pre_compact_with_trigger_auto() {
    let sandbox = Sandbox::new();
    let (hook, log) = logging_hook(&sandbox);
    user_hooks(&sandbox, every_event(&hook, &["PreCompact"]));
    let data = json!({"source": "test", "asOf": "2026-01-01", "models": {
        "openai/tiny-window": {"input": 1.0, "output": 2.0, "contextWindow": 24_000}}});
    std::fs::write(sandbox.dir.path().join("pricing.json"), data.to_string())
        .expect("write pricing.json");
    for i in 1..=3 {
        let line = format!("file {i} line of filler text for the context window test\n");
        sandbox.write(&format!("big{i}.txt"), &line.repeat(28_000 / line.len()));
    }
    let mut replies: Vec<Reply> = (1..=3)
        .map(|i| {
            openai::call_json(
                &format!("call_{i}"),
                "read_file",
                json!({"path": format!("big{i}.txt")}),
            )
        })
        .collect();
    replies.push(openai::answer(&["SUMMARY: filler."]));
    replies.push(openai::answer(&["They hold filler."]));
    let provider = FakeProvider::start(replies);
    let out = exec(
        &sandbox,
        &provider,
        &["--model", "tiny-window", "Read the big files."],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        out.of_type("warning")
            .iter()
            .any(|w| w["code"] == "context_compacted"),
        "{}",
        out.stdout
    );
    assert_eq!(log_lines(&log), ["PreCompact auto"]);
}

/// In the TUI: `SessionStart` (startup) before the first request, `PreCompact` (manual) at
/// `/compact`, `SessionEnd` (clear) then `SessionStart` (clear) at `/clear`, before the next
/// request, and `SessionEnd` (exit) at the end.
#[test]
fn compact_and_clear_in_the_tui_fire_their_hooks() {
    let sandbox = Sandbox::new();
    let (hook, log) = logging_hook(&sandbox);
    user_hooks(
        &sandbox,
        every_event(&hook, &["SessionStart", "SessionEnd", "PreCompact"]),
    );
    let provider = FakeProvider::start(vec![
        openai::answer(&["First answer."]),
        openai::answer(&["Second answer."]),
        openai::answer(&["SUMMARY: two questions."]),
        openai::answer(&["Third answer."]),
    ]);
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        sandbox.dir.path(),
        &format!("--tier light {}", quote("first question")),
    );
    let tmux = Tmux::new("hooks-lifecycle");
    tmux.start("splice", (110, 30), &shell);
    tmux.wait_for("splice", "First answer.");
    tmux.type_text("splice", "second question");
    tmux.keys("splice", &["Enter"]);
    tmux.wait_for("splice", "Second answer.");
    tmux.type_text("splice", "/compact");
    tmux.keys("splice", &["Enter"]);
    tmux.wait_for("splice", "context compacted");
    assert_eq!(
        wait_lines(&log, 2),
        ["SessionStart startup", "PreCompact manual"]
    );
    tmux.type_text("splice", "/clear");
    tmux.keys("splice", &["Enter"]);
    assert_eq!(wait_lines(&log, 3)[2], "SessionEnd clear");
    tmux.type_text("splice", "third question");
    tmux.keys("splice", &["Enter"]);
    tmux.wait_for("splice", "Third answer.");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=0");
    assert_eq!(
        wait_lines(&log, 5),
        [
            "SessionStart startup",
            "PreCompact manual",
            "SessionEnd clear",
            "SessionStart clear",
            "SessionEnd exit",
        ]
    );
    // The cleared conversation is gone from the next request.
    let requests = provider.requests();
    let third = requests[3].body["messages"].to_string();
    assert!(!third.contains("first question"), "{third}");
}
