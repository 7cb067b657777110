//! Issue 19, Unix sockets: a confined command (`auto` mode) or a package tool that declares no
//! network connects to a Unix socket outside the sandbox (docker.sock, an ssh-agent, tmux,
//! D-Bus: code running outside it). Against the real binary: a listener outside the root, the
//! fake provider scripting the model's call, and the same call with
//! `sandbox.allowAllUnixSockets: true` as the control that does get through.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::attack::{run_commands, sandbox_outside_tmp, through};
use support::fake_provider::{FakeProvider, openai};
use support::node::node22;
use support::package::{manifest, write_package};
use support::process::{Running, Start};
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
    std::fs::write(sandbox.dir.path().join("config.json"), ALLOW_ALL).expect("write config.json");
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
        .expect("write config.json");
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
    std::fs::write(sandbox.dir.path().join("config.json"), ALLOW_ALL).expect("write config.json");
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

// Issue 19, Unix sockets, second round: ways around the seccomp filter that refuses creating
// Unix sockets. A descriptor Splice inherited from whatever started it (an IDE, a terminal, a
// script that leaks its sockets) needs no `socket()` call: a confined command or a package
// tool writes to it and reaches the program at the other end. Other families reach programs
// outside the sandbox too: a netlink `NETLINK_USERSOCK` message goes to any process that
// bound one, and `AF_VSOCK` goes to the virtual machine's host (Firecracker maps it to a Unix
// socket there) and ignores the network namespace; `sandbox.allowAllUnixSockets` lifted those
// too. One attack that held is kept: an i386 system call from a 64-bit process. Against the
// real binary, with the fake provider scripting the model's calls.

/// The descriptor number the inherited socket has in Splice (and, unless Splice closes it,
/// in everything Splice starts).
const LEAKED_FD: i32 = 7;

/// Connect to `socket`, put the connection on fd `fd` without close-on-exec, and
/// become `command` (with its environment and directory): Splice started by a program that
/// leaks a connected Unix socket. Done in a wrapper so the descriptor leaks into this one
/// process, not into what the other tests start meanwhile.
fn with_leaked_socket(command: &Command, socket: &Path, fd: i32) -> Command {
    const WRAPPER: &str = "import os, socket, sys\n\
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n\
        fd = int(sys.argv[2])\n\
        if s.fileno() != fd: os.dup2(s.fileno(), fd)\n\
        os.set_inheritable(fd, True)\n\
        os.execv(sys.argv[3], sys.argv[3:])\n";
    let mut python = Command::new("python3");
    python
        .arg("-c")
        .arg(WRAPPER)
        .arg(socket)
        .arg(fd.to_string());
    through(python, command)
}

#[test]
fn a_confined_command_cannot_use_a_unix_socket_splice_inherited() {
    let sandbox = sandbox_outside_tmp();
    let path = sandbox.dir.path().join("ide.sock");
    let listener = Listener::at_path(&path);
    let provider = support::fake_provider::FakeProvider::start(vec![
        support::fake_provider::openai::tool_call(
            "call_1",
            "run_command",
            &[
                &json!({"command": format!("ls /proc/self/fd; printf pwned >&{LEAKED_FD}")})
                    .to_string(),
            ],
        ),
        support::fake_provider::openai::answer(&["done"]),
    ]);
    let mut splice = sandbox.command(&provider.url);
    support::stream_json(&mut splice)
        .args(["--permission-mode", "auto"])
        .arg("use it");
    let out = support::run(with_leaked_socket(&splice, &path, LEAKED_FD), None);
    out.assert_well_formed();
    assert_eq!(
        listener.received().as_deref(),
        Some(""),
        "the command wrote to the inherited socket"
    );
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("Bad file descriptor"), "{output}");
    // Only the command's own standard streams (and the listing's directory) are open.
    let listed: Vec<&str> = output
        .lines()
        .filter(|l| l.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(listed, ["0", "1", "2", "3"], "{output}");
}

/// A tool that writes to an inherited descriptor, which Node wraps without `socket()` and
/// without the permission model asking.
const LEAK_TOOL: &str = r#"import net from 'node:net';
export default async function (input: { fd: number }) {
  return await new Promise((resolve, reject) => {
    try {
      const socket = new net.Socket({ fd: input.fd, readable: false, writable: true });
      socket.on('error', (e) => reject(new Error(`NO_SOCKET: ${e.message}`)));
      socket.end('pwned', () => resolve({ wrote: true }));
    } catch (e) {
      reject(new Error(`NO_SOCKET: ${(e as Error).message}`));
    }
  });
}"#;

#[test]
fn a_package_tool_cannot_use_a_unix_socket_splice_inherited() {
    let sandbox = sandbox_outside_tmp();
    let package = sandbox.dir.path().join("pkg");
    write_package(
        &package,
        &manifest(json!({"fs": {"read": ["data"]}}), &[("leak", 10_000)]),
        &[("leak", LEAK_TOOL)],
    );
    let path = sandbox.dir.path().join("ide.sock");
    let listener = Listener::at_path(&path);
    let input = json!({"fd": LEAKED_FD}).to_string();
    let result = run_tool_with_socket(&sandbox, &package, &["leak", &input], &path, LEAKED_FD);
    // Whatever the tool then wrapped (the number may be one of Node's own by now), the socket
    // got nothing.
    assert_eq!(
        listener.received().as_deref(),
        Some(""),
        "the tool wrote to the inherited socket: {result}"
    );
}

/// `splice pkg run PACKAGE TOOL INPUT --json` started with the socket at `socket` open on
/// `fd`: the result line it printed.
fn run_tool_with_socket(
    sandbox: &Sandbox,
    package: &Path,
    tool_and_input: &[&str],
    socket: &Path,
    fd: i32,
) -> Value {
    let mut splice = sandbox.command("http://127.0.0.1:9");
    splice
        .env("SPLICE_NODE", node22())
        .args(["pkg", "run"])
        .arg(package)
        .args(tool_and_input)
        .arg("--json");
    let outcome = run_raw(with_leaked_socket(&splice, socket, fd), None);
    serde_json::from_str(outcome.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {:?}; stderr: {}", outcome.stdout, outcome.stderr))
}

/// A tool that only answers.
const QUIET_TOOL: &str = r#"export default async function () {
  return { answered: true };
}"#;

/// Splice started with fd 3 open (the number the launcher gives the result channel): the tool
/// still runs, and what was on fd 3 does not reach it.
#[test]
fn a_package_tool_runs_when_splice_inherited_fd_3() {
    let sandbox = sandbox_outside_tmp();
    let package = sandbox.dir.path().join("pkg");
    write_package(
        &package,
        &manifest(json!({}), &[("quiet", 10_000)]),
        &[("quiet", QUIET_TOOL)],
    );
    let path = sandbox.dir.path().join("ide.sock");
    let listener = Listener::at_path(&path);
    let result = run_tool_with_socket(&sandbox, &package, &["quiet", "{}"], &path, 3);
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["output"]["answered"], true, "{result}");
    assert_eq!(listener.received().as_deref(), Some(""));
}

/// A process outside the sandbox bound to a `NETLINK_USERSOCK` port (the test's helper): what
/// a confined command sent it, checked once the run is over.
struct NetlinkListener(Running, BufReader<std::process::ChildStdout>);

impl NetlinkListener {
    const SCRIPT: &str = "import socket, sys\n\
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2); s.bind((0, 0))\n\
        print(s.getsockname()[0], flush=True)\n\
        sys.stdin.readline(); s.setblocking(False)\n\
        try: print(s.recv(100)[16:].decode(), flush=True)\n\
        except BlockingIOError: print('nothing', flush=True)\n";

    fn start() -> (NetlinkListener, u32) {
        let mut child = Command::new("python3")
            .args(["-c", Self::SCRIPT])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .start()
            .expect("python3");
        let stdout = child.stdout.take().expect("no stdout");
        let mut reader = BufReader::new(stdout);
        let mut port = String::new();
        reader
            .read_line(&mut port)
            .expect("read a line from reader");
        let port = port
            .trim()
            .parse()
            .unwrap_or_else(|e| panic!("port {port:?}: {e}"));
        (NetlinkListener(child, reader), port)
    }

    fn received(mut self) -> String {
        let mut stdin = self.0.stdin.take().expect("no stdin");
        stdin.write_all(b"check\n").expect("write to stdin");
        let mut line = String::new();
        self.1
            .read_line(&mut line)
            .expect("read a line from self.1");
        let _ = self.0.wait();
        line.trim().to_string()
    }
}

#[test]
fn a_confined_command_cannot_reach_other_programs_through_other_socket_families() {
    let sandbox = sandbox_outside_tmp();
    let (listener, port) = NetlinkListener::start();
    let send = format!(
        "python3 -c \"import socket, struct; s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 2); \
         m = b'pwned'; s.sendto(struct.pack('=LHHLL', 16 + len(m), 0, 0, 0, 0) + m, ({port}, 0))\""
    );
    let vsock = "python3 -c \"import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\"";
    // What ordinary tools use keeps working: the network, and netlink's routing family
    // (`getifaddrs`, `ip`).
    let ordinary = "python3 -c \"import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); \
         socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print('ordinary-ok')\"";
    let out = auto(&sandbox, &[send, vsock.to_string(), ordinary.to_string()]);
    assert_eq!(
        listener.received(),
        "nothing",
        "the command reached the netlink listener"
    );
    let results = results(&out);
    assert_eq!(results.len(), 3);
    for (status, output) in &results[..2] {
        assert_eq!(status, "error", "{output}");
        assert!(output.contains("Permission denied"), "{output}");
    }
    let (status, output) = &results[2];
    assert_eq!(status, "ok", "{output}");
    assert!(output.contains("ordinary-ok"), "{output}");
}

/// `sandbox.allowAllUnixSockets` lifts the block on Unix sockets, not on the other families:
/// the VM's host stays out of reach while the Unix socket the person allowed is reachable.
#[test]
fn allowing_unix_sockets_does_not_open_the_other_families() {
    let sandbox = sandbox_outside_tmp();
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"sandbox":{"allowAllUnixSockets":true}}"#,
    )
    .expect("write config.json");
    let path = sandbox.dir.path().join("agent.sock");
    let listener = Listener::at_path(&path);
    let unix = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.send(b'allowed')\"",
        path.display()
    );
    let vsock = "python3 -c \"import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\"";
    let out = auto(&sandbox, &[unix, vsock.to_string()]);
    assert_eq!(listener.received().as_deref(), Some("allowed"));
    let results = results(&out);
    assert_eq!(results[0].0, "ok", "{}", results[0].1);
    let (status, output) = &results[1];
    assert_eq!(status, "error", "{output}");
    assert!(output.contains("Permission denied"), "{output}");
}

/// Machine code run through Python's `ctypes`: `socket(AF_UNIX, SOCK_STREAM, 0)` made as an
/// i386 system call (`int 0x80`, number 359), which a 64-bit process may make and a filter
/// that checks only x86-64 numbers would let through. Prints the result (an fd, or -errno).
const I386_SOCKET: &str = r#"import ctypes, mmap
code = bytes([0x53, 0xb8]) + (359).to_bytes(4, 'little') + bytes([0xbb, 1, 0, 0, 0, 0xb9, 1, 0, 0, 0, 0x31, 0xd2, 0xcd, 0x80, 0x48, 0x63, 0xc0, 0x5b, 0xc3])
m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
call = ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))
print('i386-socket', call())
"#;

/// Held: the filter refuses the other architecture's entry, on the real kernel (the control,
/// run here unconfined, gets a socket).
#[cfg(target_arch = "x86_64")]
#[test]
fn an_i386_system_call_does_not_make_a_unix_socket() {
    let sandbox = sandbox_outside_tmp();
    sandbox.write("i386.py", I386_SOCKET);
    let control = Command::new("python3")
        .arg(sandbox.root.join("i386.py"))
        .output()
        .expect("python3");
    let control = String::from_utf8_lossy(&control.stdout).into_owned();
    let made: i64 = control
        .trim()
        .trim_start_matches("i386-socket ")
        .parse()
        .unwrap_or_else(|e| panic!("{control:?}: {e}"));
    assert!(
        made >= 0,
        "this kernel runs no i386 system calls: {control}"
    );
    let out = auto(&sandbox, &["python3 i386.py".to_string()]);
    let (status, output) = &results(&out)[0];
    assert_eq!(status, "ok", "{output}");
    // -EACCES: the filter's answer.
    assert!(output.contains("i386-socket -13"), "{output}");
}
