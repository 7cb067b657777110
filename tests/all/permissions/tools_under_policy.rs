//! Real tools under the permission policy, observed through the real binary: events, files on
//! disk, and what went back to the model.

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Outcome, Sandbox, run, stream_json};

/// One scripted tool call, then a closing answer; returns the run and the provider.
fn one_call(
    sandbox: &Sandbox,
    name: &str,
    args: serde_json::Value,
    flags: &[&str],
) -> (Outcome, FakeProvider) {
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", name, &[&args.to_string()]),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(flags).arg("do it");
    let out = run(command, None);
    out.assert_well_formed();
    (out, provider)
}

/// What Splice sent back to the model as the result of call_1.
fn returned_to_model(provider: &FakeProvider) -> String {
    provider.requests()[1].body["messages"][3]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn headless_ask_mode_denies_a_write_and_changes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "original\n");
    let args = json!({"path": "a.txt", "content": "changed\n"});
    let (out, provider) = one_call(&sandbox, "write_file", args, &[]);
    assert_eq!(out.code, 0);
    let kinds: Vec<String> = out
        .types()
        .into_iter()
        .filter(|t| t.starts_with("tool") || t.starts_with("permission") || t == "checkpoint")
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_call",
            "permission_request",
            "permission_decision",
            "tool_result"
        ]
    );
    let request = out.first("permission_request");
    assert_eq!(request["id"], "call_1");
    assert_eq!(request["name"], "write_file");
    assert_eq!(request["action"], "prompt");
    assert_eq!(request["permission"], "prompt");
    assert_eq!(request["permissionMode"], "ask");
    assert_eq!(request["sideEffect"], "write");
    assert_eq!(request["reason"], "Creates or overwrites files.");
    let decision = out.first("permission_decision");
    assert_eq!(decision["permissionGranted"], false);
    assert_eq!(decision["action"], "deny");
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("original\n"));
    assert!(returned_to_model(&provider).starts_with("denied"));
}

#[test]
fn accept_edits_writes_with_a_checkpoint_first() {
    let sandbox = Sandbox::new();
    sandbox.write("src/lib.rs", "pub fn one() -> u8 { 1 }\n");
    let args = json!({"path": "src/lib.rs", "old_string": "{ 1 }", "new_string": "{ 2 }"});
    let (out, _) = one_call(
        &sandbox,
        "edit_file",
        args,
        &["--permission-mode", "accept-edits"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let kinds: Vec<String> = out
        .types()
        .into_iter()
        .filter(|t| t.starts_with("tool") || t.starts_with("permission") || t == "checkpoint")
        .collect();
    assert_eq!(kinds, ["tool_call", "checkpoint", "tool_result"]);
    assert_eq!(
        out.first("checkpoint")["checkpoint"],
        json!({"sequence": 1, "tool": "edit_file", "files": ["src/lib.rs"]})
    );
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok");
    assert_eq!(result["changedFiles"], json!(["src/lib.rs"]));
    assert_eq!(
        sandbox.read("src/lib.rs").as_deref(),
        Some("pub fn one() -> u8 { 2 }\n")
    );
}

#[test]
fn edit_with_missing_old_text_is_a_clear_tool_error() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    let args = json!({"path": "a.txt", "old_string": "beta", "new_string": "gamma"});
    let (out, provider) = one_call(&sandbox, "edit_file", args, &["--permission-mode", "auto"]);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "error");
    assert!(returned_to_model(&provider).contains("old_string was not found in a.txt"));
    assert!(out.of_type("checkpoint").is_empty());
    assert_eq!(sandbox.read("a.txt").as_deref(), Some("alpha\n"));
}

#[test]
fn read_only_mode_refuses_without_asking() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "touch made.txt"});
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--permission-mode", "read-only"],
    );
    assert!(out.of_type("permission_request").is_empty());
    let permission = out.first("permission");
    assert_eq!(permission["action"], "deny");
    assert_eq!(permission["permissionMode"], "read-only");
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert!(!sandbox.root.join("made.txt").exists());
}

#[test]
fn accept_edits_still_prompts_for_commands() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "touch made.txt"});
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--permission-mode", "accept-edits"],
    );
    assert_eq!(out.first("permission_request")["sideEffect"], "execute");
    assert_eq!(out.first("permission_request")["risk"], "low");
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert!(!sandbox.root.join("made.txt").exists());
}

#[test]
fn auto_mode_runs_commands_and_reports_the_exit_code() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "echo hello > made.txt; cat made.txt; exit 4"});
    let (out, provider) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--permission-mode", "auto"],
    );
    let result = out.first("tool_result");
    assert_eq!(result["status"], "error");
    assert_eq!(result["display"], json!({"exitCode": 4}));
    assert_eq!(result["output"], "exit code 4\nhello");
    assert_eq!(returned_to_model(&provider), "exit code 4\nhello");
    assert_eq!(sandbox.read("made.txt").as_deref(), Some("hello\n"));
}

#[test]
fn auto_mode_still_asks_for_high_risk_commands() {
    let sandbox = Sandbox::new();
    sandbox.write("keep/file.txt", "x");
    let args = json!({"command": "rm -rf keep"});
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--permission-mode", "auto"],
    );
    let request = out.first("permission_request");
    assert_eq!(request["risk"], "high");
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert!(sandbox.root.join("keep/file.txt").exists());
}

#[test]
fn allow_rule_runs_a_matching_command_in_ask_mode() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "echo ok > allowed.txt"});
    // The rule names the redirect: a rule without `>` does not cover writing a file.
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--allow", "run_command(echo * > *)"],
    );
    assert!(out.of_type("permission_request").is_empty());
    assert_eq!(out.first("tool_result")["status"], "ok");
    assert!(sandbox.root.join("allowed.txt").exists());
}

#[test]
fn deny_rule_beats_auto_mode() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "git status"});
    let flags = ["--permission-mode", "auto", "--deny", "run_command(git *)"];
    let (out, _) = one_call(&sandbox, "run_command", args, &flags);
    let permission = out.first("permission");
    assert_eq!(permission["reason"], "denied by rule `run_command(git *)`");
    assert_eq!(out.first("tool_result")["status"], "denied");
}

#[test]
fn rules_from_the_config_file_apply() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"permissionMode":"auto","deny":["write_file"]}"#,
    )
    .expect("write config.json");
    let args = json!({"path": "x.txt", "content": "x"});
    let (out, _) = one_call(&sandbox, "write_file", args, &[]);
    assert_eq!(
        out.first("permission")["reason"],
        "denied by rule `write_file`"
    );
    assert!(!sandbox.root.join("x.txt").exists());
}

#[test]
fn paths_outside_the_root_are_blocked() {
    let sandbox = Sandbox::new();
    let outside = sandbox.dir.path().join("outside.txt");
    let args = json!({"path": outside.display().to_string(), "content": "escape"});
    let (out, _) = one_call(&sandbox, "write_file", args, &["--permission-mode", "auto"]);
    let permission = out.first("permission");
    assert_eq!(permission["action"], "block");
    assert_eq!(permission["block"]["kind"], "outside_root");
    assert_eq!(permission["risk"], "high");
    assert_eq!(out.first("tool_result")["status"], "blocked");
    assert!(!outside.exists());

    let (out, _) = one_call(
        &sandbox,
        "read_file",
        json!({"path": "../outside.txt"}),
        &[],
    );
    assert_eq!(out.first("tool_result")["status"], "blocked");
}

#[test]
fn command_timeout_is_reported_as_timeout() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "sleep 5", "timeout_ms": 200});
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--permission-mode", "auto"],
    );
    let result = out.first("tool_result");
    assert_eq!(result["status"], "timeout");
    assert_eq!(result["output"], "timed out after 200 ms");
    assert!(
        result.get("display").is_none(),
        "no exit code, no null: {result}"
    );
}

#[test]
fn long_command_output_is_capped_and_flagged() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "seq 1 100000"});
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--permission-mode", "auto"],
    );
    let result = out.first("tool_result");
    assert_eq!(result["truncated"], true);
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.len() < 32 * 1024);
    assert!(output.ends_with("100000"), "the tail is kept");
}

#[test]
fn list_files_respects_gitignore() {
    let sandbox = Sandbox::new();
    sandbox.write(".gitignore", "build/\n");
    sandbox.write("build/out.o", "x");
    sandbox.write("src/a.rs", "x");
    let (out, _) = one_call(&sandbox, "list_files", json!({}), &[]);
    assert_eq!(out.first("tool_result")["output"], "src/a.rs");
}

#[test]
fn unknown_tool_and_bad_arguments_are_tool_errors() {
    let sandbox = Sandbox::new();
    let (out, provider) = one_call(&sandbox, "delete_everything", json!({}), &[]);
    assert_eq!(out.first("tool_call")["sideEffect"], "none");
    assert_eq!(out.first("tool_result")["status"], "error");
    assert_eq!(
        returned_to_model(&provider),
        "unknown tool `delete_everything`"
    );

    let (out, provider) = one_call(&sandbox, "read_file", json!({"file": "a"}), &[]);
    assert_eq!(out.first("tool_result")["status"], "error");
    assert!(returned_to_model(&provider).starts_with("invalid arguments"));
}

/// A directory outside the working root, the temporary directories and the tool caches, which
/// a confined command may not write to. Not under /tmp (writable in the sandbox), wherever the
/// checkout lives; removed when the test ends.
struct OutsideDir(std::path::PathBuf);

impl std::ops::Deref for OutsideDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for OutsideDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn outside_dir() -> OutsideDir {
    let dir = std::path::Path::new("/var/tmp").join(format!(
        "splice-outside-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("create dir");
    OutsideDir(dir)
}

#[test]
fn auto_mode_commands_cannot_write_outside_the_root() {
    let sandbox = Sandbox::new();
    let outside = outside_dir();
    // `touch` in another directory looks harmless to the risk heuristic: the sandbox, not the
    // heuristic, is what stops it.
    let command = format!(
        "echo in > inside.txt; cd {} && touch escape.txt; echo done",
        outside.display()
    );
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        json!({"command": command}),
        &["--permission-mode", "auto"],
    );
    let output = out.first("tool_result")["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(output.contains("Permission denied"), "{output}");
    assert!(output.starts_with("exit code 0\ndone"), "{output}");
    assert_eq!(sandbox.read("inside.txt").as_deref(), Some("in\n"));
    assert!(
        !outside.join("escape.txt").exists(),
        "a confined command wrote outside the root"
    );
}

#[test]
fn a_command_the_user_allowed_runs_unconfined() {
    let sandbox = Sandbox::new();
    let outside = outside_dir();
    let command = format!("echo out > {}/allowed.txt", outside.display());
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        json!({"command": command}),
        &["--allow", "run_command(echo out > *)"],
    );
    assert_eq!(out.first("tool_result")["status"], "ok");
    assert!(outside.join("allowed.txt").exists());
}

#[test]
fn a_dangling_symlink_cannot_carry_a_write_out_of_the_root() {
    let sandbox = Sandbox::new();
    let outside_parent = outside_dir();
    let outside = outside_parent.join("pwned.txt");
    std::os::unix::fs::symlink(&outside, sandbox.root.join("evil")).expect("link evil to outside");
    let args = json!({"path": "evil", "content": "escaped"});
    let (out, _) = one_call(
        &sandbox,
        "write_file",
        args,
        &["--permission-mode", "accept-edits"],
    );
    assert_eq!(out.first("tool_result")["status"], "blocked");
    assert_eq!(out.first("permission")["block"]["kind"], "outside_root");
    assert!(
        !outside.exists(),
        "the write followed the link out of the root"
    );
}

#[test]
fn an_allow_rule_does_not_let_a_chained_command_through() {
    let sandbox = Sandbox::new();
    let args = json!({"command": "echo ok; touch injected.txt"});
    let (out, _) = one_call(
        &sandbox,
        "run_command",
        args,
        &["--allow", "run_command(echo *)"],
    );
    assert_eq!(out.first("permission_request")["name"], "run_command");
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert!(!sandbox.root.join("injected.txt").exists());
}

#[test]
fn a_rewritten_git_file_does_not_widen_the_sandbox() {
    let sandbox = Sandbox::new();
    let outside = outside_dir();
    let escape = format!("cd {} && touch pwned; echo done", outside.display());
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "c1",
            "run_command",
            &[&json!({"command": "printf 'gitdir: /x/y\\n' > .git"}).to_string()],
        ),
        openai::tool_call(
            "c2",
            "run_command",
            &[&json!({"command": escape}).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "auto", "go"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(sandbox.read(".git").as_deref(), Some("gitdir: /x/y\n"));
    let results = out.of_type("tool_result");
    let second = results[1]["output"].as_str().unwrap_or_default();
    assert!(second.contains("Permission denied"), "{second}");
    assert!(
        !outside.join("pwned").exists(),
        "the sandbox let a write out"
    );
}

#[test]
fn a_symlink_swapped_in_during_writes_cannot_carry_them_out() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let sandbox = Sandbox::new();
    let outside = outside_dir();
    let target = outside.join("race.txt");
    // One response asking for many writes to the same name.
    let mut events = Vec::new();
    for i in 0..60u64 {
        events.push(openai::tool_start(i, &format!("w{i}"), "write_file"));
        events.push(openai::tool_args(
            i,
            &json!({"path": "r", "content": format!("RACE{i}\n")}).to_string(),
        ));
    }
    events.push(openai::finish("tool_calls"));
    events.push(openai::done());
    let provider = FakeProvider::start(vec![Reply::Sse(events), openai::answer(&["done"])]);
    // Meanwhile the name flips between nothing and a link out of the root.
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let (stop, link, target) = (stop.clone(), sandbox.root.join("r"), target.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = std::os::unix::fs::symlink(&target, &link);
                let _ = std::fs::remove_file(&link);
            }
        })
    };
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--permission-mode", "auto", "write"]);
    let out = run(command, None);
    stop.store(true, Ordering::Relaxed);
    let _ = flipper.join();
    out.assert_well_formed();
    assert_eq!(out.of_type("tool_result").len(), 60);
    assert!(
        !target.exists(),
        "a write followed a swapped-in link out of the root"
    );
}

#[test]
fn file_tools_do_not_write_inside_git() {
    let sandbox = Sandbox::new();
    sandbox.write(".git/config", "[core]\n");
    let args = json!({"path": ".git/config", "content": "[core]\n\tfsmonitor = \"id > /tmp/x\"\n"});
    let (out, _) = one_call(&sandbox, "write_file", args, &["--permission-mode", "auto"]);
    assert_eq!(out.first("tool_result")["status"], "blocked");
    assert_eq!(out.first("permission")["block"]["kind"], "protected_path");
    assert_eq!(sandbox.read(".git/config").as_deref(), Some("[core]\n"));
}
