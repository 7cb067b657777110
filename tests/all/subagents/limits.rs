//! A subagent's own turn limit and timeout end it with a clear tool error (the parent goes on);
//! an interrupt ends every running subagent, their commands included.

use super::{calls, result_of, support, user_agent};

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, exec_json, processes_with, stream_json, worktrees_left};

#[test]
fn a_subagent_past_its_max_turns_ends_with_a_tool_error() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "look", "prompt": "SUBTASK-LOOP", "agent": "looper"}),
            )]),
        ),
        Reply::when(
            "SUBTASK-LOOP",
            openai::call_json("call_l1", "read_file", json!({"path": "a.txt"})),
        ),
        Reply::when("maxTurns", openai::answer(&["It ran out of turns."])),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    sandbox.write(
        ".splice/agents/looper.md",
        "---\ndescription: Looks around\ntools: [read_file]\nmaxTurns: 1\n---\nLook.\n",
    );
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0);
    let result = result_of(&out, "call_a");
    assert_eq!(result["status"], "error");
    assert_eq!(
        result["output"],
        "subagent agent_1 (looper) did not finish within its 1 turns (maxTurns)"
    );
    // Its one turn ran its read; the parent's next request has the error, not the read.
    assert_eq!(result_of(&out, "call_l1")["status"], "ok");
    let last = provider
        .requests()
        .pop()
        .expect("the parent's last request");
    assert!(!super::of_subagent(&last));
    assert!(!last.body.to_string().contains("call_l1"));
}

#[test]
fn a_subagent_past_its_timeout_is_stopped_and_the_parent_goes_on() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "wait", "prompt": "SUBTASK-HANG"}),
            )]),
        ),
        // The subagent's request is answered with a stream that never ends.
        Reply::when("SUBTASK-HANG", Reply::Hang(vec![openai::text("thinking")])),
        Reply::when("agentTimeoutSecs", openai::answer(&["It was stopped."])),
    ]);
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"agentTimeoutSecs": 1}"#,
    )
    .expect("write the config");
    let started = std::time::Instant::now();
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let result = result_of(&out, "call_a");
    assert_eq!(result["status"], "timeout");
    assert_eq!(
        result["output"],
        "subagent agent_1 (general) was stopped after 1 s (agentTimeoutSecs)"
    );
    assert_eq!(out.text(), "It was stopped.");
}

#[test]
fn a_zero_agent_limit_in_the_config_is_a_usage_error() {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"maxAgents": 0}"#,
    )
    .expect("write the config");
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "hi"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.first("error")["message"]
            .as_str()
            .is_some_and(|m| m.contains("`maxAgents` must be at least 1")),
        "{}",
        out.stdout
    );
}

#[test]
fn an_interrupt_ends_every_running_subagent_and_its_commands() {
    let seconds = format!("4{}.25", std::process::id() % 1000);
    let sleep = json!({"command": format!("sleep {seconds}")});
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[
                (
                    "call_a",
                    "agent",
                    json!({"description": "one", "prompt": "SUBTASK-ONE", "agent": "runner"}),
                ),
                (
                    "call_b",
                    "agent",
                    json!({"description": "two", "prompt": "SUBTASK-TWO", "agent": "runner"}),
                ),
            ]),
        ),
        Reply::when(
            "SUBTASK-ONE",
            openai::call_json("call_1", "run_command", sleep.clone()),
        ),
        Reply::when(
            "SUBTASK-TWO",
            openai::call_json("call_2", "run_command", sleep),
        ),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("README", "a project\n");
    support::commit_all(&sandbox.root);
    user_agent(
        &sandbox,
        "runner",
        "---\ndescription: Runs commands\ntools: [run_command]\n---\nRun.\n",
    );
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "PARENT-REQUEST",
    ]);
    let mark = format!("sleep {seconds}");
    let both_running = |lines: &[Value]| {
        lines
            .iter()
            .filter(|l| l["type"] == "tool_call" && l["name"] == "run_command")
            .count()
            == 2
            && processes_with(&mark).len() >= 2
    };
    let out = support::run_and_signal(command, "INT", both_running);
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stderr);
    // Every call has its result, each on the stream of whoever made it.
    for id in ["call_1", "call_2"] {
        let result = result_of(&out, id);
        assert_eq!(result["status"], "error", "{result}");
        assert!(result["agentId"].is_string(), "{result}");
    }
    for id in ["call_a", "call_b"] {
        assert!(result_of(&out, id).get("agentId").is_none());
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !processes_with(&mark).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(processes_with(&mark), Vec::<String>::new());
    // Their worktrees went with them.
    assert_eq!(worktrees_left(&sandbox), Vec::<std::path::PathBuf>::new());
    assert!(sandbox.read("README").is_some());
}

#[test]
fn a_budget_a_subagent_spends_stops_the_run() {
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            calls(&[(
                "call_a",
                "agent",
                json!({"description": "spend", "prompt": "SUBTASK-SPEND"}),
            )]),
        ),
        Reply::when(
            "SUBTASK-SPEND",
            openai::call_json("call_s1", "list_files", json!({})),
        ),
        // Never asked for: the budget is spent before.
        Reply::when("SUBTASK-SPEND", openai::answer(&["too late"])),
    ]);
    let sandbox = Sandbox::new();
    // The parent's request spends 120 tokens, the subagent's first 120 more.
    let out = exec_json(
        &sandbox,
        &provider,
        &["--tier", "light", "--max-tokens", "200", "PARENT-REQUEST"],
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.requests().len(), 2, "no request after the budget");
    assert_eq!(out.first("error")["code"], "budget_exceeded");
    let result = result_of(&out, "call_a");
    assert_eq!(result["status"], "error");
    assert!(
        result["output"]
            .as_str()
            .is_some_and(|o| o.contains("failed")),
        "{result}"
    );
    let usage = out.of_type("usage");
    assert_eq!(usage.len(), 2);
    assert!(usage[1]["agentId"].is_string());
    let totals = &out.final_result()["usage"];
    assert_eq!(totals["total_tokens"], 240, "{totals}");
    assert_eq!(out.final_result()["status"], "aborted");
}
