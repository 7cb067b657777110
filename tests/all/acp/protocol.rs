//! The wire itself, written raw: malformed input gets JSON-RPC errors and the agent keeps
//! serving; nothing but protocol reaches stdout.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support;
use support::Sandbox;
use support::fake_provider::FakeProvider;
use support::process::Running;

/// Write `lines` to a fresh `splice acp`, close its input, and read every line it wrote.
fn exchange(lines: &[&str], args: &[&str]) -> (Vec<Value>, i32) {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(Vec::new());
    let mut command = sandbox.command(&provider.url);
    command
        .arg("acp")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Running::start(&mut command).expect("start splice acp");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    for line in lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("write a line");
        // One at a time, answered in order.
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(stdin);
    let deadline = Instant::now() + support::process::HUNG;
    let code = loop {
        if let Some(status) = child.try_wait().expect("poll") {
            break status.code().unwrap_or(-1);
        }
        assert!(Instant::now() < deadline, "splice acp did not exit");
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = reader.join().expect("read stdout");
    let values = out
        .iter()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"))
        })
        .collect();
    (values, code)
}

fn answer(lines: &[Value], id: i64) -> &Value {
    lines
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id}: {lines:?}"))
}

#[test]
fn malformed_input_gets_a_json_rpc_error_and_the_agent_keeps_serving() {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}});
    let (lines, code) = exchange(
        &[
            "this is not json",
            r#"{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}"#,
            &initialize.to_string(),
            "{\"jsonrpc\":\"2.0\",\"id\":",
            r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"session_nope","prompt":[{"type":"text","text":"hi"}]}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":42}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"session/set_mode","params":{"sessionId":"session_nope","modeId":"auto"}}"#,
        ],
        &[],
    );
    let parse: Vec<&Value> = lines
        .iter()
        .filter(|l| l["error"]["code"] == -32700)
        .collect();
    assert_eq!(parse.len(), 2, "{lines:?}");
    assert!(parse[0]["id"].is_null(), "{lines:?}");
    // Nothing before `initialize`.
    assert_eq!(answer(&lines, 0)["error"]["code"], -32600, "{lines:?}");
    let init = &answer(&lines, 1)["result"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    // With the key set, no authentication is offered.
    assert_eq!(init["authMethods"].as_array().map(Vec::len).unwrap_or(0), 0);
    assert_eq!(answer(&lines, 2)["error"]["code"], -32601, "{lines:?}");
    let unknown = &answer(&lines, 3)["error"];
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("session_nope")),
        "{unknown}"
    );
    assert_eq!(answer(&lines, 4)["error"]["code"], -32602, "{lines:?}");
    let relative = &answer(&lines, 5)["error"];
    assert!(
        relative["message"]
            .as_str()
            .is_some_and(|m| m.contains("not an absolute path")),
        "{relative}"
    );
    assert_eq!(answer(&lines, 6)["error"]["code"], -32002, "{lines:?}");
    assert_eq!(code, 0);
}

/// Without the provider's key, `initialize` names the variable to set and `session/new` is
/// refused as needing authentication.
#[test]
fn a_missing_key_is_an_auth_method_naming_the_variable() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(Vec::new());
    let mut command = sandbox.command(&provider.url);
    command
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .args(["acp", "--provider", "openai"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Running::start(&mut command).expect("start splice acp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut ask = |line: Value| -> Value {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("write");
        let mut text = String::new();
        stdout.read_line(&mut text).expect("read");
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"))
    };
    let init = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1}}));
    let method = &init["result"]["authMethods"][0];
    assert_eq!(method["id"], "env:OPENAI_API_KEY", "{init}");
    let auth = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "authenticate",
        "params": {"methodId": "env:OPENAI_API_KEY"}}));
    assert!(
        auth["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("OPENAI_API_KEY is not set")),
        "{auth}"
    );
    let new = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "/tmp", "mcpServers": []}}));
    assert_eq!(new["error"]["code"], -32000, "{new}");
    assert!(
        new["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("OPENAI_API_KEY")),
        "{new}"
    );
}

/// Flags that cannot work are refused on stderr before any protocol: exit 2, stdout empty.
#[test]
fn bad_flags_are_refused_before_any_protocol() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(Vec::new());
    let mut command = sandbox.command(&provider.url);
    command.args(["acp", "--max-turns", "0"]);
    let out = command.output().expect("run splice acp");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--max-turns must be at least 1"),
        "{stderr}"
    );
}
