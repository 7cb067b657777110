//! Helpers of the attack suites on command rules: a sandbox whose HOME no confined command may
//! write, a repository whose remote records any push that gets past the rules, and a run that
//! scripts one `run_command` call per command.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

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
    std::fs::create_dir_all(remote).expect("create remote");
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

/// The sandbox HOME's `~/.config/splice/` holding `config.json` and a saved registry login
/// (`credentials.json`, 0600, as `splice login` writes it) whose token is `token` and whose user
/// is `cred-marker-user`; the directory.
pub fn saved_login(sandbox: &Sandbox, token: &str) -> PathBuf {
    let config_dir = sandbox.dir.path().join(".config/splice");
    std::fs::create_dir_all(&config_dir).expect("create config_dir");
    std::fs::write(config_dir.join("config.json"), "{}").expect("write config.json");
    let credentials = config_dir.join("credentials.json");
    let saved = json!({"http://127.0.0.1:7878": {"token": token, "user": "cred-marker-user"}});
    std::fs::write(&credentials, saved.to_string()).expect("write credentials");
    std::fs::set_permissions(&credentials, std::fs::Permissions::from_mode(0o600))
        .expect("set the mode of credentials");
    config_dir
}

/// One `run_command` call with `args`, on the model's own authority (`auto` mode, so confined),
/// with the config in `config_dir`; then a closing answer.
pub fn auto_command(sandbox: &Sandbox, config_dir: &Path, args: &Value) -> Outcome {
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "run_command", &[&args.to_string()]),
        openai::answer(&["done"]),
    ]);
    let mut splice = sandbox.command(&provider.url);
    splice.env("SPLICE_CONFIG", config_dir.join("config.json"));
    stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("read it");
    let out = run(splice, None);
    out.assert_well_formed();
    out
}

/// `command` (program, arguments, environment, directory) run through `wrapper`, which is given
/// the program and its arguments after its own and is to become it: `setpriv …`, a script that
/// sets up descriptors first.
pub fn through(mut wrapper: Command, command: &Command) -> Command {
    wrapper
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear()
        .stdin(Stdio::null());
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapper.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapper.current_dir(dir);
    }
    wrapper
}
