//! The lean `splice` binary: the registry server is `splice-registry` beside it (started by
//! `splice registry …`, missing with a way to install it), and commands are supervised by the
//! small launcher binary beside it (by `splice` itself when that is missing).

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::process::Start;
use support::{Outcome, Sandbox, run, run_raw, stream_json};

const INSTALL: &str = "cargo install --locked --path crates/splice-registry";

/// `splice` copied alone into a directory of its own under the sandbox.
fn splice_alone(sandbox: &Sandbox) -> PathBuf {
    let alone = sandbox.dir.path().join("bin-alone");
    std::fs::create_dir_all(&alone).expect("create alone");
    let splice = alone.join("splice");
    std::fs::copy(env!("CARGO_BIN_EXE_splice"), &splice).expect("copy splice beside no launcher");
    splice
}

/// The sandbox's command with another `splice` binary.
fn with_binary(template: &Command, splice: &Path) -> Command {
    let mut command = Command::new(splice);
    command.env_clear().stdin(Stdio::null());
    for (key, value) in template.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    if let Some(dir) = template.get_current_dir() {
        command.current_dir(dir);
    }
    command
}

/// One confined command (auto mode) that prints its parent's command line: the supervisor's.
fn supervisor_of_a_command(sandbox: &Sandbox, splice: Option<&Path>) -> String {
    let args = json!({"command": "tr '\\0' ' ' < /proc/$PPID/cmdline"});
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "run_command", &[&args.to_string()]),
        openai::answer(&["done"]),
    ]);
    let template = sandbox.command(&provider.url);
    let mut command = match splice {
        Some(splice) => with_binary(&template, splice),
        None => template,
    };
    stream_json(&mut command).args(["--permission-mode", "auto", "go"]);
    let out: Outcome = run(command, None);
    out.assert_well_formed();
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok", "{result}");
    // After the `exit code 0` line.
    let output = result["output"].as_str().unwrap_or_default();
    output
        .lines()
        .find(|line| line.contains("__sandbox-exec"))
        .unwrap_or(output)
        .to_string()
}

#[test]
fn commands_are_supervised_by_the_small_launcher_beside_splice() {
    let sandbox = Sandbox::new();
    let supervisor = supervisor_of_a_command(&sandbox, None);
    let launcher = Path::new(env!("CARGO_BIN_EXE_splice")).with_file_name("splice-pkg-launch");
    assert!(
        supervisor.starts_with(&format!("{} __sandbox-exec ", launcher.display())),
        "{supervisor}"
    );
}

#[test]
fn splice_without_the_launcher_beside_it_supervises_commands_itself() {
    let sandbox = Sandbox::new();
    let splice = splice_alone(&sandbox);
    let supervisor = supervisor_of_a_command(&sandbox, Some(&splice));
    assert!(
        supervisor.starts_with(&format!("{} __sandbox-exec ", splice.display())),
        "{supervisor}"
    );
}

#[test]
fn splice_registry_without_the_server_beside_it_says_how_to_install_it() {
    let sandbox = Sandbox::new();
    let splice = splice_alone(&sandbox);
    let data = sandbox.dir.path().join("registry");
    let mut add = Command::new(&splice);
    add.args(["registry", "user", "add", "alice", "--namespace", "acme"])
        .args(["--no-password", "--data"])
        .arg(&data);
    let out = run_raw(add, None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("not installed"), "{}", out.stderr);
    assert!(out.stderr.contains(INSTALL), "{}", out.stderr);
    assert!(!data.exists(), "nothing was done");
    // Its arguments are still `splice`'s to check: help, and usage errors with exit 2.
    let mut help = Command::new(&splice);
    help.args(["registry", "serve", "--help"]);
    let out = run_raw(help, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("Usage: splice registry serve"),
        "{}",
        out.stdout
    );
    let mut bad = Command::new(&splice);
    bad.args(["registry", "serve", "--no-such-flag"]);
    assert_eq!(run_raw(bad, None).code, 2);
}

#[test]
fn splice_registry_serve_becomes_the_server_and_a_sigterm_at_once_stops_it_cleanly() {
    support::need_registry_server();
    let sandbox = Sandbox::new();
    let data = sandbox.dir.path().join("registry");
    let mut child = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args(["registry", "serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .start()
        .expect("start splice");
    let stdout = child.stdout.take().expect("no stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("read a line from stdout");
    assert!(first.starts_with("http://127.0.0.1:"), "{first}");
    // The process `splice` started is the server itself (an exec, not a child of it).
    let cmdline =
        std::fs::read(format!("/proc/{}/cmdline", child.id())).expect("read /proc/<>/cmdline");
    let server = Path::new(env!("CARGO_BIN_EXE_splice")).with_file_name("splice-registry");
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    assert_eq!(argv0, server.as_os_str().as_encoded_bytes());
    // As soon as the URL is out, before any request: the handlers are already in place.
    let pid = i32::try_from(child.id()).expect("child as i32");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap_or_else(|| panic!("pid {pid}")),
        rustix::process::Signal::TERM,
    )
    .expect("signal rustix");
    let status = child.wait().expect("wait for child");
    assert_eq!(status.code(), Some(0));
}
