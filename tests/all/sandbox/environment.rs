//! What a command's environment holds: no secret variables unless passed, nothing of Splice's own
//! environment or its shell's.

use crate::support;

use std::process::Command;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, outside_dir, stream_json};

use support::one_call::{one_call_with, result_of};
use support::process::{finish, spawn};

/// What `env` shows a command in a run with `flags`, with a secret-named variable set
/// (`MY_SERVICE_TOKEN=abc`: too short for the redactor, so the output shows it if it is there).
fn command_env(flags: &[&str], config: Option<&str>) -> String {
    let sandbox = Sandbox::new();
    if let Some(config) = config {
        std::fs::write(sandbox.dir.path().join("config.json"), config).expect("write config.json");
    }
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "run_command", &[r#"{"command":"env"}"#]),
        openai::answer(&["done"]),
    ]);
    let mut all = vec!["--allow", "run_command"];
    all.extend_from_slice(flags);
    let out = one_call_with(&sandbox, &provider, &all, |command| {
        command
            .env("MY_SERVICE_TOKEN", "abc")
            .env("PLAIN_SETTING", "visible");
    });
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    output
}

#[test]
fn commands_do_not_inherit_secret_variables() {
    let output = command_env(&[], None);
    assert!(output.contains("PLAIN_SETTING=visible"), "{output}");
    for name in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN"] {
        assert!(
            !output.contains(name),
            "{name} reached the command: {output}"
        );
    }
}

#[test]
fn pass_env_lets_a_named_variable_through() {
    for (flags, config) in [
        (&["--pass-env", "MY_SERVICE_TOKEN"][..], None),
        (&[][..], Some(r#"{"passEnv": ["MY_SERVICE_TOKEN"]}"#)),
    ] {
        let output = command_env(flags, config);
        assert!(output.contains("MY_SERVICE_TOKEN=abc"), "{output}");
        assert!(!output.contains("OPENAI_API_KEY"), "{output}");
    }
}

/// `command` rebuilt to run as `nobody` (the keys' protection is by user; root bypasses it),
/// with the sandbox opened up for that user.
fn as_nobody(sandbox: &Sandbox, command: &Command) -> Command {
    let status = Command::new("chmod")
        .args(["-R", "a+rwX"])
        .arg(sandbox.dir.path())
        .status()
        .expect("chmod");
    assert!(status.success());
    let mut setpriv = Command::new("setpriv");
    setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
    support::attack::through(setpriv, command)
}

#[test]
fn a_command_cannot_read_the_keys_from_splices_own_environment() {
    let sandbox = Sandbox::new();
    // The shell's parent is the supervisor, whose parent is Splice.
    let command = "cat /proc/$(cut -d' ' -f4 /proc/$PPID/stat)/environ | tr '\\0' '\\n'; echo end";
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": command }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut splice = sandbox.command(&provider.url);
    stream_json(&mut splice)
        .args(["--allow", "run_command"])
        .arg("do it");
    let is_root = rustix::process::getuid().is_root();
    let splice = if is_root {
        as_nobody(&sandbox, &splice)
    } else {
        splice
    };
    let out = finish(spawn(splice), "environ read");
    out.assert_well_formed();
    let (_, output) = result_of(&out);
    assert!(output.contains("end"), "{output}");
    assert!(!output.contains("OPENAI_API_KEY"), "{output}");
}

/// The secret a shell that started Splice holds (say an exported cloud token).
const SHELL_SECRET: &str = "shell-secret-0123456789abcdef";

/// Root keeps its capabilities under Landlock: a confined command running as root (a dev
/// container, CI) read `/proc/<splice>/environ` (the provider keys, though Splice is not
/// dumpable) and the environment of the shell that started Splice, and wrote them, reversed
/// past the redaction, into the repository. Run as any other user, Landlock refuses already.
#[test]
fn a_confined_command_cannot_read_the_environment_of_splice_or_its_shell() {
    let home = Sandbox::new_in(&outside_dir());
    let steal = "s=$(ps -o ppid= -p $PPID | tr -d ' '); u=$(ps -o ppid= -p \"$s\" | tr -d ' '); \
                 for p in \"$s\" \"$u\"; do tr '\\0' '\\n' < /proc/$p/environ | rev >> leak; done; \
                 echo read";
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": steal }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    // Splice started by a shell that stays its parent (it has more to do after).
    let splice = home.command(&provider.url);
    let mut command = Command::new("/bin/sh");
    command.env_clear();
    for (name, value) in splice.get_envs() {
        if let Some(value) = value {
            command.env(name, value);
        }
    }
    command
        .env("SPLICE", env!("CARGO_BIN_EXE_splice"))
        .env("SHELL_TOKEN", SHELL_SECRET)
        .args([
            "-c",
            "\"$SPLICE\" exec --output-format stream-json --permission-mode auto 'do it'; true",
        ])
        .current_dir(&home.root);
    let out = support::run(command, None);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let leak = home.read("leak").unwrap_or_default();
    let reversed = |s: &str| s.chars().rev().collect::<String>();
    assert!(
        !leak.contains(&reversed(support::TEST_KEY)),
        "the command read Splice's provider key: {leak}"
    );
    assert!(
        !leak.contains(&reversed(SHELL_SECRET)),
        "the command read the shell's environment: {leak}"
    );
    assert!(out.stdout.contains("Permission denied"), "{}", out.stdout);
}
