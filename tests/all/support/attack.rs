//! Helpers of the attack suites on command rules: a sandbox whose HOME no confined command may
//! write, a repository whose remote records any push that gets past the rules, and a run that
//! scripts one `run_command` call per command.

use std::path::Path;

use serde_json::json;

use super::fake_provider::{FakeProvider, openai};
use super::{Outcome, Sandbox, git, run, stream_json};

/// A sandbox whose HOME is outside everything a confined command may write (`/tmp` is
/// writable), so only the remote below is reachable.
pub fn sandbox_outside_tmp() -> Sandbox {
    Sandbox::new_in(&super::outside_dir())
}

/// A repository with one commit whose `origin` is an empty bare repository in `/tmp`, where a
/// confined command can write: a push that gets past the rules lands there.
pub fn repository_with_remote(sandbox: &Sandbox, remote: &Path) {
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
pub fn run_commands(sandbox: &Sandbox, commands: &[String], flags: &[&str]) -> Outcome {
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
