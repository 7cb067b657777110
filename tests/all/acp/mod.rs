//! `splice acp` end to end: the real binary, driven by the official ACP TypeScript SDK
//! (`@agentclientprotocol/sdk`, pinned in scripts/test_deps.py, run by the package tests'
//! Node 22) as an editor drives it (client.mjs starts `splice acp` as its child), against the
//! fake provider. Malformed input is written raw.

mod attacks;
mod protocol;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support;
use support::Sandbox;
use support::fake_provider::FakeProvider;
use support::process::Running;

/// The SDK's entry module, fetched once into the target directory.
fn sdk() -> PathBuf {
    support::deps::fetch("acp-sdk", &[]).unwrap_or_else(|why| panic!("the ACP SDK: {why}"))
}

/// Run client.mjs with `scenario` (its `cwd` defaults to the sandbox's root) against the fake
/// provider; what it reports.
pub(crate) fn client(sandbox: &Sandbox, provider: &FakeProvider, scenario: Value) -> Value {
    client_with_env(sandbox, provider, scenario, &[])
}

/// [`client`] with `env` set for the agent besides the sandbox's.
fn client_with_env(
    sandbox: &Sandbox,
    provider: &FakeProvider,
    mut scenario: Value,
    env: &[(&str, &str)],
) -> Value {
    if scenario.get("cwd").is_none() {
        scenario["cwd"] = json!(sandbox.root.display().to_string());
    }
    let splice = sandbox.command(&provider.url);
    let mut command = Command::new(support::node::node22());
    command.env_clear();
    for (key, value) in splice.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/acp/client.mjs");
    command
        .envs(env.iter().copied())
        .arg(script)
        .env("SPLICE_BIN", env!("CARGO_BIN_EXE_splice"))
        .env("ACP_SDK", format!("file://{}", sdk().display()))
        .env("ACP_SCENARIO", scenario.to_string())
        .current_dir(&sandbox.root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = Running::start_group(&mut command).expect("start node");
    let out = support::process::finish(child, "the ACP client");
    let report = out
        .lines
        .last()
        .cloned()
        .unwrap_or_else(|| panic!("no report: {}\n{}", out.stdout, out.stderr));
    assert_eq!(out.code, 0, "{}", out.stderr);
    report
}

/// The updates of one kind (`sessionUpdate`), in order.
fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The text of every chunk of one kind, joined.
fn text_of(report: &Value, kind: &str) -> String {
    updates(report, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

pub(crate) fn light() -> Value {
    json!(["--provider", "openai", "--tier", "light"])
}

mod scenarios;
