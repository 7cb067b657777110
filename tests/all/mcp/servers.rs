//! MCP servers as tools (issue 13): the hub against the real npm reference servers over stdio
//! and streamable HTTP, our hostile server's failure modes, and `splice mcp`.

use crate::support;

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use splice::mcp::{CallError, HubNotice, HubOptions, McpHub, Progress, ServerState};
use support::mcp;

/// A hub whose base environment is this process's plus two provider keys, to prove that
/// nothing but PATH, HOME and the locale reaches a server.
fn hub_in(cwd: &Path, startup_ms: u64, call_ms: u64) -> McpHub {
    hub_with(cwd, startup_ms, call_ms, &[])
}

/// [`hub_in`] with more variables in the base environment.
fn hub_with(cwd: &Path, startup_ms: u64, call_ms: u64, extra: &[(&str, &str)]) -> McpHub {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    vars.extend(extra.iter().map(|(k, v)| (k.into(), v.into())));
    vars.push(("ANTHROPIC_API_KEY".into(), "sk-ant-must-not-leak".into()));
    vars.push(("OPENAI_API_KEY".into(), "sk-must-not-leak".into()));
    vars.push((
        "SPLICE_MCP_STARTUP_TIMEOUT_MS".into(),
        startup_ms.to_string().into(),
    ));
    vars.push((
        "SPLICE_MCP_TOOL_TIMEOUT_MS".into(),
        call_ms.to_string().into(),
    ));
    let options =
        HubOptions::from_vars(cwd.to_path_buf(), vars).expect("hub options from the variables");
    assert_eq!(options.startup_timeout, Duration::from_millis(startup_ms));
    McpHub::new(options)
}

fn hub() -> McpHub {
    hub_in(&std::env::temp_dir(), 30_000, 60_000)
}

fn ignore_progress() -> Box<dyn Fn(Progress) + Send + Sync> {
    Box::new(|_| {})
}

async fn call(hub: &McpHub, wire: &str, args: Value) -> Result<splice::mcp::McpOutput, CallError> {
    let tool = hub
        .tool(wire)
        .unwrap_or_else(|| panic!("no tool {wire}: {:?}", hub.statuses()));
    hub.call(&tool, args, ignore_progress()).await
}

fn status(hub: &McpHub, name: &str) -> splice::mcp::ServerStatus {
    hub.statuses()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

#[tokio::test]
async fn everything_over_stdio_lists_its_tools_and_sums() {
    let hub = hub();
    hub.start(vec![mcp::everything("everything")]).await;
    let everything = status(&hub, "everything");
    assert_eq!(everything.state, ServerState::Ready, "{everything:?}");
    for wire in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
        "mcp__everything__trigger-long-running-operation",
    ] {
        assert!(
            everything.tools.iter().any(|t| t == wire),
            "{wire}: {everything:?}"
        );
    }
    let sum = call(&hub, "mcp__everything__get-sum", json!({"a": 2, "b": 3}))
        .await
        .expect("call mcp__everything__get-sum");
    assert!(!sum.is_error);
    assert!(sum.text.contains('5'), "{}", sum.text);
    assert!(!sum.text.contains('6'), "{}", sum.text);
    // A call the server refuses (bad arguments) is a tool error, and the server stays ready.
    let refused = call(&hub, "mcp__everything__get-sum", json!({"a": "two"}))
        .await
        .expect("call mcp__everything__get-sum");
    assert!(refused.is_error, "{refused:?}");
    assert_eq!(status(&hub, "everything").state, ServerState::Ready);
    hub.shutdown().await;
    assert!(hub.tools().is_empty());
    // Idempotent, and calls after it are refused rather than hanging.
    hub.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_arrive_with_fractions() {
    let hub = hub();
    hub.start(vec![mcp::everything("everything")]).await;
    let tool = hub
        .tool("mcp__everything__trigger-long-running-operation")
        .unwrap_or_else(|| panic!("{:?}", hub.statuses()));
    let seen: Arc<Mutex<Vec<Progress>>> = Arc::default();
    let sink = seen.clone();
    let out = hub
        .call(
            &tool,
            json!({"duration": 1, "steps": 4}),
            Box::new(move |p| sink.lock().unwrap_or_else(|e| e.into_inner()).push(p)),
        )
        .await
        .expect("call tool");
    assert!(
        out.text.contains("Long running operation completed"),
        "{}",
        out.text
    );
    let fractions: Vec<Option<f64>> = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(|p| p.fraction)
        .collect();
    // The last one may come after the result (rmcp handles notifications on tasks of their
    // own), and then it is dropped: progress is only reported while a call runs.
    assert!(
        fractions.starts_with(&[Some(0.25), Some(0.5), Some(0.75)]) && fractions.len() <= 4,
        "{fractions:?}"
    );
    assert!(
        fractions.len() < 4 || fractions[3] == Some(1.0),
        "{fractions:?}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn images_resource_links_and_structured_content_come_back() {
    let hub = hub();
    hub.start(vec![mcp::everything("everything")]).await;
    let image = call(&hub, "mcp__everything__get-tiny-image", json!({}))
        .await
        .expect("call mcp__everything__get-tiny-image");
    assert_eq!(image.images.len(), 1, "{image:?}");
    assert_eq!(image.images[0].media_type, "image/png");
    assert!(image.images[0].data.starts_with("iVBORw0KGgo"), "a PNG");
    let links = call(
        &hub,
        "mcp__everything__get-resource-links",
        json!({"count": 2}),
    )
    .await
    .expect("call mcp__everything__get-resource-links");
    let link_lines: Vec<&str> = links
        .text
        .lines()
        .filter(|l| l.starts_with("[resource link: "))
        .collect();
    assert_eq!(link_lines.len(), 2, "{}", links.text);
    assert!(
        link_lines.iter().all(|l| l.contains("<demo://")),
        "{}",
        links.text
    );
    let weather = call(
        &hub,
        "mcp__everything__get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    .expect("call mcp__everything__get-structured-content");
    assert!(weather.text.contains("temperature"), "{}", weather.text);
    hub.shutdown().await;
}

#[tokio::test]
async fn the_memory_server_lists_its_tools() {
    let scratch = tempfile::tempdir().expect("create a temporary directory");
    let hub = hub();
    hub.start(vec![mcp::memory(
        "memory",
        &scratch.path().join("memory.jsonl"),
    )])
    .await;
    let memory = status(&hub, "memory");
    assert_eq!(memory.state, ServerState::Ready, "{memory:?}");
    for wire in ["mcp__memory__create_entities", "mcp__memory__read_graph"] {
        assert!(memory.tools.iter().any(|t| t == wire), "{wire}: {memory:?}");
    }
    let created = call(
        &hub,
        "mcp__memory__create_entities",
        json!({"entities": [{"name": "splice", "entityType": "tool", "observations": ["written in Rust"]}]}),
    )
    .await
    .expect("call mcp__memory__create_entities");
    assert!(!created.is_error, "{created:?}");
    let graph = call(&hub, "mcp__memory__read_graph", json!({}))
        .await
        .expect("call mcp__memory__read_graph");
    assert!(graph.text.contains("written in Rust"), "{}", graph.text);
    hub.shutdown().await;
}

#[tokio::test]
async fn everything_over_streamable_http_sums() {
    let server = mcp::EverythingHttp::start();
    let hub = hub();
    hub.start(vec![splice::mcp::ServerEntry {
        name: "web".into(),
        config: splice::mcp::ServerConfig::Http {
            url: server.url.clone(),
            headers: [(
                "X-Test-Token".to_string(),
                "secret-header-value".to_string(),
            )]
            .into_iter()
            .collect(),
        },
        source: splice::mcp::Source::User,
        pins: Vec::new(),
    }])
    .await;
    let web = status(&hub, "web");
    assert_eq!(web.state, ServerState::Ready, "{web:?}");
    assert_eq!(web.target, server.url);
    let sum = call(&hub, "mcp__web__get-sum", json!({"a": 2, "b": 3}))
        .await
        .expect("call mcp__web__get-sum");
    assert!(sum.text.contains('5'), "{}", sum.text);
    assert!(!format!("{:?}", hub.statuses()).contains("secret-header-value"));
    hub.shutdown().await;
}

#[tokio::test]
async fn an_http_server_that_is_not_there_fails_alone() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("pick a free loopback port");
    let hub = hub_in(&std::env::temp_dir(), 5_000, 60_000);
    hub.start(vec![
        splice::mcp::ServerEntry {
            name: "gone".into(),
            config: splice::mcp::ServerConfig::Http {
                url: format!("http://127.0.0.1:{port}/mcp?token=secret-in-query"),
                headers: Default::default(),
            },
            source: splice::mcp::Source::User,
            pins: Vec::new(),
        },
        mcp::hostile("fine", &[], &[]),
    ])
    .await;
    assert_eq!(status(&hub, "gone").state, ServerState::Failed);
    let why = status(&hub, "gone").last_error.unwrap_or_default();
    assert!(
        why.contains(&format!("http://127.0.0.1:{port}/mcp?…")),
        "{why}"
    );
    assert!(
        !why.contains("secret-in-query") && !why.contains("rmcp::"),
        "{why}"
    );
    assert_eq!(status(&hub, "fine").state, ServerState::Ready);
    hub.shutdown().await;
}

/// Poll `check` until it holds, for at most `limit` (never a timing assertion: only a bound
/// on how long to wait for something that must happen).
async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}

#[tokio::test]
async fn garbage_on_stdout_is_skipped_and_the_connection_lives() {
    let hub = hub();
    hub.start(vec![mcp::hostile("noisy", &["garbage"], &[])])
        .await;
    assert_eq!(
        status(&hub, "noisy").state,
        ServerState::Ready,
        "{:?}",
        hub.statuses()
    );
    for word in ["one", "two"] {
        let out = call(&hub, "mcp__noisy__echo", json!({"text": word}))
            .await
            .expect("call mcp__noisy__echo");
        assert_eq!(out.text, format!("echo: {word}"));
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_fails_that_server_alone() {
    let hub = hub();
    let mut notices = hub.subscribe();
    hub.start(vec![
        mcp::hostile("crashy", &["crash-mid-call"], &[]),
        mcp::hostile("steady", &[], &[]),
    ])
    .await;
    let error = call(&hub, "mcp__crashy__crash", json!({}))
        .await
        .err()
        .unwrap_or_else(|| panic!("the crash returned a result"));
    let CallError::Failed { server, reason } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(server, "crashy");
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert!(reason.contains("hostile: crashing on purpose"), "{reason}");
    let crashy = status(&hub, "crashy");
    assert_eq!(crashy.state, ServerState::Failed);
    assert!(crashy.tools.is_empty());
    assert!(hub.tool("mcp__crashy__echo").is_none());
    let notice = tokio::time::timeout(Duration::from_secs(10), notices.recv())
        .await
        .expect("a notice within 10 s")
        .expect("the notice channel is open");
    assert!(
        matches!(&notice, HubNotice::ServerFailed { server, .. } if server == "crashy"),
        "{notice:?}"
    );
    let steady = call(&hub, "mcp__steady__echo", json!({"text": "still here"}))
        .await
        .expect("call mcp__steady__echo");
    assert_eq!(steady.text, "echo: still here");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_10_mb_result_is_capped() {
    let hub = hub();
    hub.start(vec![mcp::hostile("big", &["huge"], &[])]).await;
    let out = call(&hub, "mcp__big__huge", json!({}))
        .await
        .expect("call mcp__big__huge");
    assert!(out.text.len() <= splice::mcp::content::MAX_TEXT_BYTES + 100);
    assert!(out.text.len() >= splice::mcp::content::MAX_TEXT_BYTES);
    assert!(
        out.text.ends_with(&format!(
            "[… {} more bytes of the result were left out]",
            10 * 1024 * 1024 - splice::mcp::content::MAX_TEXT_BYTES
        )),
        "{}",
        &out.text[out.text.len() - 80..]
    );
    // The server is still usable afterwards.
    let echo = call(&hub, "mcp__big__echo", json!({"text": "after"}))
        .await
        .expect("call mcp__big__echo");
    assert_eq!(echo.text, "echo: after");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_fails_and_start_returns() {
    let hub = hub_in(&std::env::temp_dir(), 5_000, 60_000);
    hub.start(vec![
        mcp::hostile("mute", &["hang-init"], &[]),
        mcp::hostile("steady", &[], &[]),
    ])
    .await;
    let mute = status(&hub, "mute");
    assert_eq!(mute.state, ServerState::Failed);
    let why = mute.last_error.unwrap_or_default();
    assert!(
        why.contains("did not finish starting") && why.contains("5000 ms"),
        "{why}"
    );
    assert_eq!(status(&hub, "steady").state, ServerState::Ready);
    hub.ready().await;
    hub.shutdown().await;
}

fn cancellations(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn dropping_a_call_sends_the_server_notifications_cancelled() {
    let scratch = tempfile::tempdir().expect("create a temporary directory");
    let log = scratch.path().join("cancelled.jsonl");
    let hub = hub();
    let started_file = scratch.path().join("started").display().to_string();
    hub.start(vec![mcp::hostile(
        "slow",
        &["slow"],
        &[
            ("HOSTILE_CANCEL_LOG", &log.display().to_string()),
            ("HOSTILE_STARTED_FILE", &started_file),
        ],
    )])
    .await;
    // The run interrupted: the call's future is dropped once the server is working on it.
    let started = scratch.path().join("started");
    {
        let pending = call(&hub, "mcp__slow__sleep", json!({}));
        tokio::pin!(pending);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !started.exists() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the sleep never started"
            );
            tokio::select! {
                answer = &mut pending => panic!("the sleep answered: {answer:?}"),
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
    }
    assert!(
        eventually(Duration::from_secs(10), || !cancellations(&log).is_empty()).await,
        "the server never got notifications/cancelled"
    );
    let seen = cancellations(&log);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0]["requestId"].is_number(), "{seen:?}");
    assert_eq!(status(&hub, "slow").state, ServerState::Ready);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_past_the_timeout_is_a_timeout_and_is_cancelled() {
    let scratch = tempfile::tempdir().expect("create a temporary directory");
    let log = scratch.path().join("cancelled.jsonl");
    let hub = hub_in(&std::env::temp_dir(), 30_000, 700);
    hub.start(vec![mcp::hostile(
        "slow",
        &["slow"],
        &[("HOSTILE_CANCEL_LOG", &log.display().to_string())],
    )])
    .await;
    let error = call(&hub, "mcp__slow__sleep", json!({}))
        .await
        .err()
        .unwrap_or_else(|| panic!("the sleep answered"));
    assert_eq!(
        error,
        CallError::Timeout {
            server: "slow".into(),
            seconds: 1
        }
    );
    assert!(
        eventually(Duration::from_secs(10), || cancellations(&log).len() == 1).await,
        "{:?}",
        cancellations(&log)
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn tools_list_changed_updates_the_tools() {
    let hub = hub();
    let mut notices = hub.subscribe();
    hub.start(vec![mcp::hostile("grows", &["list-changed"], &[])])
        .await;
    assert!(hub.tool("mcp__grows__extra").is_none());
    call(&hub, "mcp__grows__grow", json!({}))
        .await
        .expect("call mcp__grows__grow");
    let notice = tokio::time::timeout(Duration::from_secs(10), notices.recv())
        .await
        .expect("a notice within 10 s")
        .expect("the notice channel is open");
    assert_eq!(
        notice,
        HubNotice::ToolsChanged {
            server: "grows".into()
        }
    );
    let extra = hub
        .tool("mcp__grows__extra")
        .unwrap_or_else(|| panic!("{:?}", hub.statuses()));
    assert_eq!(extra.description, "Added by `grow`.");
    hub.shutdown().await;
}

/// What a server behind a proxy needs, and nothing secret.
const PROXY_ENV: [(&str, &str); 5] = [
    ("HTTPS_PROXY", "http://proxy.invalid:3128"),
    ("NODE_EXTRA_CA_CERTS", "/etc/corp-ca.pem"),
    ("PIP_INDEX_URL", "https://pypi.invalid/simple"),
    ("UNLISTED_SETTING", "not-passed"),
    ("GITHUB_TOKEN", "ghp_must_not_leak_0123456789"),
];

/// The hostile server `name` with `env-dump` (and `modes`), passing `PIP_INDEX_URL` by name.
fn passing(name: &str, modes: &[&str]) -> splice::mcp::ServerEntry {
    let mut modes = modes.to_vec();
    modes.push("env-dump");
    let mut entry = mcp::hostile(name, &modes, &[("CONFIGURED", "yes")]);
    if let splice::mcp::ServerConfig::Stdio {
        env_passthrough, ..
    } = &mut entry.config
    {
        env_passthrough.push("PIP_INDEX_URL".into());
    }
    entry
}

#[tokio::test]
async fn a_server_gets_path_home_locale_proxies_its_passed_names_and_its_configured_env() {
    let hub = hub_with(&std::env::temp_dir(), 30_000, 60_000, &PROXY_ENV);
    hub.start(vec![passing("envy", &[])]).await;
    let out = call(&hub, "mcp__envy__env", json!({}))
        .await
        .expect("call mcp__envy__env");
    let env: serde_json::Map<String, Value> =
        serde_json::from_str(&out.text).unwrap_or_else(|e| panic!("{e}: {}", out.text));
    assert_eq!(env.get("CONFIGURED"), Some(&json!("yes")));
    assert_eq!(
        env.get("HTTPS_PROXY"),
        Some(&json!("http://proxy.invalid:3128"))
    );
    assert_eq!(
        env.get("NODE_EXTRA_CA_CERTS"),
        Some(&json!("/etc/corp-ca.pem"))
    );
    assert_eq!(
        env.get("PIP_INDEX_URL"),
        Some(&json!("https://pypi.invalid/simple"))
    );
    assert!(env.contains_key("PATH"));
    for key in env.keys() {
        assert!(
            [
                "PATH",
                "HOME",
                "LANG",
                "LANGUAGE",
                "CONFIGURED",
                "PIP_INDEX_URL"
            ]
            .contains(&key.as_str())
                || key.starts_with("LC_")
                || splice::mcp::DEFAULT_PASSTHROUGH.contains(&key.as_str()),
            "the server got {key}: {env:?}"
        );
    }
    for secret in ["GITHUB_TOKEN", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
        assert!(!env.contains_key(secret), "the server got {secret}");
    }
    assert!(!out.text.contains("must_not_leak") && !out.text.contains("must-not-leak"));
    hub.shutdown().await;
}

/// A server that does not start in time is failed with the names of what it got (never the
/// values) and the config key that passes more.
#[tokio::test]
async fn a_start_timeout_names_the_variables_the_server_got_and_how_to_pass_more() {
    let hub = hub_with(&std::env::temp_dir(), 2_000, 60_000, &PROXY_ENV);
    hub.start(vec![passing("mute", &["hang-init"])]).await;
    let mute = status(&hub, "mute");
    assert_eq!(mute.state, ServerState::Failed);
    let why = mute.last_error.unwrap_or_default();
    assert!(why.contains("did not finish starting"), "{why}");
    for name in ["PATH", "HTTPS_PROXY", "PIP_INDEX_URL", "CONFIGURED"] {
        assert!(why.contains(name), "{name}: {why}");
    }
    assert!(why.contains("`envPassthrough`"), "{why}");
    assert!(
        !why.contains("GITHUB_TOKEN") && !why.contains("UNLISTED_SETTING"),
        "{why}"
    );
    assert!(!why.contains("proxy.invalid"), "a value is shown: {why}");
    hub.shutdown().await;
}

fn alive(pid: i32) -> bool {
    // A zombie has ended; only its parent's reaping is left.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

/// A hub with the `fork` server started, and the pid of the grandchild it left running.
async fn forking_hub(scratch: &Path) -> (McpHub, i32) {
    let pid_file = scratch.join("grandchild.pid");
    let hub = hub();
    hub.start(vec![mcp::hostile(
        "forks",
        &["fork"],
        &[("HOSTILE_PID_FILE", &pid_file.display().to_string())],
    )])
    .await;
    assert_eq!(status(&hub, "forks").state, ServerState::Ready);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .expect("read pid_file")
        .trim()
        .parse()
        .expect("parse pid_file");
    assert!(
        alive(pid),
        "the grandchild should run while the server does"
    );
    (hub, pid)
}

#[tokio::test]
async fn shutdown_ends_what_a_server_started() {
    let scratch = tempfile::tempdir().expect("create a temporary directory");
    let (hub, pid) = forking_hub(scratch.path()).await;
    hub.shutdown().await;
    assert!(
        eventually(Duration::from_secs(5), || !alive(pid)).await,
        "the grandchild {pid} outlived the hub"
    );
}

#[tokio::test]
async fn a_hub_dropped_without_shutdown_still_ends_its_servers() {
    let scratch = tempfile::tempdir().expect("create a temporary directory");
    let (hub, pid) = forking_hub(scratch.path()).await;
    let clone = hub.clone();
    drop(hub);
    drop(clone);
    assert!(
        eventually(Duration::from_secs(10), || !alive(pid)).await,
        "the grandchild {pid} outlived the dropped hub"
    );
}

// ---- `splice mcp` -------------------------------------------------------------------------

fn splice_mcp(sandbox: &support::Sandbox, args: &[&str]) -> support::Outcome {
    let mut command = sandbox.command("http://127.0.0.1:9");
    command.arg("mcp").args(args);
    support::run_raw(command, None)
}

fn config_path(sandbox: &support::Sandbox) -> std::path::PathBuf {
    sandbox.dir.path().join("config.json")
}

fn config(sandbox: &support::Sandbox) -> Value {
    let text = std::fs::read_to_string(config_path(sandbox)).expect("read the config file");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn mcp_add_then_list_shows_everything_ready_with_get_sum() {
    let sandbox = support::Sandbox::new();
    std::fs::write(
        config_path(&sandbox),
        r#"{"model": "claude-x", "allow": ["read"], "theme": "dark"}"#,
    )
    .expect("write the config file");
    let (node, args) = mcp::everything_command();
    let mut add = vec![
        "add",
        "everything",
        "--env",
        "GREETING=hi",
        "--",
        node.as_str(),
    ];
    add.extend(args.iter().map(String::as_str));
    let added = splice_mcp(&sandbox, &add);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert!(
        added.stdout.contains("Added MCP server `everything`"),
        "{}",
        added.stdout
    );
    let written = config(&sandbox);
    // The other keys stay, in their order, and the server is in the shape scripts read.
    let keys: Vec<&String> = written
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    assert_eq!(keys, ["model", "allow", "theme", "mcpServers"]);
    assert_eq!(
        written["mcpServers"]["everything"],
        json!({"command": node, "args": args, "env": {"GREETING": "hi"}})
    );
    let listed = splice_mcp(&sandbox, &["list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.starts_with("everything  ready  (user)  "),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains("mcp__everything__get-sum"),
        "{}",
        listed.stdout
    );
    let as_json = splice_mcp(&sandbox, &["list", "--json"]);
    assert_eq!(as_json.code, 0, "{}", as_json.stderr);
    let document: Value = serde_json::from_str(as_json.stdout.trim())
        .unwrap_or_else(|e| panic!("{e}: {}", as_json.stdout));
    let server = &document["servers"][0];
    assert_eq!(server["name"], "everything");
    assert_eq!(server["state"], "ready");
    assert_eq!(server["source"], "user");
    assert!(server.get("lastError").is_none(), "{server}");
    assert!(
        server["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("mcp__everything__get-sum")))
    );
}

#[test]
fn mcp_add_refuses_a_taken_or_invalid_name_and_remove_an_unknown_one() {
    let sandbox = support::Sandbox::new();
    let url = ["--url", "https://mcp.example.invalid/mcp"];
    let first = splice_mcp(
        &sandbox,
        &[
            "add",
            "docs",
            url[0],
            url[1],
            "--header",
            "Authorization: Bearer tok",
        ],
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(
        config(&sandbox)["mcpServers"]["docs"],
        json!({"type": "http", "url": url[1], "headers": {"Authorization": "Bearer tok"}})
    );
    let before = std::fs::read_to_string(config_path(&sandbox)).unwrap_or_default();
    let again = splice_mcp(
        &sandbox,
        &["add", "docs", "--url", "https://other.invalid/mcp"],
    );
    assert_eq!(again.code, 2);
    assert!(
        again.stderr.contains("already in") && again.stderr.contains("--force"),
        "{}",
        again.stderr
    );
    let bad = splice_mcp(&sandbox, &["add", "a__b", "--", "true"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("invalid server name `a__b`"),
        "{}",
        bad.stderr
    );
    let neither = splice_mcp(&sandbox, &["add", "x"]);
    assert_eq!(neither.code, 2);
    assert!(neither.stderr.contains("-- COMMAND"), "{}", neither.stderr);
    let scheme = splice_mcp(&sandbox, &["add", "x", "--url", "file:///etc/passwd"]);
    assert_eq!(scheme.code, 2, "{}", scheme.stderr);
    // None of the refusals touched the file.
    assert_eq!(
        std::fs::read_to_string(config_path(&sandbox)).unwrap_or_default(),
        before
    );
    let forced = splice_mcp(&sandbox, &["add", "docs", "--force", "--", "true"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert_eq!(config(&sandbox)["mcpServers"]["docs"]["command"], "true");
    let unknown = splice_mcp(&sandbox, &["remove", "nope"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown.stderr.contains("no MCP server named `nope`"),
        "{}",
        unknown.stderr
    );
    let removed = splice_mcp(&sandbox, &["remove", "docs"]);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert_eq!(config(&sandbox), json!({}));
}

#[test]
fn mcp_list_with_a_broken_config_exits_2_naming_the_key() {
    let sandbox = support::Sandbox::new();
    std::fs::write(
        config_path(&sandbox),
        r#"{"mcpServers": {"tools": {"command": "x", "cwd": "/"}}}"#,
    )
    .expect("write the config file");
    for args in [&["list"][..], &["add", "y", "--", "true"]] {
        let listed = splice_mcp(&sandbox, args);
        assert_eq!(listed.code, 2, "{args:?}: {}", listed.stderr);
        assert!(
            listed.stderr.contains("mcpServers.tools"),
            "{}",
            listed.stderr
        );
        assert!(listed.stderr.contains("cwd"), "{}", listed.stderr);
        assert!(listed.stdout.is_empty(), "{}", listed.stdout);
    }
    let mut timeout = sandbox.command("http://127.0.0.1:9");
    std::fs::write(config_path(&sandbox), "{}").expect("write the config file");
    timeout
        .args(["mcp", "list"])
        .env("SPLICE_MCP_STARTUP_TIMEOUT_MS", "soon");
    let refused = support::run_raw(timeout, None);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("SPLICE_MCP_STARTUP_TIMEOUT_MS"),
        "{}",
        refused.stderr
    );
    sandbox.write(
        ".mcp.json",
        r#"{"mcpServers": {"p": {"command": "x", "url": "http://x.invalid"}}}"#,
    );
    let project = splice_mcp(&sandbox, &["list"]);
    assert_eq!(project.code, 2);
    assert!(project.stderr.contains(".mcp.json"), "{}", project.stderr);
    assert!(
        project.stderr.contains("mcpServers.p"),
        "{}",
        project.stderr
    );
}

#[test]
fn mcp_list_starts_project_servers_only_when_trusted_and_reports_failures() {
    let sandbox = support::Sandbox::new();
    let hostile = mcp::hostile("x", &[], &[]);
    let splice::mcp::ServerConfig::Stdio { command, args, .. } = hostile.config else {
        panic!("stdio");
    };
    sandbox.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "proj": {"command": command, "args": args},
            "broken": {"command": "/nonexistent/server"}
        }})
        .to_string(),
    );
    let listed = splice_mcp(&sandbox, &["list", "--json"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let document: Value =
        serde_json::from_str(listed.stdout.trim()).expect("parse listed.stdout as JSON");
    let states: Vec<(String, String)> = document["servers"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| {
                    (
                        s["name"].as_str().unwrap_or_default().into(),
                        s["state"].as_str().unwrap_or_default().into(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        states,
        [
            ("broken".to_string(), "unapproved".to_string()),
            ("proj".into(), "unapproved".into())
        ]
    );
    let trusted = splice_mcp(&sandbox, &["list", "--trust-project-mcp"]);
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(
        trusted.stdout.contains("proj  ready  (project)"),
        "{}",
        trusted.stdout
    );
    assert!(
        trusted.stdout.contains("mcp__proj__echo"),
        "{}",
        trusted.stdout
    );
    assert!(
        trusted.stdout.contains("broken  failed  (project)"),
        "{}",
        trusted.stdout
    );
    assert!(
        trusted
            .stdout
            .contains("cannot start `/nonexistent/server`"),
        "{}",
        trusted.stdout
    );
}

/// `splice mcp add` is how a first server gets configured: a config file `SPLICE_CONFIG` names
/// but that does not exist yet is created (owner-only), where a run would refuse it.
#[test]
fn mcp_add_creates_the_named_config_file_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let sandbox = support::Sandbox::new();
    std::fs::remove_file(config_path(&sandbox)).expect("remove the config file");
    let added = splice_mcp(&sandbox, &["add", "local", "--", "true"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert_eq!(
        config(&sandbox)["mcpServers"]["local"]["command"],
        json!("true")
    );
    let mode = std::fs::metadata(config_path(&sandbox))
        .map(|m| m.permissions().mode() & 0o777)
        .expect("stat the config file");
    assert_eq!(mode, 0o600);
}

/// `mcp add --env-passthrough NAME` writes the server's `envPassthrough`; a secret-looking
/// name is refused (exit 2) and the config file is left as it was.
#[test]
fn mcp_add_passes_variables_by_name_and_refuses_a_secret_one() {
    let sandbox = support::Sandbox::new();
    let added = splice_mcp(
        &sandbox,
        &[
            "add",
            "pipsrv",
            "--env-passthrough",
            "PIP_INDEX_URL",
            "--",
            "python3",
            "srv.py",
        ],
    );
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert_eq!(
        config(&sandbox)["mcpServers"]["pipsrv"],
        json!({"command": "python3", "args": ["srv.py"], "env": {}, "envPassthrough": ["PIP_INDEX_URL"]})
    );
    let before = std::fs::read_to_string(config_path(&sandbox)).unwrap_or_default();
    let secret = splice_mcp(
        &sandbox,
        &[
            "add",
            "leaky",
            "--env-passthrough",
            "OPENAI_API_KEY",
            "--",
            "python3",
            "srv.py",
        ],
    );
    assert_eq!(secret.code, 2, "{}", secret.stderr);
    assert!(
        secret.stderr.contains("OPENAI_API_KEY"),
        "{}",
        secret.stderr
    );
    assert_eq!(
        std::fs::read_to_string(config_path(&sandbox)).unwrap_or_default(),
        before
    );
}
