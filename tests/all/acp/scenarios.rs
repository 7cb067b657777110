//! What an editor sees of a session: edits through permission requests, cancels, the plan, a
//! loaded session, the editor's own files.

use serde_json::json;

use super::{client, light, text_of, updates};
use crate::support;
use support::Sandbox;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::fixing_run::{FIXED, fixing_run, project};

fn edit(id: &str, from: &str, to: &str) -> Reply {
    openai::call_json(
        id,
        "edit_file",
        json!({"path": "a.txt", "old_string": from, "new_string": to}),
    )
}

/// A command that writes its pid to pid.txt and sleeps a minute.
fn sleeper() -> Reply {
    openai::call_json(
        "call_1",
        "run_command",
        json!({"command": "echo $$ > pid.txt; exec sleep 60"}),
    )
}

/// The pid the sleeper wrote.
fn sleeper_pid(sandbox: &Sandbox, report: &serde_json::Value) -> i32 {
    sandbox
        .read("pid.txt")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("the command never started: {report}"))
}

/// The flags of a light run that runs commands without asking.
fn auto() -> serde_json::Value {
    json!([
        "--provider",
        "openai",
        "--tier",
        "light",
        "--permission-mode",
        "auto"
    ])
}

/// The model edits a file; the client is asked (allow once, allow always, reject once,
/// reject always, the call's diff shown) and allows it; the file changes and the updates
/// show the call as an edit of that file, with its diff, completed.
#[test]
fn a_prompt_edits_a_file_through_a_permission_the_client_answers() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello world\n");
    let provider = FakeProvider::start(vec![
        edit("call_1", "hello", "goodbye"),
        openai::answer(&["Edited a.txt."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({"args": light(), "prompts": ["say goodbye in a.txt"], "answer": "allow_once"}),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("goodbye world\n"));
    let asked = report["permissions"].as_array().expect("permissions");
    assert_eq!(asked.len(), 1, "{report}");
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter_map(|o| o["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(asked[0]["toolCall"]["toolCallId"], "call_1");
    let shown = &asked[0]["toolCall"]["content"][0];
    assert_eq!(shown["type"], "diff", "{shown}");
    assert_eq!(shown["oldText"], "hello world\n");
    assert_eq!(shown["newText"], "goodbye world\n");

    let call = updates(&report, "tool_call");
    assert_eq!(call.len(), 1, "{report}");
    assert_eq!(call[0]["kind"], "edit");
    assert_eq!(call[0]["title"], "Edit `a.txt`");
    let location = call[0]["locations"][0]["path"].as_str().unwrap_or_default();
    assert_eq!(location, sandbox.root.join("a.txt").display().to_string());
    let done = updates(&report, "tool_call_update");
    let last = done.last().expect("a tool_call_update");
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["content"][0]["type"], "diff");
    assert!(text_of(&report, "agent_message_chunk").contains("Edited a.txt."));
    // Its input closed, the agent ended by itself.
    assert_eq!(report["exit"]["code"], 0, "{report}");
}

/// "Reject always" denies the call and every later one the same rule covers, without asking
/// again; nothing is written.
#[test]
fn reject_always_denies_the_same_call_later_without_asking() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello world\n");
    let provider = FakeProvider::start(vec![
        edit("call_1", "hello", "goodbye"),
        openai::answer(&["Refused."]),
        edit("call_2", "hello", "farewell"),
        openai::answer(&["Refused again."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({"args": light(), "prompts": ["edit a.txt", "edit a.txt again"], "answer": "reject_always"}),
    );
    assert_eq!(
        report["stopReasons"],
        json!(["end_turn", "end_turn"]),
        "{report}"
    );
    assert_eq!(
        report["permissions"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("hello world\n"));
    let failed = updates(&report, "tool_call_update")
        .iter()
        .filter(|u| u["status"] == "failed")
        .count();
    assert_eq!(failed, 2, "{report}");
}

/// A session/cancel while a command runs ends the turn with `cancelled`, and the command's
/// process with it.
#[test]
fn a_cancel_mid_turn_ends_the_turn_and_its_command() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![sleeper(), openai::answer(&["never reached"])]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": auto(),
            "prompts": ["sleep a while"],
            "cancelOn": "execute",
            "waitFor": sandbox.root.join("pid.txt").display().to_string(),
        }),
    );
    assert_eq!(report["stopReasons"], json!(["cancelled"]), "{report}");
    let pid = sleeper_pid(&sandbox, &report);
    assert!(support::ended(pid), "the command outlived the cancel");
    let call = updates(&report, "tool_call");
    assert_eq!(call[0]["kind"], "execute", "{report}");
    assert_eq!(report["exit"]["code"], 0, "{report}");
}

/// The client going away (its stdin closed) mid-command ends the agent and the command.
#[test]
fn the_agent_ends_its_processes_when_its_input_closes() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![sleeper()]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": auto(),
            "prompts": ["sleep a while"],
            "closeOn": "execute",
            "waitFor": sandbox.root.join("pid.txt").display().to_string(),
        }),
    );
    let pid = sleeper_pid(&sandbox, &report);
    assert!(support::ended(pid), "the command outlived the agent");
    assert_eq!(report["exit"]["code"], 0, "{report}");
}

/// A standard pipeline's stages reach the client as `plan` updates, in order: each stage in
/// progress, then completed, the later ones pending until then.
#[test]
fn a_pipelines_plan_updates_reach_the_client_in_order() {
    let sandbox = project(true);
    let provider = FakeProvider::start(fixing_run());
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": ["--provider", "openai", "--tier", "standard", "--permission-mode", "auto", "--test-command", "true"],
            "prompts": ["fix add"],
        }),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    assert_eq!(sandbox.read("calc.py").as_deref(), Some(FIXED));
    let plans: Vec<Vec<(String, String)>> = updates(&report, "plan")
        .iter()
        .map(|p| {
            p["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| {
                    (
                        e["content"].as_str().unwrap_or_default().to_string(),
                        e["status"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .collect();
    let statuses = |plan: &Vec<(String, String)>| -> Vec<String> {
        plan.iter().map(|(_, s)| s.clone()).collect()
    };
    assert!(!plans.is_empty(), "no plan: {report}");
    let names: Vec<&str> = plans[0].iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["code_writer", "test_runner", "acceptance_verifier"]);
    assert_eq!(statuses(&plans[0]), ["in_progress", "pending", "pending"]);
    assert_eq!(
        statuses(plans.last().expect("a plan")),
        ["completed", "completed", "completed"]
    );
    // In order: no entry ever goes back, and the stages finish one after the other.
    let rank = |s: &str| match s {
        "pending" => 0,
        "in_progress" => 1,
        _ => 2,
    };
    for pair in plans.windows(2) {
        for (before, after) in pair[0].iter().zip(&pair[1]) {
            assert!(rank(&before.1) <= rank(&after.1), "{plans:?}");
        }
    }
    let started: Vec<usize> = plans
        .iter()
        .filter_map(|p| p.iter().position(|(_, s)| s == "in_progress"))
        .collect();
    assert!(started.windows(2).all(|w| w[0] <= w[1]), "{plans:?}");
    assert!(started.contains(&1) && started.contains(&2), "{plans:?}");
    // The markers moved the plan; they never reach the client as text.
    let thoughts = text_of(&report, "agent_thought_chunk");
    assert!(!thoughts.contains('\u{0}'), "{thoughts:?}");
}

/// A session saved by one agent is loaded by the next: its history replayed as updates
/// before the answer, and its conversation sent to the model with the next prompt.
#[test]
fn session_load_replays_a_session_and_resumes_its_conversation() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::answer(&["I will remember pineapple."]),
        Reply::when("pineapple", openai::answer(&["It was pineapple."])),
    ]);
    let first = client(
        &sandbox,
        &provider,
        json!({"args": light(), "prompts": ["remember the word pineapple"]}),
    );
    let id = first["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    assert!(id.starts_with("session_"), "{id}");
    let second = client(
        &sandbox,
        &provider,
        json!({"args": light(), "load": id, "prompts": ["which word?"]}),
    );
    assert!(
        second["replayed"].as_u64().is_some_and(|n| n >= 2),
        "{second}"
    );
    assert_eq!(
        text_of(&second, "user_message_chunk"),
        "remember the word pineapple"
    );
    assert!(
        text_of(&second, "agent_message_chunk").starts_with("I will remember pineapple."),
        "{second}"
    );
    assert_eq!(second["stopReasons"], json!(["end_turn"]), "{second}");
    assert!(text_of(&second, "agent_message_chunk").contains("It was pineapple."));
    let last = provider.requests().last().cloned().expect("a request");
    assert!(
        last.body
            .to_string()
            .contains("remember the word pineapple"),
        "{}",
        last.body
    );
    // The modes are Splice's permission modes.
    let modes: Vec<&str> = second["session"]["modes"]["availableModes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(modes, ["ask", "accept-edits", "auto", "read-only"]);
}

/// A client with file capabilities: read_file reads its buffer (unsaved text), write_file
/// lands in the editor through fs/write_text_file (not on disk behind its back).
#[test]
fn file_tools_read_and_write_through_the_client() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "saved text\n");
    let a = sandbox.root.join("a.txt").display().to_string();
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "read_file", json!({"path": "a.txt"})),
        openai::call_json(
            "call_e",
            "edit_file",
            json!({"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}),
        ),
        openai::call_json(
            "call_2",
            "write_file",
            json!({"path": "b.txt", "content": "written by the model\n"}),
        ),
        openai::answer(&["Done."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": ["--provider", "openai", "--tier", "light", "--permission-mode", "accept-edits"],
            "prompts": ["copy a.txt to b.txt"],
            "fs": {"read": true, "write": true},
            "buffers": {a.clone(): "unsaved text in the editor\n"},
        }),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    assert_eq!(report["reads"][0]["path"], a, "{report}");
    let writes = report["writes"].as_array().expect("writes");
    assert_eq!(writes.len(), 2, "{report}");
    // The edit applied to the buffer, unsaved text included.
    assert_eq!(writes[0]["path"], a);
    assert_eq!(writes[0]["content"], "edited text in the editor\n");
    assert_eq!(
        writes[1]["path"],
        sandbox.root.join("b.txt").display().to_string()
    );
    assert_eq!(writes[1]["content"], "written by the model\n");
    // The editor holds the writes; Splice did not also put them on disk.
    assert_eq!(sandbox.read("b.txt"), None);
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("saved text\n"));
    // Still checkpointed: the edit's diff shows the buffer it changed.
    let diff = updates(&report, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == "call_e" && u["content"][0]["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff of the edit: {report}"));
    assert_eq!(
        diff["content"][0]["oldText"],
        "unsaved text in the editor\n"
    );
    let id = report["sessionId"].as_str().expect("a session id");
    let log = std::fs::read_to_string(sandbox.data.join(format!("sessions/{id}.jsonl")))
        .expect("the session log");
    let checkpoints = log
        .lines()
        .filter(|l| l.contains(r#""type":"checkpoint""#))
        .count();
    assert_eq!(checkpoints, 2, "{log}");
    // The model read the buffer, not the file on disk.
    let bodies: Vec<String> = provider
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("unsaved text in the editor")),
        "{bodies:?}"
    );
}

/// A session offers Splice's slash commands (built-in and the project's own), its permission
/// modes and its model; a mode, a model and a built-in command typed as a prompt take effect.
#[test]
fn a_session_offers_its_commands_modes_and_model() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".splice/commands/review.md",
        "---\ndescription: Review the change\nargument-hint: FILE\n---\nReview $ARGUMENTS\n",
    );
    let provider = FakeProvider::start(vec![openai::answer(&["Reviewed."])]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": light(),
            "mode": "read-only",
            "model": "openai/mini",
            "prompts": ["/tier light", "/review a.txt"],
        }),
    );
    assert_eq!(
        report["stopReasons"],
        json!(["end_turn", "end_turn"]),
        "{report}"
    );
    let commands: Vec<&str> = updates(&report, "available_commands_update")
        .first()
        .map(|u| {
            u["availableCommands"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    for name in ["compact", "clear", "model", "tier", "review"] {
        assert!(commands.contains(&name), "{name} missing: {commands:?}");
    }
    let mode = updates(&report, "current_mode_update");
    assert_eq!(mode[0]["currentModeId"], "read-only", "{report}");
    let option = &report["session"]["configOptions"][0];
    assert_eq!(option["id"], "model", "{option}");
    assert_eq!(option["category"], "model", "{option}");
    assert_eq!(
        report["model"]["configOptions"][0]["currentValue"],
        "openai/mini"
    );
    assert!(text_of(&report, "agent_message_chunk").contains("Tier: light"));
    // The custom command was expanded by the session, on the chosen model.
    let request = provider.requests().last().cloned().expect("a request");
    assert!(
        request.body.to_string().contains("Review a.txt"),
        "{}",
        request.body
    );
    assert_eq!(request.body["model"], "gpt-4.1-mini");
}

/// A permission request the client cancels is a denial: nothing is written, the call fails,
/// and the turn still ends normally.
#[test]
fn a_cancelled_permission_request_is_a_denial() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello world\n");
    let provider = FakeProvider::start(vec![
        edit("call_1", "hello", "goodbye"),
        openai::answer(&["Not allowed."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({"args": light(), "prompts": ["edit a.txt"], "answer": "cancelled"}),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("hello world\n"));
    let last = updates(&report, "tool_call_update");
    assert_eq!(last.last().map(|u| &u["status"]), Some(&json!("failed")));
    // Each model request's tokens, against the model's context window.
    let usage = updates(&report, "usage_update");
    assert_eq!(usage.len(), 2, "{report}");
    assert_eq!(usage[0]["used"], 120);
    assert!(
        usage[0]["size"].as_u64().is_some_and(|s| s >= 120),
        "{report}"
    );
}

/// MCP servers the client passes start like configured ones: the model calls their tools.
#[test]
fn mcp_servers_the_client_passes_are_started() {
    let sandbox = Sandbox::new();
    let (command, args) = support::mcp::everything_command();
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "mcp__ev__echo",
            json!({"message": "hello from acp"}),
        ),
        openai::answer(&["Echoed."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": auto(),
            "prompts": ["echo something"],
            "mcpServers": [{"name": "ev", "command": command, "args": args, "env": []}],
        }),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    let done = updates(&report, "tool_call_update");
    let result = done.last().expect("the call's result");
    assert_eq!(result["status"], "completed", "{report}");
    assert!(
        result["content"].to_string().contains("hello from acp"),
        "{result}"
    );
    // The tool was offered to the model from the first request.
    let first = provider.requests().first().cloned().expect("a request");
    assert!(
        first.body.to_string().contains("mcp__ev__echo"),
        "{}",
        first.body
    );
}

/// `SPLICE_LOG=splice::acp=…` selects the front end's events: their target is the interface
/// (docs/user-guide.md#logs), whichever crate writes them.
#[test]
fn splice_log_selects_the_acp_front_end_by_its_target() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(Vec::new());
    let report = super::client_with_env(
        &sandbox,
        &provider,
        json!({ "args": super::light() }),
        &[("SPLICE_LOG", "splice::acp=info")],
    );
    let session = report["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no session: {report}"));
    let log =
        std::fs::read_to_string(sandbox.data.join("log").join("splice.log")).unwrap_or_default();
    let ends = log
        .lines()
        .find(|l| l.contains("session ends"))
        .unwrap_or_else(|| panic!("no `session ends` in the log:\n{log}"));
    assert!(
        ends.contains("splice::acp") && ends.contains(session),
        "{ends}"
    );
    // Only that target: the process's own records (`splice`) are filtered out.
    assert!(!log.contains("splice started"), "{log}");
}
