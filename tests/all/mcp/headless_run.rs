//! MCP tools in a headless run, end to end: the real `splice` binary, the fake provider
//! scripting the model's calls, and real MCP servers (the npm reference servers and our
//! hostile one, from `support::mcp`) speaking the real protocol over stdio.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};
use splice::mcp::{ServerConfig, ServerEntry};
use support::fake_provider::{FakeProvider, Reply, anthropic, openai};
use support::{Outcome, Sandbox, TEST_KEY, run, stream_json};

fn server_value(entry: &ServerEntry) -> Value {
    match &entry.config {
        ServerConfig::Stdio {
            command, args, env, ..
        } => {
            json!({"command": command, "args": args, "env": env})
        }
        ServerConfig::Http { url, headers } => json!({"url": url, "headers": headers}),
    }
}

fn servers_value(servers: &[ServerEntry]) -> Value {
    let map: serde_json::Map<String, Value> = servers
        .iter()
        .map(|e| (e.name.clone(), server_value(e)))
        .collect();
    Value::Object(map)
}

/// The user's config file names these servers.
fn configure(sandbox: &Sandbox, servers: &[ServerEntry]) {
    let config = json!({"mcpServers": servers_value(servers)});
    std::fs::write(sandbox.dir.path().join("config.json"), config.to_string())
        .expect("write config.json");
}

/// The project's `.mcp.json` names these servers.
fn project_servers(sandbox: &Sandbox, servers: &[ServerEntry]) {
    let file = json!({"mcpServers": servers_value(servers)});
    sandbox.write(".mcp.json", &file.to_string());
}

fn command(sandbox: &Sandbox, provider: &FakeProvider, kind: &str, args: &[&str]) -> Command {
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command)
        .args(["--provider", kind, "--tier", "light"])
        .args(args);
    command
}

fn exec(sandbox: &Sandbox, provider: &FakeProvider, kind: &str, args: &[&str]) -> Outcome {
    let out = run(command(sandbox, provider, kind, args), None);
    out.assert_well_formed();
    out
}

/// Anthropic: the model calls `name` with `args`, then answers `answer`.
fn calls_then_answers(name: &str, args: Value, answer: &str) -> Vec<Reply> {
    vec![
        anthropic::tool_call("toolu_1", name, &[&args.to_string()]),
        anthropic::answer(&[answer]),
    ]
}

/// Every `tool_result` block the request's messages hold.
fn tool_result_blocks(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

fn warnings(out: &Outcome, code: &str) -> Vec<String> {
    out.of_type("warning")
        .iter()
        .filter(|w| w["code"] == code)
        .filter_map(|w| w["message"].as_str().map(str::to_string))
        .collect()
}

/// The issue's example: with `--allow 'mcp__everything__*'` the model's `get-sum` call runs on
/// server-everything, its event names the wire name and the claimed side effect, and the sum
/// reaches the model in the next request.
#[test]
fn get_sum_runs_on_server_everything_and_the_model_gets_the_result() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 3}),
        "It is 5.",
    ));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--allow", "mcp__everything__*", "What is 2+3? Use get-sum."],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let call = out.first("tool_call");
    assert_eq!(call["name"], "mcp__everything__get-sum");
    assert_eq!(call["sideEffect"], "read", "get-sum claims readOnlyHint");
    assert_eq!(call["args"], json!({"a": 2, "b": 3}));
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok", "{result}");
    assert!(
        result["output"].as_str().unwrap_or_default().contains('5'),
        "{result}"
    );
    assert!(out.of_type("permission_request").is_empty());
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let offered = offered_tools(&requests[0].body);
    assert!(
        offered.iter().any(|t| t == "mcp__everything__get-sum"),
        "{offered:?}"
    );
    let blocks = tool_result_blocks(&requests[1].body);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0]["tool_use_id"], "toolu_1");
    assert_eq!(blocks[0]["is_error"], false);
    assert_eq!(blocks[0]["content"], result["output"]);
}

/// Headless in ask mode with no allow rule: the call asks, nobody can answer, it is denied,
/// and the model is told so; the server never sees it.
#[test]
fn without_an_allow_rule_a_headless_ask_run_denies_even_a_read_only_claim() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 3}),
        "Denied.",
    ));
    let out = exec(&sandbox, &provider, "anthropic", &["What is 2+3?"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = out.first("permission_request");
    assert_eq!(request["name"], "mcp__everything__get-sum");
    assert_eq!(request["permissionMode"], "ask");
    let decision = out.first("permission_decision");
    assert_eq!(decision["permissionGranted"], false);
    assert_eq!(
        decision["decisionReason"],
        "headless run has no interactive responder"
    );
    let result = out.first("tool_result");
    assert_eq!(result["status"], "denied");
    let blocks = tool_result_blocks(&provider.requests()[1].body);
    assert_eq!(blocks[0]["is_error"], true);
    assert!(!blocks[0]["content"].to_string().contains("sum of"));
}

/// Read-only mode runs a tool that claims `readOnlyHint` and refuses one that does not,
/// saying why.
#[test]
fn read_only_mode_runs_only_tools_that_claim_to_be_read_only() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call("toolu_1", "mcp__everything__get-sum", &[r#"{"a":1,"b":1}"#]),
        anthropic::tool_call(
            "toolu_2",
            "mcp__everything__toggle-simulated-logging",
            &["{}"],
        ),
        anthropic::answer(&["Done."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--permission-mode", "read-only", "Add and log."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = out.of_type("tool_result");
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["status"], "ok", "{}", results[0]);
    assert_eq!(results[1]["status"], "denied", "{}", results[1]);
    let refusal = out.first("permission");
    assert_eq!(refusal["name"], "mcp__everything__toggle-simulated-logging");
    assert_eq!(refusal["action"], "deny");
    assert_eq!(refusal["sideEffect"], "execute");
    // No readOnlyHint and no destructiveHint: the label of an unannotated tool.
    assert_eq!(refusal["risk"], "medium");
    assert!(
        refusal["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("readOnlyHint"),
        "{refusal}"
    );
}

/// Auto mode runs MCP tools without asking, even one that does not claim to be read-only; a
/// deny rule still wins over auto.
#[test]
fn auto_mode_runs_them_and_a_deny_rule_wins_over_auto() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(vec![
        anthropic::tool_call(
            "toolu_1",
            "mcp__everything__toggle-simulated-logging",
            &["{}"],
        ),
        anthropic::answer(&["Toggled."]),
        anthropic::tool_call("toolu_2", "mcp__everything__get-sum", &[r#"{"a":2,"b":3}"#]),
        anthropic::answer(&["Refused."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--permission-mode", "auto", "Toggle logging."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.first("tool_result")["status"], "ok");
    assert!(out.of_type("permission_request").is_empty());
    assert!(out.of_type("permission").is_empty());

    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &[
            "--permission-mode",
            "auto",
            "--deny",
            "mcp__everything__get-sum",
            "What is 2+3?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.first("tool_result")["status"], "denied");
    assert_eq!(
        out.first("permission")["reason"],
        "denied by rule `mcp__everything__get-sum`"
    );
}

/// `trigger-long-running-operation` reports progress: `tool_progress` events for the call,
/// between its `tool_call` and its `tool_result`, with a fraction and no stage.
#[test]
fn progress_notifications_become_tool_progress_events_during_the_call() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
        "Done.",
    ));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--allow", "mcp__everything__*", "Run the long operation."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let types = out.types();
    let call_at = types.iter().position(|t| t == "tool_call");
    let result_at = types.iter().position(|t| t == "tool_result");
    let (Some(call_at), Some(result_at)) = (call_at, result_at) else {
        panic!("no call and result: {types:?}");
    };
    let id = &out.lines[call_at]["id"];
    let progress: Vec<(usize, &Value)> = out
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "tool_progress")
        .collect();
    assert_eq!(progress.len(), 3, "{types:?}");
    let mut last = 0.0;
    for (at, event) in progress {
        assert!(call_at < at && at < result_at, "{types:?}");
        assert_eq!(&event["id"], id);
        assert!(event.get("stage").is_none(), "{event}");
        let fraction = event["fraction"].as_f64().unwrap_or(-1.0);
        assert!(fraction > last && fraction <= 1.0, "{event}");
        last = fraction;
    }
    assert_eq!(last, 1.0);
    assert_eq!(out.lines[result_at]["status"], "ok");
}

/// The tiny image reaches Anthropic as an image block inside the `tool_result`; the event says
/// `[image: image/png, N bytes]` and never carries the data.
#[test]
fn the_tiny_image_reaches_anthropic_inside_the_tool_result() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__everything__get-tiny-image",
        json!({}),
        "A tiny image.",
    ));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &[
            "--allow",
            "mcp__everything__get-tiny-image",
            "Show me the image.",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request = &provider.requests()[1].body;
    let blocks = tool_result_blocks(request);
    let content = &blocks[0]["content"];
    assert_eq!(content[0]["type"], "text");
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[1]["source"]["type"], "base64");
    assert_eq!(content[1]["source"]["media_type"], "image/png");
    let data = content[1]["source"]["data"].as_str().unwrap_or_default();
    assert!(data.len() > 50, "{data}");
    let output = out.first("tool_result")["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(output.contains("[image: image/png, "), "{output}");
    assert!(!out.stdout.contains(data), "image data in the stream");
}

/// OpenAI's tool messages take text only: the image follows them as a user message with an
/// `image_url` data URL.
#[test]
fn the_tiny_image_reaches_openai_as_a_user_message_after_the_tool_message() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(vec![
        openai::call_json("call_1", "mcp__everything__get-tiny-image", json!({})),
        openai::answer(&["A tiny image."]),
    ]);
    let out = exec(
        &sandbox,
        &provider,
        "openai",
        &[
            "--allow",
            "mcp__everything__get-tiny-image",
            "Show me the image.",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let messages = provider.requests()[1].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("[image: image/png, ")
    );
    let url = messages[4]["content"][1]["image_url"]["url"]
        .as_str()
        .unwrap_or_default();
    assert!(url.starts_with("data:image/png;base64,"), "{url}");
    assert!(!out.stdout.contains(&url["data:image/png;base64,".len()..]));
}

/// A stdio server gets the configured env plus PATH, HOME and the locale: never Splice's own
/// environment, so the provider key Splice was given does not reach it.
#[test]
fn a_server_does_not_see_the_provider_key() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__everything__get-env",
        json!({}),
        "Seen.",
    ));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &[
            "--allow",
            "mcp__everything__get-env",
            "Show the environment.",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok");
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.contains("PATH"), "not an environment: {output}");
    assert!(!output.contains(TEST_KEY), "{output}");
    assert!(!output.contains("ANTHROPIC_API_KEY"), "{output}");
    assert!(!output.contains("SPLICE_DATA_DIR"), "{output}");
}

/// A server that does not start (no such program) and one that hangs on `initialize` are each
/// a `mcp_server_failed` warning naming them; the run offers and uses the other server's tools
/// and completes.
#[test]
fn servers_that_fail_to_start_are_warnings_and_the_run_goes_on() {
    let sandbox = Sandbox::new();
    let missing = ServerEntry {
        name: "missing".into(),
        config: ServerConfig::Stdio {
            command: "/nonexistent/mcp-server".into(),
            args: vec![],
            env: Default::default(),
            env_passthrough: Vec::new(),
        },
        source: splice::mcp::Source::User,
        pins: Vec::new(),
    };
    configure(
        &sandbox,
        &[
            support::mcp::everything("everything"),
            missing,
            support::mcp::hostile("hangs", &["hang-init"], &[]),
        ],
    );
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__everything__get-sum",
        json!({"a": 2, "b": 3}),
        "5",
    ));
    let mut command = command(
        &sandbox,
        &provider,
        "anthropic",
        &["--allow", "mcp__everything__*", "What is 2+3?"],
    );
    command.env("SPLICE_MCP_STARTUP_TIMEOUT_MS", "3000");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let failed = warnings(&out, "mcp_server_failed");
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(failed.iter().any(|m| m.contains("`missing`")), "{failed:?}");
    assert!(failed.iter().any(|m| m.contains("`hangs`")), "{failed:?}");
    assert_eq!(out.first("tool_result")["status"], "ok");
    let offered = offered_tools(&provider.requests()[0].body);
    assert!(offered.iter().any(|t| t == "mcp__everything__get-sum"));
    assert!(!offered.iter().any(|t| t.starts_with("mcp__hangs__")));
}

/// A server that dies during a call: the call is a tool error naming it, a warning says the
/// server failed, and the run goes on to its answer.
#[test]
fn a_server_that_dies_mid_call_is_a_tool_error_and_a_warning() {
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        &[support::mcp::hostile("hostile", &["crash-mid-call"], &[])],
    );
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__hostile__crash",
        json!({}),
        "It crashed.",
    ));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--permission-mode", "auto", "Crash it."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "error");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("`hostile`"),
        "{result}"
    );
    let failed = warnings(&out, "mcp_server_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains("`hostile`"), "{failed:?}");
    assert_eq!(out.final_result()["status"], "completed");
    // The tools are read again for every request: the dead server's are no longer offered.
    let requests = provider.requests();
    assert!(offered_tools(&requests[0].body).contains(&"mcp__hostile__crash".to_string()));
    let after = offered_tools(&requests[1].body);
    assert!(
        !after.iter().any(|t| t.starts_with("mcp__hostile__")),
        "{after:?}"
    );
}

/// A server of the project's `.mcp.json` whose command would create a marker file.
fn marker_server(marker: &Path) -> ServerEntry {
    let (node, args) = support::mcp::everything_command();
    let mut line = format!("touch '{}' && exec '{node}'", marker.display());
    for arg in args {
        line.push_str(&format!(" '{arg}'"));
    }
    ServerEntry {
        name: "proj".into(),
        config: ServerConfig::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), line],
            env: Default::default(),
            env_passthrough: Vec::new(),
        },
        source: splice::mcp::Source::Project,
        pins: Vec::new(),
    }
}

/// A project's `.mcp.json` server does not start until approved: one warning names it and
/// says how to allow it, and its command never runs; `--trust-project-mcp` starts it for the
/// run, and so does an approval recorded for this root and this exact config.
#[test]
fn project_servers_start_only_when_approved_or_trusted() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("started.marker");
    let server = marker_server(&marker);
    project_servers(&sandbox, std::slice::from_ref(&server));
    let provider = FakeProvider::start(vec![
        anthropic::answer(&["No tools."]),
        anthropic::tool_call("toolu_1", "mcp__proj__get-sum", &[r#"{"a":2,"b":3}"#]),
        anthropic::answer(&["5"]),
        anthropic::answer(&["Approved."]),
    ]);
    let out = exec(&sandbox, &provider, "anthropic", &["Hello."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let unapproved = warnings(&out, "mcp_server_unapproved");
    assert_eq!(unapproved.len(), 1, "{unapproved:?}");
    assert!(unapproved[0].contains("`proj`"), "{unapproved:?}");
    assert!(
        unapproved[0].contains("--trust-project-mcp"),
        "{unapproved:?}"
    );
    assert!(!marker.exists(), "an unapproved project server ran");
    assert!(
        !offered_tools(&provider.requests()[0].body)
            .iter()
            .any(|t| t.starts_with("mcp__"))
    );

    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &[
            "--trust-project-mcp",
            "--allow",
            "mcp__proj__get-sum",
            "What is 2+3?",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(marker.exists(), "--trust-project-mcp did not start it");
    assert!(warnings(&out, "mcp_server_unapproved").is_empty());
    assert_eq!(out.first("tool_result")["status"], "ok");

    std::fs::remove_file(&marker).expect("remove marker");
    // Approved as Splice reads it: the approval covers the files its config names too (the
    // marker, absent now).
    for entry in splice::mcp::load_project(&sandbox.root).expect("read .mcp.json") {
        splice::mcp::approval::approve(
            &splice::layout::Layout::at(&sandbox.data),
            &sandbox.root,
            &entry,
        )
        .expect("approve the server");
    }
    let out = exec(&sandbox, &provider, "anthropic", &["Hello again."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(marker.exists(), "an approved project server did not start");
    assert!(warnings(&out, "mcp_server_unapproved").is_empty());
}

/// A broken `.mcp.json` is a warning naming the file; the run goes on without the project's
/// servers and completes.
#[test]
fn a_broken_project_file_is_a_warning_and_the_run_completes() {
    let sandbox = Sandbox::new();
    sandbox.write(".mcp.json", "{ \"mcpServers\": ");
    let provider = FakeProvider::start(vec![anthropic::answer(&["Hi."])]);
    let out = exec(&sandbox, &provider, "anthropic", &["Hello."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let failed = warnings(&out, "mcp_server_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].contains(".mcp.json"), "{failed:?}");
    assert!(failed[0].contains("not JSON"), "{failed:?}");
    assert_eq!(out.final_result()["status"], "completed");
}

/// Whether a process is gone (or a zombie no one has reaped yet: dead either way).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// The parent pid of a process, from `/proc`.
fn parent_of(pid: &str) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the `(comm)`: state, then the parent's pid.
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)
        .map(str::to_string)
}

fn threads_of(pid: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |dir| dir.count())
}

/// SIGINT while an MCP call runs: the run ends with 130 and its interrupted result, and the
/// server's whole process group (its grandchild `sleep` included) is gone.
#[test]
fn sigint_during_a_long_call_ends_the_servers_process_group() {
    let sandbox = Sandbox::new();
    let pid_file = sandbox.dir.path().join("grandchild.pid");
    let pid_path = pid_file.display().to_string();
    let cancel_log = sandbox.dir.path().join("cancelled.jsonl");
    let cancel_path = cancel_log.display().to_string();
    configure(
        &sandbox,
        &[support::mcp::hostile(
            "hostile",
            &["slow", "fork"],
            &[
                ("HOSTILE_PID_FILE", pid_path.as_str()),
                ("HOSTILE_CANCEL_LOG", cancel_path.as_str()),
            ],
        )],
    );
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__hostile__sleep",
        json!({}),
        "Never.",
    ));
    let command = command(
        &sandbox,
        &provider,
        "anthropic",
        &["--permission-mode", "auto", "Sleep."],
    );
    // Signalled once the server is running the call: it runs each call in a thread of its
    // own, so the server (the grandchild's parent) then has a second thread.
    let out = support::run_and_signal(command, "INT", |lines| {
        support::wrote(lines, "tool_call")
            && std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|pid| parent_of(pid.trim()))
                .is_some_and(|server| threads_of(&server) >= 2)
    });
    out.assert_well_formed();
    assert_eq!(out.code, 130, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "error");
    assert_eq!(out.first("error")["code"], "interrupted");
    // The dropped call was cancelled on the server before the server was ended.
    let cancelled = std::fs::read_to_string(&cancel_log).unwrap_or_default();
    assert!(
        cancelled.contains("interrupted"),
        "no cancel: {cancelled:?}"
    );
    let pid = std::fs::read_to_string(&pid_file).expect("read pid_file");
    let pid = pid.trim();
    assert!(!pid.is_empty());
    // Reparented to init when its group was killed; reaped there (a bound, not a pause).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !gone(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "the server's grandchild {pid} outlived splice"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `--trust-project-mcp` is in `exec --help` and in the default invocation's help.
#[test]
fn trust_project_mcp_is_documented_in_help() {
    let sandbox = Sandbox::new();
    for args in [vec!["exec", "--help"], vec!["--help"]] {
        let mut command = sandbox.command("http://127.0.0.1:9");
        command.args(&args);
        let out = support::run_raw(command, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(out.stdout.contains("--trust-project-mcp"), "{args:?}");
    }
}

/// A call longer than `SPLICE_MCP_TOOL_TIMEOUT_MS` is a `timeout` result naming the server;
/// the run goes on.
#[test]
fn a_call_over_the_tool_timeout_is_a_timeout_result() {
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        &[support::mcp::hostile("hostile", &["slow"], &[])],
    );
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__hostile__sleep",
        json!({}),
        "Too slow.",
    ));
    let mut command = command(
        &sandbox,
        &provider,
        "anthropic",
        &["--permission-mode", "auto", "Sleep."],
    );
    command.env("SPLICE_MCP_TOOL_TIMEOUT_MS", "500");
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "timeout", "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap_or_default()
            .contains("`hostile`"),
        "{result}"
    );
    let blocks = tool_result_blocks(&provider.requests()[1].body);
    assert_eq!(blocks[0]["is_error"], true);
}

/// A 10 MB result is capped like any tool's output, in the event and for the model.
#[test]
fn a_huge_result_is_capped() {
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        &[support::mcp::hostile("hostile", &["huge"], &[])],
    );
    let provider = FakeProvider::start(calls_then_answers("mcp__hostile__huge", json!({}), "Big."));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--allow", "mcp__hostile__huge", "Get it all."],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok");
    assert_eq!(result["truncated"], true);
    let output = result["output"].as_str().unwrap_or_default();
    assert!(output.len() <= 31 * 1024, "{} bytes", output.len());
    assert!(output.contains("bytes omitted"));
    let blocks = tool_result_blocks(&provider.requests()[1].body);
    assert_eq!(blocks[0]["content"].as_str(), Some(output));
}

/// A timeout variable that is not a whole number of milliseconds is a usage error (exit 2)
/// naming it, before anything runs, not a default quietly used instead.
#[test]
fn a_bad_mcp_timeout_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![]);
    for (name, value) in [
        ("SPLICE_MCP_TOOL_TIMEOUT_MS", "soon"),
        ("SPLICE_MCP_STARTUP_TIMEOUT_MS", "0"),
    ] {
        let mut command = command(&sandbox, &provider, "anthropic", &["Hello."]);
        command.env(name, value);
        let out = run(command, None);
        out.assert_well_formed();
        assert_eq!(out.code, 2, "{}", out.stderr);
        let error = out.first("error");
        assert_eq!(error["code"], "usage_error");
        assert!(
            error["message"].as_str().unwrap_or_default().contains(name),
            "{error}"
        );
    }
    assert!(provider.requests().is_empty());
}

fn openai_offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

/// In a pipeline, the stage with the real tools (the code writer) is offered the MCP tools and
/// runs them; a reviewing stage is not, and a call of one there is an unknown tool.
#[test]
fn a_pipeline_code_writer_gets_mcp_tools_and_the_reviewing_stages_do_not() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[support::mcp::everything("everything")]);
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "cw_call",
            "mcp__everything__get-sum",
            json!({"a": 2, "b": 3}),
        ),
        openai::call_json(
            "cw_submit",
            "submit_code",
            json!({"files": [], "summary": "added it up"}),
        ),
        openai::call_json(
            "av_call",
            "mcp__everything__get-sum",
            json!({"a": 1, "b": 1}),
        ),
        openai::call_json(
            "av_submit",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["ok"]}),
        ),
    ]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--provider",
        "openai",
        "--tier",
        "standard",
        "--allow",
        "mcp__everything__*",
        "Add 2 and 3.",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stdout);
    let result = |id: &str| {
        out.of_type("tool_result")
            .into_iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    let requests = provider.requests();
    assert!(openai_offered(&requests[0].body).contains(&"mcp__everything__get-sum".to_string()));
    assert_eq!(result("cw_call")["status"], "ok");
    let verifier = openai_offered(&requests[2].body);
    assert!(
        !verifier.iter().any(|n| n.starts_with("mcp__")),
        "{verifier:?}"
    );
    let refused = result("av_call");
    assert_eq!(refused["status"], "error");
    assert!(
        refused["output"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool"),
        "{refused}"
    );
}

/// A streamable HTTP server's tools work in a run as a stdio server's do.
#[test]
fn a_streamable_http_servers_tool_runs_in_a_run() {
    let server = support::mcp::EverythingHttp::start();
    let sandbox = Sandbox::new();
    configure(
        &sandbox,
        &[ServerEntry {
            name: "web".into(),
            config: ServerConfig::Http {
                url: server.url.clone(),
                headers: Default::default(),
            },
            source: splice::mcp::Source::User,
            pins: Vec::new(),
        }],
    );
    let provider = FakeProvider::start(calls_then_answers(
        "mcp__web__get-sum",
        json!({"a": 20, "b": 22}),
        "42",
    ));
    let out = exec(
        &sandbox,
        &provider,
        "anthropic",
        &["--allow", "mcp__web__get-sum", "What is 20+22?"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.first("tool_result");
    assert_eq!(result["status"], "ok", "{result}");
    assert!(
        result["output"].as_str().unwrap_or_default().contains("42"),
        "{result}"
    );
}
