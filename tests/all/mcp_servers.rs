//! MCP servers as tools (issue 13): the hub against the real npm reference servers over stdio
//! and streamable HTTP, our hostile server's failure modes, and `splice mcp`.

use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use splice::mcp::{CallError, HubOptions, McpHub, Progress, ServerState};

use crate::support;
use support::mcp;

/// A hub whose base environment is this process's plus two provider keys, to prove that
/// nothing but PATH, HOME and the locale reaches a server.
fn hub_in(cwd: &Path, startup_ms: u64, call_ms: u64) -> McpHub {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
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
    let options = HubOptions::from_vars(cwd.to_path_buf(), vars).unwrap_or_else(|e| panic!("{e}"));
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
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!sum.is_error);
    assert!(sum.text.contains('5'), "{}", sum.text);
    assert!(!sum.text.contains('6'), "{}", sum.text);
    // A call the server refuses (bad arguments) is a tool error, and the server stays ready.
    let refused = call(&hub, "mcp__everything__get-sum", json!({"a": "two"}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
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
        .unwrap_or_else(|e| panic!("{e}"));
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
    assert_eq!(fractions, [Some(0.25), Some(0.5), Some(0.75), Some(1.0)]);
    hub.shutdown().await;
}

#[tokio::test]
async fn images_resource_links_and_structured_content_come_back() {
    let hub = hub();
    hub.start(vec![mcp::everything("everything")]).await;
    let image = call(&hub, "mcp__everything__get-tiny-image", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(image.images.len(), 1, "{image:?}");
    assert_eq!(image.images[0].media_type, "image/png");
    assert!(image.images[0].data.starts_with("iVBORw0KGgo"), "a PNG");
    let links = call(
        &hub,
        "mcp__everything__get-resource-links",
        json!({"count": 2}),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
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
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(weather.text.contains("temperature"), "{}", weather.text);
    hub.shutdown().await;
}

#[tokio::test]
async fn the_memory_server_lists_its_tools() {
    let scratch = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
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
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!created.is_error, "{created:?}");
    let graph = call(&hub, "mcp__memory__read_graph", json!({}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
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
    }])
    .await;
    let web = status(&hub, "web");
    assert_eq!(web.state, ServerState::Ready, "{web:?}");
    assert_eq!(web.target, server.url);
    let sum = call(&hub, "mcp__web__get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(sum.text.contains('5'), "{}", sum.text);
    assert!(!format!("{:?}", hub.statuses()).contains("secret-header-value"));
    hub.shutdown().await;
}

#[tokio::test]
async fn an_http_server_that_is_not_there_fails_alone() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let hub = hub_in(&std::env::temp_dir(), 5_000, 60_000);
    hub.start(vec![
        splice::mcp::ServerEntry {
            name: "gone".into(),
            config: splice::mcp::ServerConfig::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                headers: Default::default(),
            },
            source: splice::mcp::Source::User,
        },
        mcp::hostile("fine", &[], &[]),
    ])
    .await;
    assert_eq!(status(&hub, "gone").state, ServerState::Failed);
    assert!(status(&hub, "gone").last_error.is_some());
    assert_eq!(status(&hub, "fine").state, ServerState::Ready);
    hub.shutdown().await;
}
