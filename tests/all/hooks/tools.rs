//! Tool hooks: `PreToolUse` blocking and rewriting, `PostToolUse` formatting, a
//! `PermissionRequest` answer, and an MCP tool's hooks.

use serde_json::json;

use super::{exec, hook, hook_events, merged, script, sent_text, user_hooks};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, openai};

const BLOCK_RM: &str = "#!/bin/sh\n\
input=$(cat)\n\
case \"$input\" in\n\
  *'rm -rf'*) echo 'rm -rf is not allowed in this project' >&2; exit 2 ;;\n\
esac\n\
exit 0\n";

/// The classic Claude Code hook: exit 2 on `rm -rf`, with the reason on stderr. The command
/// does not run, its result is denied, and the model's next request carries the reason;
/// another command runs as usual.
#[test]
fn a_pre_tool_use_hook_blocks_rm_rf_while_other_commands_run() {
    let sandbox = Sandbox::new();
    sandbox.write("keep/file.txt", "precious\n");
    let guard = script(&sandbox, "block_rm.sh", BLOCK_RM);
    user_hooks(
        &sandbox,
        hook("PreToolUse", "Bash", &guard.display().to_string()),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "run_command", json!({"command": "rm -rf keep"})),
        openai::call_json(
            "call_2",
            "run_command",
            json!({"command": "echo still-here"}),
        ),
        openai::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "auto", "clean up"],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(sandbox.read("keep/file.txt").as_deref(), Some("precious\n"));
    let results = out.of_type("tool_result");
    assert_eq!(results[0]["status"], "denied", "{}", results[0]);
    let output = results[0]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("blocked by a PreToolUse hook: rm -rf is not allowed in this project"),
        "{output}"
    );
    assert_eq!(results[1]["status"], "ok", "{}", results[1]);
    assert!(
        results[1]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("still-here")
    );
    let blocks = hook_events(&out, "PreToolUse");
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    assert_eq!(blocks[0]["decision"], "block");
    assert_eq!(blocks[0]["id"], "call_1");
    assert_eq!(blocks[0]["command"], guard.display().to_string());
    assert!(
        sent_text(&provider.requests()[1]).contains("rm -rf is not allowed in this project"),
        "the model was not told why"
    );
}

const REWRITE: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
command = data["tool_input"]["command"]
if command == "echo original":
    out = {"command": "echo rewritten"}
elif command == "echo broken":
    out = {"command": 42}
else:
    sys.exit(0)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "permissionDecision": "allow", "updatedInput": out}}))
"#;

/// `updatedInput` replaces the call's input, and `permissionDecision: allow` spares the prompt
/// (headless ask mode would deny the command otherwise). An `updatedInput` the tool's schema
/// refuses is not run: the call fails with the reason.
#[test]
fn a_pre_tool_use_hook_rewrites_a_command_and_a_bad_rewrite_is_refused() {
    let sandbox = Sandbox::new();
    let rewrite = script(&sandbox, "rewrite.py", REWRITE);
    user_hooks(
        &sandbox,
        hook("PreToolUse", "run_command", &rewrite.display().to_string()),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "run_command", json!({"command": "echo original"})),
        openai::call_json("call_2", "run_command", json!({"command": "echo broken"})),
        openai::answer(&["Done."]),
    ]);
    let out = exec(&sandbox, &provider, &["run it"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let results = out.of_type("tool_result");
    assert_eq!(results[0]["status"], "ok", "{}", results[0]);
    let output = results[0]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("rewritten") && !output.contains("original"),
        "{output}"
    );
    assert_eq!(results[1]["status"], "error", "{}", results[1]);
    let output = results[1]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("a PreToolUse hook changed the input of run_command")
            && output.contains("the call was not run"),
        "{output}"
    );
    let decisions: Vec<&str> = hook_events(&out, "PreToolUse")
        .iter()
        .filter_map(|h| h["decision"].as_str())
        .collect();
    assert_eq!(decisions, ["update", "allow", "update", "allow"]);
    let granted = out.first("permission_decision");
    assert_eq!(granted["permissionGranted"], true, "{granted}");
}

const FORMAT: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(data) + "\n")
path = data["tool_input"]["file_path"]
with open(path) as f:
    text = f.read()
with open(path, "w") as f:
    f.write(text.upper())
"#;

/// A `PostToolUse` formatter (Claude Code's `Write|Edit` matcher) rewrites the file the model
/// wrote, reading it by Claude Code's absolute `file_path`; Splice's own input is beside it.
#[test]
fn a_post_tool_use_formatter_changes_the_written_file() {
    let sandbox = Sandbox::new();
    let format = script(&sandbox, "format.py", FORMAT);
    let log = sandbox.dir.path().join("format.log");
    user_hooks(
        &sandbox,
        hook(
            "PostToolUse",
            "Write|Edit",
            &format!("{} {}", format.display(), log.display()),
        ),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "notes.txt", "content": "hello hooks\n"}),
        ),
        openai::answer(&["Written."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        &["--permission-mode", "accept-edits", "write notes"],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("HELLO HOOKS\n"));
    let logged = std::fs::read_to_string(&log).expect("the formatter ran");
    let input: serde_json::Value =
        serde_json::from_str(logged.lines().next().unwrap_or_default()).expect("its input");
    assert_eq!(input["tool_name"], "Write");
    assert_eq!(
        input["tool_input"]["file_path"],
        sandbox.root.join("notes.txt").display().to_string()
    );
    assert_eq!(input["splice_tool_name"], "write_file");
    assert_eq!(input["splice_tool_input"]["path"], "notes.txt");
}

/// A `PermissionRequest` hook answers the prompt the policy would show: headless ask mode
/// runs the command it allows.
#[test]
fn a_permission_request_hook_answers_the_prompt() {
    let sandbox = Sandbox::new();
    let allow = script(
        &sandbox,
        "allow.sh",
        "#!/bin/sh\ncat > /dev/null\n\
         echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PermissionRequest\",\"decision\":{\"behavior\":\"allow\"}}}'\n",
    );
    user_hooks(
        &sandbox,
        hook("PermissionRequest", "Bash", &allow.display().to_string()),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "run_command", json!({"command": "echo asked"})),
        openai::answer(&["Done."]),
    ]);
    let out = exec(&sandbox, &provider, &["run it"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.first("tool_result")["status"], "ok");
    let decision = out.first("permission_decision");
    assert_eq!(decision["permissionGranted"], true);
    assert_eq!(decision["decisionReason"], "allowed by a hook");
    assert_eq!(
        hook_events(&out, "PermissionRequest")[0]["decision"],
        "allow"
    );
}

/// An MCP tool fires the same hooks, matched by its `mcp__server__tool` name.
#[test]
fn an_mcp_tool_call_fires_its_hooks() {
    let sandbox = Sandbox::new();
    let deny = script(
        &sandbox,
        "deny_mcp.sh",
        "#!/bin/sh\ncat > /dev/null\necho 'no MCP echo today' >&2\nexit 2\n",
    );
    let server = crate::support::mcp::hostile("hostile", &[], &[]);
    let splice::mcp::ServerConfig::Stdio { command, args, .. } = &server.config else {
        panic!("a stdio server");
    };
    let config = json!({
        "mcpServers": {"hostile": {"command": command, "args": args}},
        "hooks": merged(&[hook("PreToolUse", "mcp__hostile__.*", &deny.display().to_string())]),
    });
    std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
        .expect("write config.json");
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "mcp__hostile__echo", json!({"text": "hi"})),
        openai::answer(&["Done."]),
    ]);
    let out = exec(&sandbox, &provider, &["--permission-mode", "auto", "echo"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "denied", "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("no MCP echo today")
    );
    let blocked = hook_events(&out, "PreToolUse");
    assert_eq!(blocked[0]["decision"], "block");
    assert_eq!(blocked[0]["id"], "call_1");
}

const GROW: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(data) + "\n")
if data["hook_event_name"] == "PreToolUse":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                      "updatedInput": {"text": data["tool_input"]["text"] * 2}}}))
"#;

/// A package tool fires its hooks under its dotted name; its input can be rewritten, and
/// `PostToolUse` sees its result.
#[test]
fn a_package_tool_call_fires_its_hooks() {
    let sandbox = Sandbox::new();
    let package = sandbox.dir.path().join("pkg");
    crate::support::package::write_package(
        &package,
        &crate::support::package::manifest(json!({}), &[("count", 10_000)]),
        &[(
            "count",
            "export default async function (input: { text: string }) {\n  \
             return { length: input.text.length };\n}\n",
        )],
    );
    let grow = script(&sandbox, "grow.py", GROW);
    let log = sandbox.dir.path().join("package_hooks.log");
    let command = format!("{} {}", grow.display(), log.display());
    user_hooks(
        &sandbox,
        merged(&[
            hook("PreToolUse", "test\\.hostile\\..*", &command),
            hook("PostToolUse", "test\\.hostile\\..*", &command),
        ]),
    );
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "test__hostile__count", json!({"text": "abc"})),
        openai::answer(&["Counted."]),
    ]);
    let mut run = crate::support::Sandbox::command(&sandbox, &provider.url);
    crate::support::stream_json(&mut run)
        .env("SPLICE_NODE", crate::support::node::node22())
        .args(["--tier", "light", "--permission-mode", "auto", "--package"])
        .arg(&package)
        .arg("count it");
    let out = crate::support::run(run, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok", "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("\"length\":6"),
        "{result}"
    );
    let seen: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .expect("the hooks ran")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a hook's input"))
        .collect();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0]["tool_name"], "test.hostile.count");
    assert_eq!(seen[1]["hook_event_name"], "PostToolUse");
    assert_eq!(seen[1]["tool_input"]["text"], "abcabc");
    assert!(
        seen[1]["tool_response"]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("\"length\":6")
    );
}

/// A subagent's tools fire the run's tool hooks too: a `PreToolUse` hook on `Read` blocks the
/// subagent's `read_file`, the subagent's next request carries the reason, and the `hook`
/// event names the subagent.
#[test]
fn a_subagents_tool_call_fires_the_runs_hooks() {
    let sandbox = Sandbox::new();
    sandbox.write("secret.txt", "SECRET-CONTENT\n");
    let guard = script(
        &sandbox,
        "no_read.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'reading is off for helpers' >&2\nexit 2\n",
    );
    user_hooks(
        &sandbox,
        hook("PreToolUse", "Read", &guard.display().to_string()),
    );
    let args = json!({"description": "read", "prompt": "SUBTASK: read secret.txt"});
    let provider = FakeProvider::start(vec![
        crate::support::fake_provider::Reply::when(
            "PARENT-REQUEST",
            openai::call_json("call_a", "agent", args),
        ),
        crate::support::fake_provider::Reply::when(
            "reading is off for helpers",
            openai::answer(&["SUB-ANSWER: could not read"]),
        ),
        crate::support::fake_provider::Reply::when(
            "SUBTASK",
            openai::call_json("call_s1", "read_file", json!({"path": "secret.txt"})),
        ),
        crate::support::fake_provider::Reply::when("SUB-ANSWER", openai::answer(&["Done."])),
    ]);
    let out = exec(&sandbox, &provider, &["PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    assert_eq!(provider.remaining(), 0, "{:?}", provider.requests());
    assert!(!out.stdout.contains("SECRET-CONTENT"), "{}", out.stdout);
    let blocks = hook_events(&out, "PreToolUse");
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    assert_eq!(blocks[0]["id"], "call_s1");
    assert_eq!(blocks[0]["agentId"], "agent_1", "{}", blocks[0]);
    let requests = provider.requests();
    assert!(
        requests
            .iter()
            .any(|r| sent_text(r).contains("reading is off for helpers"))
    );
}

/// The `agent` call fires its own `PreToolUse` hooks (Claude Code's `Task` matches it): a block
/// starts no subagent, and the model is told why.
#[test]
fn a_pre_tool_use_hook_on_task_keeps_a_subagent_from_starting() {
    let sandbox = Sandbox::new();
    let guard = script(
        &sandbox,
        "no_helpers.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'no helpers today' >&2\nexit 2\n",
    );
    user_hooks(
        &sandbox,
        hook("PreToolUse", "Task", &guard.display().to_string()),
    );
    let args = json!({"description": "look", "prompt": "SUBTASK: look around"});
    let provider = FakeProvider::start(vec![
        openai::call_json("call_a", "agent", args),
        openai::answer(&["Done alone."]),
    ]);
    let out = exec(&sandbox, &provider, &["PARENT-REQUEST"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stderr, out.stdout);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2, "a subagent started: {requests:?}");
    assert!(sent_text(&requests[1]).contains("no helpers today"));
    let results = out.of_type("tool_result");
    assert_eq!(results[0]["status"], "denied", "{}", results[0]);
    assert_eq!(hook_events(&out, "PreToolUse").len(), 1);
}
