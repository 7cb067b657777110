//! Issue 7, second attack run: spellings of a denied command that the first round of deny-rule
//! analysis let through, and ways of crashing it. Each attack runs against the real binary with
//! the fake provider scripting the hostile calls; HOME is outside what a confined command may
//! write.

mod support;

use std::path::Path;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Outcome, Sandbox, git, run, stream_json};

/// A sandbox under the target directory rather than `/tmp`, which confined commands may write.
fn sandbox_outside_tmp() -> Sandbox {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap_or_else(|e| panic!("tempdir: {e}"));
    let base = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
    let root = base.join("repo");
    let data = base.join("data");
    std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(base.join("config.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
    Sandbox { dir, root, data }
}

/// A repository with one commit whose `origin` is an empty bare repository: a push that gets
/// past the rules lands there.
fn repository_with_remote(sandbox: &Sandbox, remote: &Path) {
    std::fs::create_dir_all(remote).unwrap_or_else(|e| panic!("{e}"));
    git(remote, &["init", "-q", "--bare"]);
    git(&sandbox.root, &["init", "-q", "-b", "main"]);
    git(&sandbox.root, &["config", "user.email", "t@example.com"]);
    git(&sandbox.root, &["config", "user.name", "t"]);
    sandbox.write("a.txt", "a\n");
    git(&sandbox.root, &["add", "a.txt"]);
    git(&sandbox.root, &["commit", "-q", "-m", "one"]);
    let url = remote.display().to_string();
    git(&sandbox.root, &["remote", "add", "origin", &url]);
}

/// Run one scripted `run_command` call per command, then a closing answer.
fn run_commands(sandbox: &Sandbox, commands: &[String], flags: &[&str]) -> Outcome {
    let mut replies: Vec<_> = commands
        .iter()
        .enumerate()
        .map(|(index, command)| {
            let args = json!({ "command": command }).to_string();
            openai::tool_call(&format!("call_{index}"), "run_command", &[&args])
        })
        .collect();
    replies.push(openai::answer(&["done"]));
    let provider = FakeProvider::start(replies);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(flags).arg("push it");
    let out = run(command, None);
    out.assert_well_formed();
    out
}

/// Every command was refused and none reached the remote.
fn assert_all_denied(out: &Outcome, commands: &[String], remote: &Path) {
    assert_eq!(
        git(remote, &["rev-list", "--all"]),
        "",
        "a push reached the remote"
    );
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), commands.len());
    for (command, result) in commands.iter().zip(&results) {
        assert_eq!(result["status"], "denied", "{command:?}: {result}");
    }
}

/// `run_command` runs `sh -c`, and sh is dash on Debian: bash syntax that the bash grammar
/// reads one way means something else there. `$'…'` is `$` and a quoted string, so the quotes
/// pair differently; `&>` is `&` then `>`; `[[` is a command, so `||` inside it is a list.
/// And in any shell `[ a || b ]` is two commands, whatever the grammar calls a test.
#[test]
fn bash_syntax_that_sh_reads_differently_does_not_hide_a_denied_command() {
    let sandbox = sandbox_outside_tmp();
    let remote_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let remote = remote_dir.path().join("remote.git");
    repository_with_remote(&sandbox, &remote);
    let dodges = [
        "echo $'\\' ; git push origin HEAD:refs/heads/r1 ; #'",
        "echo &>/dev/null git push origin HEAD:refs/heads/r2",
        "true &>>/dev/null git push origin HEAD:refs/heads/r3",
        "[[ a || sh -c 'git push origin HEAD:refs/heads/r4' ]]",
        "[ a || sh -c 'git push origin HEAD:refs/heads/r5' ]",
        "sh -c \"echo \\$'\\\\' ; git push origin HEAD:refs/heads/r6 ; #'\"",
    ]
    .map(String::from);
    let flags = [
        "--permission-mode",
        "auto",
        "--deny",
        "run_command(git push*)",
    ];
    let out = run_commands(&sandbox, &dodges, &flags);
    assert_all_denied(&out, &dodges, &remote);
}

/// An allow rule covers a line only when it covers every command in it: the same misreadings
/// must not let an approved `echo` carry an unconfined command.
#[test]
fn an_allow_rule_is_not_stretched_by_bash_syntax_that_sh_reads_differently() {
    let sandbox = sandbox_outside_tmp();
    let remote_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let remote = remote_dir.path().join("remote.git");
    repository_with_remote(&sandbox, &remote);
    let dodges = [
        "echo $'\\' ; git push origin HEAD:refs/heads/a1 ; #'",
        "echo &>/dev/null git push origin HEAD:refs/heads/a2",
    ]
    .map(String::from);
    let flags = ["--allow", "run_command(echo *)"];
    let out = run_commands(&sandbox, &dodges, &flags);
    assert_all_denied(&out, &dodges, &remote);
}

/// Thousands of nested substitutions once overflowed the stack of the recursive walk and
/// aborted the whole run. Now the line is refused and the run ends normally.
#[test]
fn deeply_nested_commands_are_refused_without_crashing() {
    let sandbox = sandbox_outside_tmp();
    let depth = 5000;
    let nested = format!("echo {}true{}", "$(".repeat(depth), ")".repeat(depth));
    let commands = [nested].map(String::from);
    let flags = [
        "--permission-mode",
        "auto",
        "--deny",
        "run_command(git push*)",
    ];
    let out = run_commands(&sandbox, &commands, &flags);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "denied", "{result}");
}
