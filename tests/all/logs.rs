//! The log file (`SPLICE_LOG`, `$SPLICE_DATA_DIR/log/splice.log`): a failed run leaves which
//! request and which command failed in it, owner-only and without the provider key; `off`
//! writes nothing; stdout stays the protocol alone whatever is logged.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use serde_json::json;

use crate::support::fake_provider::{FakeProvider, Reply, openai};
use crate::support::process::Start;
use crate::support::{Outcome, Sandbox, TEST_KEY, run, stream_json};

fn log_file(sandbox: &Sandbox) -> PathBuf {
    sandbox.data.join("log").join("splice.log")
}

/// A run of `replies` in auto mode with `SPLICE_LOG` as given (unset: the default).
fn logged_run(sandbox: &Sandbox, replies: Vec<Reply>, level: Option<&str>) -> Outcome {
    let provider = FakeProvider::start(replies);
    let mut command = sandbox.command(&provider.url);
    command.env("SPLICE_MAX_RETRIES", "1");
    if let Some(level) = level {
        command.env("SPLICE_LOG", level);
    }
    stream_json(&mut command)
        .args(["--permission-mode", "auto"])
        .arg("run the check");
    let out = run(command, None);
    out.assert_well_formed();
    out
}

fn failing_command() -> Reply {
    let args = json!({ "command": "echo checking; exit 7" }).to_string();
    openai::tool_call("call_1", "run_command", &[&args])
}

/// A 500 whose body quotes the key, as a misbehaving gateway might: the error event carries
/// the message, and the log must not.
fn server_error() -> Reply {
    Reply::Status {
        code: 500,
        headers: vec![],
        body: format!("{{\"error\":{{\"message\":\"upstream exploded for {TEST_KEY}\"}}}}"),
    }
}

#[test]
fn a_failed_run_logs_the_failed_request_and_command_privately_without_the_key() {
    let sandbox = Sandbox::new();
    let replies = vec![failing_command(), server_error(), server_error()];
    let out = logged_run(&sandbox, replies, None);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert_eq!(out.first("tool_result")["status"], "error");

    let path = log_file(&sandbox);
    let mode = std::fs::metadata(&path)
        .unwrap_or_else(|e| panic!("no log at {}: {e}", path.display()))
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "log mode {mode:o}");
    let log = std::fs::read_to_string(&path).expect("read the log");
    let lines =
        |needle: &str| -> Vec<&str> { log.lines().filter(|l| l.contains(needle)).collect() };
    // Each request: the first answered 200, then 500 on the first try and on the retry.
    let failed = lines("request failed");
    assert_eq!(failed.len(), 2, "{log}");
    assert!(failed.iter().all(|l| l.contains("status=500")), "{log}");
    assert!(
        failed[0].contains("attempt=0") && failed[1].contains("attempt=1"),
        "{log}"
    );
    assert!(failed[0].contains("/chat/completions"), "{log}");
    // The command: the tool call that failed, and the process that exited 7.
    let tool = lines("tool call failed");
    assert!(
        tool.iter()
            .any(|l| l.contains("run_command") && l.contains("call_1")),
        "{log}"
    );
    let process = lines("process exited");
    assert!(process.iter().any(|l| l.contains("code=7")), "{log}");
    // The run's error and its exit code at the edge.
    assert!(
        lines(" error")
            .iter()
            .any(|l| l.contains("upstream exploded")),
        "{log}"
    );
    assert!(
        lines("splice exited").iter().any(|l| l.contains("code=3")),
        "{log}"
    );
    assert!(!log.contains(TEST_KEY), "the key is in the log:\n{log}");
    assert!(!log.contains("Bearer"), "{log}");
}

#[test]
fn splice_log_off_or_error_writes_nothing_for_a_good_run() {
    for level in ["off", "error"] {
        let sandbox = Sandbox::new();
        let out = logged_run(&sandbox, vec![openai::answer(&["done"])], Some(level));
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(
            !log_file(&sandbox).exists(),
            "SPLICE_LOG={level} wrote a log: {:?}",
            std::fs::read_to_string(log_file(&sandbox))
        );
    }
}

#[test]
fn stdout_is_the_protocol_alone_with_everything_logged() {
    let replies = || vec![failing_command(), openai::answer(&["done"])];
    let quiet = logged_run(&Sandbox::new(), replies(), Some("off"));
    let sandbox = Sandbox::new();
    let traced = logged_run(&sandbox, replies(), Some("trace"));
    // Every stdout line is an event (`run` panics on any other), the same events in the same
    // order, and nothing of the log reaches stderr.
    assert_eq!(traced.types(), quiet.types());
    assert_eq!(traced.stderr, quiet.stderr);
    let log = std::fs::read_to_string(log_file(&sandbox)).unwrap_or_default();
    assert!(
        log.contains("DEBUG") && log.contains("tool call started"),
        "{log}"
    );
}

#[test]
fn a_log_that_cannot_be_written_does_not_fail_the_run() {
    let sandbox = Sandbox::new();
    // A file where the log's directory would be.
    std::fs::create_dir_all(&sandbox.data).expect("create the data dir");
    std::fs::write(sandbox.data.join("log"), "").expect("write a file where the log dir goes");
    let out = logged_run(&sandbox, vec![openai::answer(&["done"])], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.text(), "done");
    assert_eq!(
        out.stderr.matches("cannot open the log").count(),
        1,
        "{}",
        out.stderr
    );
}

#[test]
fn the_registry_server_logs_each_request_on_stderr_without_its_headers() {
    crate::support::need_registry_server();
    let sandbox = Sandbox::new();
    let stderr_path = sandbox.dir.path().join("server.stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("create server.stderr");
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .args(["registry", "serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(sandbox.dir.path().join("registry"))
        .stdout(std::process::Stdio::piped())
        .stderr(stderr);
    let mut child = command.start().expect("start splice registry serve");
    let mut url = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut url);
    }
    let answer = url.trim().strip_prefix("http://").map(|addr| {
        get(
            addr,
            "/api/v1/search?q=tools",
            "Bearer splice-secret-token-12345",
        )
    });
    drop(child);
    let answer = answer.unwrap_or_else(|| panic!("no address: {url:?}"));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let log = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let line = log
        .lines()
        .find(|l| l.contains("/api/v1/search") && l.contains("status=200"))
        .unwrap_or_else(|| panic!("no request line:\n{log}"));
    assert!(line.contains("GET") && line.contains("latency"), "{line}");
    assert!(!log.contains("splice-secret-token"), "{log}");
    assert!(!log.contains("q=tools"), "the query is not logged: {log}");
}

/// One HTTP/1.1 GET with an Authorization header; the whole answer.
fn get(addr: &str, path: &str, authorization: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the registry");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {authorization}\r\n\
         Connection: close\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .expect("send the request");
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
}
