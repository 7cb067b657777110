//! Attacks on the processes and files Splice handles, against the real binary: a fake provider
//! scripts the hostile tool calls, HOME lies outside the root. Each test reproduces an attack
//! from issue 7 (items 5 and 6, the model's environment, the sandbox failing closed) and shows
//! it harmless.

use crate::support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Outcome, Sandbox, parse, stream_json};

/// Longest a run in these tests may take before it counts as hung (a liveness bound, not a
/// speed check: every run here finishes in well under a second when nothing hangs).
const HUNG: Duration = Duration::from_secs(30);

/// Wait for `child` at most `HUNG`; a process that does not exit is killed and fails the test.
fn finish(mut child: Child, what: &str) -> Outcome {
    let deadline = Instant::now() + HUNG;
    // Drain stdout and stderr on threads so a full pipe cannot stall the child.
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            let _ = pipe.read_to_end(&mut text);
        }
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = stderr.as_mut() {
            let _ = pipe.read_to_end(&mut text);
        }
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: splice did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    parse(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

fn spawn(mut command: Command) -> Child {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
        .spawn()
        .unwrap_or_else(|e| panic!("spawn splice: {e}"))
}

/// One scripted call, then a closing answer; the run must end on its own.
fn one_call(sandbox: &Sandbox, name: &str, args: Value, flags: &[&str]) -> Outcome {
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", name, &[&args.to_string()]),
        openai::answer(&["done"]),
    ]);
    one_call_with(sandbox, &provider, flags, |_| {})
}

fn one_call_with(
    sandbox: &Sandbox,
    provider: &FakeProvider,
    flags: &[&str],
    adjust: impl FnOnce(&mut Command),
) -> Outcome {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(flags).arg("do it");
    adjust(&mut command);
    let out = finish(spawn(command), "one tool call");
    out.assert_well_formed();
    out
}

fn result_of(out: &Outcome) -> (String, String) {
    let result = out.first("tool_result");
    (
        result["status"].as_str().unwrap_or_default().to_string(),
        result["output"].as_str().unwrap_or_default().to_string(),
    )
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(status.success());
}

#[test]
fn read_file_on_a_fifo_is_refused_and_the_run_finishes() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.root.join("pipe"));
    let out = one_call(&sandbox, "read_file", json!({"path": "pipe"}), &[]);
    assert_eq!(out.code, 0);
    let (status, output) = result_of(&out);
    assert_eq!(status, "error");
    assert!(output.contains("not a regular file"), "{output}");
}

#[test]
fn write_and_edit_on_a_fifo_are_refused() {
    for (tool, args) in [
        ("write_file", json!({"path": "pipe", "content": "x"})),
        (
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        ),
    ] {
        let sandbox = Sandbox::new();
        mkfifo(&sandbox.root.join("pipe"));
        let out = one_call(&sandbox, tool, args, &["--permission-mode", "accept-edits"]);
        assert_eq!(out.code, 0, "{tool}");
        let (status, output) = result_of(&out);
        assert_eq!(status, "error", "{tool}: {output}");
        assert!(output.contains("not a regular file"), "{tool}: {output}");
    }
}

#[test]
fn sigint_ends_a_run_that_met_a_fifo() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.root.join("pipe"));
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "read_file", &[r#"{"path":"pipe"}"#]),
        Reply::Hang(vec![openai::text("thinking")]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).arg("read the pipe");
    // Whether the read hangs or not, SIGINT must end the process: sent once the read's
    // result is out (it is refused, never blocks) and the next answer hangs.
    let out = support::run_and_signal(command, "INT", |lines| support::wrote(lines, "tool_result"));
    out.assert_well_formed();
    assert_eq!(out.code, 130);
}

/// Peak resident memory of a live process, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_else(|e| panic!("{e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

#[test]
fn five_lines_of_a_huge_sparse_file_cost_little_memory() {
    let sandbox = Sandbox::new();
    let lines: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    sandbox.write("huge.txt", &lines);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(sandbox.root.join("huge.txt"))
        .unwrap_or_else(|e| panic!("{e}"));
    file.set_len(512 * 1024 * 1024)
        .unwrap_or_else(|e| panic!("{e}"));
    let provider = FakeProvider::start(vec![
        openai::tool_call("call_1", "read_file", &[r#"{"path":"huge.txt","limit":5}"#]),
        Reply::Hang(vec![openai::text("reading")]),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).arg("read it");
    let child = spawn(command);
    // The second request carries the tool result: the read is over, the process still alive.
    let deadline = Instant::now() + HUNG;
    while provider.requests().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(provider.requests().len(), 2, "the read never finished");
    let peak = peak_rss_kib(child.id());
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = finish(child, "huge read");
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    assert!(output.starts_with("line 1\nline 2\nline 3\nline 4\nline 5\n"));
    assert!(!output.contains("line 6"), "{output}");
    assert!(peak < 64 * 1024, "peak RSS {peak} KiB for a 5-line read");
}

#[test]
fn editing_a_file_over_the_size_cap_is_refused() {
    let sandbox = Sandbox::new();
    sandbox.write("big.txt", "needle\n");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(sandbox.root.join("big.txt"))
        .unwrap_or_else(|e| panic!("{e}"));
    file.set_len(64 * 1024 * 1024)
        .unwrap_or_else(|e| panic!("{e}"));
    for (tool, args) in [
        (
            "edit_file",
            json!({"path": "big.txt", "old_string": "needle", "new_string": "pin"}),
        ),
        ("write_file", json!({"path": "big.txt", "content": "small"})),
    ] {
        let out = one_call(&sandbox, tool, args, &["--permission-mode", "accept-edits"]);
        let (status, output) = result_of(&out);
        assert_eq!(status, "error", "{tool}: {output}");
        assert!(output.contains("larger than"), "{tool}: {output}");
        let size = std::fs::metadata(sandbox.root.join("big.txt")).map(|m| m.len());
        assert_eq!(size.ok(), Some(64 * 1024 * 1024), "{tool} changed the file");
    }
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|line| line.contains(marker))
        .collect()
}

/// Commands that leave a process behind which, a second later, rewrites README.md: through
/// `setsid` (out of the process group Splice kills), a double fork, and the issue's Python.
fn escapes(marker: &str) -> Vec<String> {
    vec![
        format!("setsid sh -c 'sleep 1; echo {marker} > README.md' &"),
        format!("( ( sleep 1; echo {marker} > README.md ) & ) ; echo started"),
        format!(
            "python3 -c \"import os,time; os.setsid(); time.sleep(1); open('README.md','w').write('{marker}')\" &"
        ),
    ]
}

/// The file is untouched after the escapee's sleep, and no escapee is alive.
fn assert_nothing_outlived(sandbox: &Sandbox, marker: &str, what: &str) {
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(
        sandbox.read("README.md").as_deref(),
        Some("original\n"),
        "{what}: a process outlived its command"
    );
    let alive = processes_with(marker);
    assert!(alive.is_empty(), "{what}: still running: {alive:?}");
}

#[test]
fn a_detached_grandchild_dies_with_its_command() {
    for (mode, flags) in [
        ("confined", &["--permission-mode", "auto"][..]),
        ("approved", &["--allow", "run_command"][..]),
    ] {
        for (n, command) in escapes(&format!("splice-escape-{mode}-{}", std::process::id()))
            .into_iter()
            .enumerate()
        {
            let marker = format!("splice-escape-{mode}-{}", std::process::id());
            let sandbox = Sandbox::new();
            sandbox.write("README.md", "original\n");
            let out = one_call(&sandbox, "run_command", json!({"command": command}), flags);
            let (status, output) = result_of(&out);
            assert_eq!(status, "ok", "{mode} #{n}: {output}");
            assert_nothing_outlived(&sandbox, &marker, &format!("{mode} #{n}"));
        }
    }
}

#[test]
fn a_detached_grandchild_dies_when_its_command_times_out() {
    let marker = format!("splice-timeout-{}", std::process::id());
    let sandbox = Sandbox::new();
    sandbox.write("README.md", "original\n");
    let command = format!("setsid sh -c 'sleep 1; echo {marker} > README.md' & sleep 20");
    let out = one_call(
        &sandbox,
        "run_command",
        json!({"command": command, "timeout_ms": 300}),
        &["--permission-mode", "auto"],
    );
    assert_eq!(result_of(&out).0, "timeout");
    assert_nothing_outlived(&sandbox, &marker, "timeout");
}

#[test]
fn a_detached_grandchild_dies_when_splice_is_interrupted_or_killed() {
    for signal in ["INT", "KILL"] {
        let marker = format!("splice-signal-{signal}-{}", std::process::id());
        let sandbox = Sandbox::new();
        sandbox.write("README.md", "original\n");
        let command =
            format!("setsid sh -c 'sleep 1; echo {marker} > README.md' & touch started; sleep 20");
        let provider = FakeProvider::start(vec![openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({"command": command}).to_string()],
        )]);
        let mut splice = sandbox.command(&provider.url);
        stream_json(&mut splice)
            .args(["--permission-mode", "auto"])
            .arg("go");
        let child = spawn(splice);
        let deadline = Instant::now() + HUNG;
        while !sandbox.root.join("started").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            sandbox.root.join("started").exists(),
            "the command never ran"
        );
        let status = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("kill: {e}"));
        assert!(status.success());
        let _ = finish(child, "signalled run");
        assert_nothing_outlived(&sandbox, &marker, &format!("SIG{signal}"));
    }
}

/// What `env` shows a command in a run with `flags`, with a secret-named variable set
/// (`MY_SERVICE_TOKEN=abc`: too short for the redactor, so the output shows it if it is there).
fn command_env(flags: &[&str], config: Option<&str>) -> String {
    let sandbox = Sandbox::new();
    if let Some(config) = config {
        std::fs::write(sandbox.dir.path().join("config.json"), config)
            .unwrap_or_else(|e| panic!("{e}"));
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
        .unwrap_or_else(|e| panic!("chmod: {e}"));
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

#[test]
fn without_landlock_an_auto_command_is_asked_about_not_run_unconfined() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"touch made.txt"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let out = one_call_with(&sandbox, &provider, &["--permission-mode", "auto"], |c| {
        c.env("SPLICE_TEST_NO_LANDLOCK", "1");
    });
    let request = out.first("permission_request");
    let reason = request["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("sandbox is unavailable"), "{reason}");
    assert_eq!(out.first("permission_decision")["permissionGranted"], false);
    assert_eq!(result_of(&out).0, "denied");
    assert!(!sandbox.root.join("made.txt").exists());
    // A command the user approved runs as the user, sandbox or not.
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"touch made.txt"}"#],
        ),
        openai::answer(&["done"]),
    ]);
    let flags = [
        "--permission-mode",
        "auto",
        "--allow",
        "run_command(touch *)",
    ];
    let out = one_call_with(&sandbox, &provider, &flags, |c| {
        c.env("SPLICE_TEST_NO_LANDLOCK", "1");
    });
    assert_eq!(result_of(&out).0, "ok");
    assert!(sandbox.root.join("made.txt").exists());
}

#[test]
fn a_confined_command_still_cannot_write_outside_its_places() {
    // Outside the root, /tmp and the caches: the build's own scratch directory.
    let outside =
        support::outside_dir().join(format!("attack-proc-{}-outside.txt", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let sandbox = Sandbox::new();
    let command = format!("touch made.txt; touch {}", outside.display());
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": command }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "error", "{output}");
    assert!(sandbox.root.join("made.txt").exists(), "{output}");
    assert!(
        !outside.exists(),
        "the confined command wrote {}",
        outside.display()
    );
}

#[test]
fn without_landlock_the_pipelines_own_test_command_is_refused_not_run_unconfined() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    support::git(&sandbox.root, &["init", "-q", "-b", "main"]);
    support::git(&sandbox.root, &["add", "-A"]);
    support::git(
        &sandbox.root,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "init",
        ],
    );
    let fixed = json!({
        "files": [{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}],
        "summary": "add"
    });
    let provider = FakeProvider::start(vec![openai::tool_call(
        "cw1",
        "submit_code",
        &[&fixed.to_string()],
    )]);
    let flags = [
        "--tier",
        "standard",
        "--permission-mode",
        "accept-edits",
        "--test-command",
        "touch ran.txt",
    ];
    let out = one_call_with(&sandbox, &provider, &flags, |c| {
        c.env("SPLICE_TEST_NO_LANDLOCK", "1");
    });
    assert_eq!(out.code, 1);
    assert!(!sandbox.root.join("ran.txt").exists(), "ran unconfined");
    let reason = out.first("permission_request")["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(reason.contains("sandbox is unavailable"), "{reason}");
    let detail = out.final_result()["stages"][1]["detail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(detail.contains("was refused"), "{detail}");
}

#[test]
fn an_untracked_link_to_a_fifo_does_not_hang_the_review_diff() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    support::git(&sandbox.root, &["init", "-q", "-b", "main"]);
    support::git(&sandbox.root, &["add", "-A"]);
    support::git(
        &sandbox.root,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@e",
            "commit",
            "-qm",
            "init",
        ],
    );
    // Untracked, so the reviewers' diff reads it in full: it must not wait on the FIFO.
    let fifo = sandbox.dir.path().join("outside-fifo");
    mkfifo(&fifo);
    std::os::unix::fs::symlink(&fifo, sandbox.root.join("notes.txt"))
        .unwrap_or_else(|e| panic!("{e}"));
    let fixed = json!({
        "files": [{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}],
        "summary": "add"
    });
    let verdict = json!({"accepted": true, "reasons": ["ok"]});
    let provider = FakeProvider::start(vec![
        openai::tool_call("cw1", "submit_code", &[&fixed.to_string()]),
        openai::tool_call("av1", "submit_verdict", &[&verdict.to_string()]),
    ]);
    let flags = [
        "--tier",
        "standard",
        "--permission-mode",
        "accept-edits",
        "--test-command",
        "true",
    ];
    let out = one_call_with(&sandbox, &provider, &flags, |_| {});
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn a_confined_command_cannot_plant_programs_where_they_would_run_later() {
    // HOME outside /tmp, so only the sandbox's own list decides what is writable there.
    let sandbox = Sandbox::new_in(&support::outside_dir());
    let home = sandbox.dir.path();
    for dir in [
        ".cargo/bin",
        ".cargo/registry",
        ".cache/pre-commit",
        ".cache/pip",
        ".npm/_npx",
    ] {
        std::fs::create_dir_all(home.join(dir)).unwrap_or_else(|e| panic!("{e}"));
    }
    let command = "for d in .cargo/bin .cargo/registry .cache/pre-commit .cache/pip .npm/_npx; \
                   do echo planted > \"$HOME/$d/x\" 2>/dev/null; done; true";
    let out = one_call(
        &sandbox,
        "run_command",
        json!({ "command": command }),
        &["--permission-mode", "auto"],
    );
    let (status, output) = result_of(&out);
    assert_eq!(status, "ok", "{output}");
    for (dir, writable) in [
        (".cargo/bin", false),
        (".cache/pre-commit", false),
        (".npm/_npx", false),
        // Download caches stay writable so builds work inside the sandbox.
        (".cargo/registry", true),
        (".cache/pip", true),
    ] {
        assert_eq!(home.join(dir).join("x").exists(), writable, "{dir}");
    }
}
