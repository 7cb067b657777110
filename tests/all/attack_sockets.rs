//! Issue 19, Unix sockets: a confined command (`auto` mode) or a package tool that declares no
//! network connects to a Unix socket outside the sandbox (docker.sock, an ssh-agent, tmux,
//! D-Bus: code running outside it). Against the real binary: a listener outside the root, the
//! fake provider scripting the model's call, and the same call with
//! `sandbox.allowAllUnixSockets: true` as the control that does get through.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::attack::{run_commands, sandbox_outside_tmp};
use support::fake_provider::{FakeProvider, openai};
use support::node::node22;
use support::package::{manifest, write_package};
use support::sockets::{Listener, results};
use support::{Outcome, Sandbox, run_raw};

const ALLOW_ALL: &str = r#"{"sandbox":{"allowAllUnixSockets":true}}"#;

/// The model's command: connect to `target` (Python's spelling of the address) and send.
fn python_connect(target: &str) -> String {
    format!(
        "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect({target}); s.send(b'pwned')\""
    )
}

fn auto(sandbox: &Sandbox, commands: &[String]) -> Outcome {
    run_commands(sandbox, commands, &["--permission-mode", "auto"])
}

fn socket_path(sandbox: &Sandbox) -> PathBuf {
    // Beside the root, in a directory no confined command may write.
    sandbox.dir.path().join("agent.sock")
}

#[test]
fn a_confined_command_cannot_connect_to_a_unix_socket_outside_the_sandbox() {
    let sandbox = sandbox_outside_tmp();
    let path = socket_path(&sandbox);
    let listener = Listener::at_path(&path);
    let out = auto(
        &sandbox,
        &[python_connect(&format!("'{}'", path.display()))],
    );
    assert_eq!(listener.received(), None, "the command reached the socket");
    let results = results(&out);
    assert_eq!(results.len(), 1);
    let (status, output) = &results[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("Permission denied"), "{output}");
}

#[test]
fn a_confined_command_cannot_connect_to_an_abstract_socket() {
    let sandbox = sandbox_outside_tmp();
    let name = format!("splice-attack-{}", std::process::id());
    let listener = Listener::abstract_named(&name);
    let out = auto(&sandbox, &[python_connect(&format!("'\\0{name}'"))]);
    assert_eq!(listener.received(), None, "the command reached the socket");
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("Permission denied"), "{output}");
}

/// The control: with the block lifted in the config file, the same command gets through, so
/// the tests above fail when the sandbox does not hold.
#[test]
fn allow_all_unix_sockets_in_the_config_lets_the_command_connect() {
    let sandbox = sandbox_outside_tmp();
    std::fs::write(sandbox.dir.path().join("config.json"), ALLOW_ALL)
        .unwrap_or_else(|e| panic!("{e}"));
    let path = socket_path(&sandbox);
    let listener = Listener::at_path(&path);
    let out = auto(
        &sandbox,
        &[python_connect(&format!("'{}'", path.display()))],
    );
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "ok", "{output}");
    assert_eq!(listener.received().as_deref(), Some("pwned"));
}

/// A per-path list cannot be enforced by the filter: it is refused as a usage error (exit 2)
/// that names the setting that works, never read as "allow everything".
#[test]
fn a_per_path_socket_list_is_a_config_error() {
    let sandbox = sandbox_outside_tmp();
    let config = json!({"sandbox": {"allowUnixSockets": ["/var/run/docker.sock"]}});
    std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let path = socket_path(&sandbox);
    let listener = Listener::at_path(&path);
    let provider = FakeProvider::start(Vec::new());
    let mut command = sandbox.command(&provider.url);
    support::stream_json(&mut command)
        .args(["--permission-mode", "auto"])
        .arg("hello");
    let out = support::run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 2);
    let message = out.first("error")["message"].as_str().unwrap_or_default();
    assert!(message.contains("not enforced on Linux"), "{message}");
    assert!(message.contains("allowAllUnixSockets"), "{message}");
    assert_eq!(listener.received(), None);
}

/// What a sandboxed program does every day still works under the filter: connected pairs
/// (Python, Node's child processes), pipelines, git.
#[test]
fn ordinary_confined_commands_still_work() {
    let sandbox = sandbox_outside_tmp();
    sandbox.write("a.txt", "a\n");
    support::commit_all(&sandbox.root);
    let commands = [
        "python3 -c \"import socket; a,b=socket.socketpair(); a.send(b'pair-ok'); print(b.recv(7).decode())\"",
        "printf 'b\\npipe-ok\\n' | sort | tail -n 1",
        "git status --short && echo git-ok",
        "node -e \"process.stdout.write(require('child_process').execFileSync('echo', ['node-ok']))\"",
    ]
    .map(String::from);
    let out = auto(&sandbox, &commands);
    let results = results(&out);
    assert_eq!(results.len(), commands.len());
    for ((status, output), expected) in results
        .iter()
        .zip(["pair-ok", "pipe-ok", "git-ok", "node-ok"])
    {
        assert_eq!(status, "ok", "{expected}: {output}");
        assert!(output.contains(expected), "{expected}: {output}");
    }
}

/// A tool that declares no network and only reads (it runs without a prompt in every mode).
const CONNECT_TOOL: &str = r#"import net from 'node:net';
export default async function (input: { path: string }) {
  return await new Promise((resolve, reject) => {
    const socket = net.connect({ path: input.path });
    socket.on('connect', () => socket.end('pwned', () => resolve({ connected: true })));
    socket.on('error', (e) => reject(new Error(`NO_SOCKET: ${e.message}`)));
  });
}"#;

fn pkg_run(sandbox: &Sandbox, package: &Path, socket: &Path) -> Value {
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.env("SPLICE_NODE", node22());
    let input = json!({"path": socket}).to_string();
    command
        .args(["pkg", "run"])
        .arg(package)
        .args(["connect", &input, "--json"]);
    let outcome = run_raw(command, None);
    serde_json::from_str(outcome.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not one JSON line ({e}): {:?}; stderr: {}",
            outcome.stdout, outcome.stderr
        )
    })
}

#[test]
fn a_read_only_package_tool_cannot_connect_to_a_unix_socket() {
    let sandbox = sandbox_outside_tmp();
    let package = sandbox.dir.path().join("pkg");
    write_package(
        &package,
        &manifest(json!({"fs": {"read": ["data"]}}), &[("connect", 10_000)]),
        &[("connect", CONNECT_TOOL)],
    );
    let path = socket_path(&sandbox);
    let listener = Listener::at_path(&path);
    let refused = pkg_run(&sandbox, &package, &path);
    assert_eq!(refused["ok"], false, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("EACCES"), "{refused}");
    assert_eq!(listener.received(), None, "the tool reached the socket");
    // The control: lifted in the config file, the same tool connects and writes.
    std::fs::write(sandbox.dir.path().join("config.json"), ALLOW_ALL)
        .unwrap_or_else(|e| panic!("{e}"));
    let allowed = pkg_run(&sandbox, &package, &path);
    assert_eq!(allowed["ok"], true, "{allowed}");
    assert_eq!(listener.received().as_deref(), Some("pwned"));
}

/// Fail closed: where the filter cannot be installed, the command does not run (126, with the
/// reason) and the tool does not start (`PERMISSION_DENIED`); nothing reaches the socket.
#[test]
fn without_the_filter_nothing_runs() {
    let sandbox = sandbox_outside_tmp();
    let path = socket_path(&sandbox);
    let listener = Listener::at_path(&path);
    let marker = sandbox.dir.path().join("ran");
    let commands = [format!(
        "touch '{}'; {}",
        marker.display(),
        python_connect(&format!("'{}'", path.display()))
    )];
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({"command": commands[0]}).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let mut command = sandbox.command(&provider.url);
    command.env("SPLICE_TEST_NO_SECCOMP", "1");
    support::stream_json(&mut command)
        .args(["--permission-mode", "auto"])
        .arg("connect");
    let out = support::run(command, None);
    out.assert_well_formed();
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("exit code 126"), "{output}");
    assert!(output.contains("SPLICE_TEST_NO_SECCOMP"), "{output}");
    assert!(!marker.exists(), "the command ran without the filter");

    let package = sandbox.dir.path().join("pkg");
    write_package(
        &package,
        &manifest(json!({"fs": {"read": ["data"]}}), &[("connect", 10_000)]),
        &[("connect", CONNECT_TOOL)],
    );
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .env("SPLICE_NODE", node22())
        .env("SPLICE_TEST_NO_SECCOMP", "1")
        .args(["pkg", "run"])
        .arg(&package)
        .args(["connect", &json!({"path": path}).to_string(), "--json"]);
    let outcome = run_raw(command, None);
    let refused: Value = serde_json::from_str(outcome.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {:?} {}", outcome.stdout, outcome.stderr));
    assert_eq!(refused["error"]["code"], "PERMISSION_DENIED", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("Unix sockets"), "{refused}");
    assert_eq!(listener.received(), None);
}
