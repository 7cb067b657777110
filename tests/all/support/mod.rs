//! Shared helpers of the integration tests: a scratch repository, the real `splice` binary run
//! against the fake provider, and its stream-json output parsed line by line.
#![allow(dead_code)]

pub mod attack;
pub mod deps;
pub mod fake_provider;
pub mod fixing_run;
pub mod markers;
pub mod mcp;
pub mod moto;
pub mod node;
pub mod one_call;
pub mod package;
pub mod process;
pub mod sockets;
pub mod tmux;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use process::Start;
use serde_json::Value;

pub const TEST_KEY: &str = "sk-test-fake-provider-key-0123456789";

/// A temporary working root plus a private data dir and config path.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox::new_in(&std::env::temp_dir())
    }

    /// A sandbox under `parent`: under the build's own temporary directory, HOME is outside
    /// everything a confined command may write (`/tmp` is writable).
    pub fn new_in(parent: &Path) -> Sandbox {
        let dir = tempfile::tempdir_in(parent).expect("tempdir");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        let root = base.join("repo");
        let data = base.join("data");
        std::fs::create_dir_all(&root).expect("create root");
        // SPLICE_CONFIG must name a file that exists; tests that need settings overwrite it.
        std::fs::write(base.join("config.json"), "{}").expect("write config.json");
        // SPLICE_PRICING_FILE too; this one adds no prices to the built-in table.
        std::fs::write(
            base.join("pricing.json"),
            r#"{"source":"tests","asOf":"2026-01-01","models":{}}"#,
        )
        .expect("write pricing.json");
        Sandbox { dir, root, data }
    }

    pub fn write(&self, path: &str, content: &str) {
        let full = self.root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).expect("create parent");
        }
        std::fs::write(full, content).expect("write full");
    }

    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path)).ok()
    }

    /// `splice` with a clean environment pointed at `base_url` for both providers.
    pub fn command(&self, base_url: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_splice"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("SPLICE_DATA_DIR", &self.data)
            .env("SPLICE_CONFIG", self.dir.path().join("config.json"))
            .env("SPLICE_PRICING_FILE", self.dir.path().join("pricing.json"))
            .env("OPENAI_BASE_URL", base_url)
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("OPENAI_API_KEY", TEST_KEY)
            .env("ANTHROPIC_API_KEY", TEST_KEY)
            .env("GEMINI_BASE_URL", format!("{base_url}/v1beta/openai"))
            .env("GEMINI_API_KEY", TEST_KEY)
            .env("SPLICE_RETRY_BASE_MS", "5")
            .current_dir(&self.root)
            .stdin(Stdio::null());
        command
    }
}

pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub lines: Vec<Value>,
}

impl Outcome {
    pub fn types(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|l| l["type"].as_str().unwrap_or("?").to_string())
            .collect()
    }

    pub fn of_type(&self, kind: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == kind).collect()
    }

    pub fn first(&self, kind: &str) -> &Value {
        self.lines
            .iter()
            .find(|l| l["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} event in {:?}", self.types()))
    }

    pub fn text(&self) -> String {
        self.of_type("text")
            .iter()
            .filter_map(|l| l["delta"].as_str())
            .collect()
    }

    /// The decoded `final.text`.
    pub fn final_result(&self) -> Value {
        let text = self.first("final")["text"].as_str().unwrap_or_default();
        serde_json::from_str(text).expect("final.text is not JSON")
    }

    /// The invariants every stream must keep: each line is schema 2 JSON with type and runId,
    /// run_start first, run_end last and equal to the exit code.
    pub fn assert_well_formed(&self) {
        assert!(!self.lines.is_empty(), "no output; stderr: {}", self.stderr);
        let run_id = self.lines[0]["runId"].clone();
        for line in &self.lines {
            assert_eq!(line["schemaVersion"], 2, "{line}");
            assert!(line["type"].is_string(), "{line}");
            assert_eq!(line["runId"], run_id, "{line}");
        }
        for line in &self.lines {
            assert_no_null(line, "$");
        }
        // Begin/end pairs: every executed call has exactly one result.
        for call in self.of_type("tool_call") {
            let results = self
                .of_type("tool_result")
                .iter()
                .filter(|r| r["id"] == call["id"])
                .count();
            assert_eq!(results, 1, "tool_call {} has {results} results", call["id"]);
        }
        assert_eq!(self.lines[0]["type"], "run_start");
        let last = &self.lines[self.lines.len() - 1];
        assert_eq!(last["type"], "run_end", "last line: {last}");
        assert_eq!(
            last["exitCode"], self.code,
            "run_end.exitCode vs process exit code"
        );
        assert_eq!(self.types().iter().filter(|t| *t == "run_start").count(), 1);
        assert_eq!(self.types().iter().filter(|t| *t == "run_end").count(), 1);
    }
}

/// Optional fields are omitted, never null (the model's own tool arguments aside).
fn assert_no_null(value: &Value, at: &str) {
    match value {
        Value::Null => panic!("null at {at}"),
        Value::Object(map) => {
            for (key, inner) in map {
                if key != "args" {
                    assert_no_null(inner, &format!("{at}.{key}"));
                }
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                assert_no_null(inner, &format!("{at}[{i}]"));
            }
        }
        _ => {}
    }
}

/// Make `root` a git repository on `main` with everything in it committed, under an identity
/// of its own (so it works where git has none).
/// `splice registry …` becomes `splice-registry` from beside `splice`: the binary of another
/// package (crates/splice-registry), which `cargo test` of this one does not build.
pub fn need_registry_server() {
    let server = Path::new(env!("CARGO_BIN_EXE_splice")).with_file_name("splice-registry");
    assert!(
        server.is_file(),
        "there is no {}: build the registry server first, `cargo build --locked -p splice-registry` \
         (scripts/test does)",
        server.display()
    );
}

pub fn commit_all(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["config", "user.email", "test@example.com"]);
    git(root, &["config", "user.name", "Test"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "initial"]);
}

/// Whether `pid` is running or sleeping; a zombie or a missing process is not.
pub fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X'))
}

/// Wait (bounded) for `pid` to be gone; kill it either way, so a failure leaves nothing
/// running. Whether it was gone by itself.
pub fn ended(pid: i32) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while alive(pid) && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let outlived = alive(pid);
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    !outlived
}

/// Run the command with `stdin` and parse stdout as JSON Lines.
pub fn run(command: Command, stdin: Option<&str>) -> Outcome {
    parse(spawn_and_wait(command, stdin))
}

/// Run the command without parsing stdout (text output).
pub fn run_raw(command: Command, stdin: Option<&str>) -> Outcome {
    let output = spawn_and_wait(command, stdin);
    let outcome = Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        lines: Vec::new(),
    };
    explain_missing_landlock(&outcome);
    outcome
}

/// On a kernel without Landlock, Splice refuses to run commands unconfined, and a test that
/// needs a command to run would fail on some later assertion; it says why instead.
fn explain_missing_landlock(outcome: &Outcome) {
    // The refusal a test provokes on purpose (SPLICE_TEST_NO_LANDLOCK) words it differently.
    const KERNEL_LACKS: &str = "this kernel lacks Landlock";
    if outcome.stdout.contains(KERNEL_LACKS) || outcome.stderr.contains(KERNEL_LACKS) {
        panic!(
            "this test runs commands confined by Landlock, which this machine's kernel cannot \
             enforce (Splice needs Landlock ABI 3, Linux 6.2+, and refuses to run commands \
             unconfined); run the tests where Landlock is enabled.\nstdout: {}\nstderr: {}",
            outcome.stdout, outcome.stderr
        );
    }
}

fn spawn_and_wait(mut command: Command, stdin: Option<&str>) -> std::process::Output {
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.start().expect("spawn splice");
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A child that exits before reading all input closes the pipe; that is its answer.
        let _ = pipe.write_all(input.as_bytes());
    }
    child.wait_with_output().expect("wait")
}

/// Start the command and send it `signal` (TERM, INT, HUP) as soon as `ready` holds for the
/// stream-json lines it has written so far (checked as each line arrives, and every 10 ms for
/// readiness seen elsewhere, such as a file a command creates); never after a fixed pause.
/// Then collect everything it writes until it exits.
pub fn run_and_signal(
    mut command: Command,
    signal: &str,
    ready: impl Fn(&[Value]) -> bool,
) -> Outcome {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.start().expect("spawn splice");
    let stdout = child.stdout.take().expect("no stdout");
    let mut stderr = child.stderr.take().expect("no stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let (sender, received) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut raw = String::new();
    let mut lines = Vec::new();
    let mut keep = |line: String, lines: &mut Vec<Value>| {
        if !line.trim().is_empty() {
            lines.push(
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
            );
        }
        raw.push_str(&line);
        raw.push('\n');
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready(&lines) {
        match received.recv_timeout(std::time::Duration::from_millis(10)) {
            Ok(line) => keep(line, &mut lines),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                panic!("the run ended before it was ready for the signal: {lines:?}")
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the run never got ready for the signal: {lines:?}"
        );
    }
    let status = Command::new("kill")
        .args([format!("-{signal}"), child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    // A liveness bound: a run that does not end after the signal is killed and fails the test.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        match received.recv_timeout(std::time::Duration::from_millis(10)) {
            Ok(line) => keep(line, &mut lines),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("the run did not end after SIG{signal}: {lines:?}");
                }
            }
        }
    }
    let code = child.wait().expect("wait").code().unwrap_or(-1);
    let outcome = Outcome {
        code,
        stdout: raw,
        stderr: errors.join().unwrap_or_default(),
        lines,
    };
    explain_missing_landlock(&outcome);
    outcome
}

/// Whether a stream-json event of type `kind` has been written.
pub fn wrote(lines: &[Value], kind: &str) -> bool {
    lines.iter().any(|line| line["type"] == kind)
}

/// Parse a finished process's stdout as JSON Lines.
pub fn parse(output: std::process::Output) -> Outcome {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let lines = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let outcome = Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout,
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        lines,
    };
    explain_missing_landlock(&outcome);
    outcome
}

pub fn stream_json(command: &mut Command) -> &mut Command {
    command.args(["exec", "--output-format", "stream-json"])
}

/// A HOME beside the sandbox's repository rather than around it (created): with HOME under
/// `/tmp`, confined commands see HOME read-only, so a test whose command stands in for someone
/// else (changing the source, leaving a mark in the sandbox) runs with this one.
pub fn home_beside(sandbox: &Sandbox) -> PathBuf {
    let home = sandbox.dir.path().join("home");
    std::fs::create_dir_all(&home).expect("create home");
    home
}

/// A directory no confined command may write, wherever the checkout is (a clone under `/tmp`
/// has its build directory in the sandbox's writable set): attack tests put their HOME and
/// their markers here, so a marker can only come from an unconfined process.
pub fn outside_dir() -> PathBuf {
    let base = PathBuf::from("/var/tmp/splice-tests");
    std::fs::create_dir_all(&base).unwrap_or_else(|e| panic!("{}: {e}", base.display()));
    let base = base.canonicalize().expect("canonicalize base");
    let temp = std::env::temp_dir();
    assert!(
        !base.starts_with("/tmp") && !base.starts_with(&temp),
        "{} is writable by confined commands (TMPDIR={}); attack tests need a place that is not",
        base.display(),
        temp.display()
    );
    base
}

/// Run git in `root`; a failure fails the test with git's message.
pub fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .expect("git");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn exists(root: &Path, path: &str) -> bool {
    root.join(path).exists()
}

pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(status.success());
}

/// `splice exec` in stream-json with `args` against `provider`; the stream must be well formed.
pub fn exec_json(
    sandbox: &Sandbox,
    provider: &fake_provider::FakeProvider,
    args: &[&str],
) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(args);
    let out = run(command, None);
    out.assert_well_formed();
    out
}

/// `splice exec --output-format text` with `args` against `provider`.
pub fn exec_text(
    sandbox: &Sandbox,
    provider: &fake_provider::FakeProvider,
    args: &[&str],
) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    command.args(["exec", "--output-format", "text"]).args(args);
    run_raw(command, None)
}

/// The processes whose command line holds `mark` (`pid: command line`).
pub fn processes_with(mark: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(mark) {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

/// The worktrees of the sandbox's runs still on disk, and the checkpoints of writes made in them.
pub fn worktrees_left(sandbox: &Sandbox) -> Vec<PathBuf> {
    let worktrees = std::fs::read_dir(sandbox.data.join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir());
    // The checkpoints of writes made inside a worktree go with it.
    let their_checkpoints = std::fs::read_dir(sandbox.data.join("checkpoints"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with("_worktree"));
    worktrees
        .chain(their_checkpoints)
        .map(|e| e.path())
        .collect()
}
