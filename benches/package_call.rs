//! Benchmark: one package tool call against a bare Node start on the same Node, side by side.
//!
//! Interleaved, 30 rounds (after 3 of warm-up, which also fills the stripped-TypeScript cache):
//! `splice pkg run assets/packages/json parse '{"text":"[1]"}' --json` (the whole command: the
//! splice process, validation, finding Node, the sandboxed call), the library's `call` (the
//! runtime alone), and `node -e 0`. Prints the medians and the ratios; the bar is 1.3×.
//!
//! Node: `SPLICE_NODE`, else `node` on PATH if 22.18+, else `target/node22` (which the tests and
//! `scripts/test` fetch). Run: `cargo bench --bench package_call` (optionally `-- 50` for the rounds).

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use splice::packages::package::Package;
use splice::packages::runtime::{self, CallRequest, NodeBinary};
use splice::permissions::sandbox;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");
const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/packages/json");
const DATA_ENV: &str = "SPLICE_DATA_DIR";

fn main() {
    // The runtime keeps its cache in the data directory: a scratch one, never yours. Set in a
    // child run of this bench (setting it here would need `unsafe`).
    if std::env::var_os(DATA_ENV).is_none() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        let me = std::env::current_exe().expect("find the bench's own executable");
        let status = Command::new(me)
            .args(std::env::args_os().skip(1))
            .env(DATA_ENV, data.path())
            .status()
            .expect("run me");
        std::process::exit(status.code().unwrap_or(1));
    }
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(30);
    let node_path = find_node();
    let node = runtime::find_node(Some(&node_path)).expect("find Node 22");
    sandbox::set_launcher(PathBuf::from(SPLICE));
    let package = Package::load(Path::new(OFFICIAL)).unwrap_or_else(|e| panic!("{e:?}"));
    let project = tempfile::tempdir().expect("create a temporary directory");
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime");
    let library = || {
        let started = Instant::now();
        let outcome = tokio.block_on(runtime::call(CallRequest {
            package: &package,
            tool: "parse",
            input: json!({"text": "[1]"}),
            project_root: project.path(),
            node: &node,
        }));
        let took = started.elapsed();
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        took
    };
    let (mut command_times, mut library_times, mut node_times) =
        (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds + 3 {
        let command = pkg_run(&node);
        let call = library();
        let bare = node_e0(&node);
        if round >= 3 {
            command_times.push(command);
            library_times.push(call);
            node_times.push(bare);
        }
    }
    let (command, call, bare) = (
        median(&mut command_times),
        median(&mut library_times),
        median(&mut node_times),
    );
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "package call vs `node -e 0` (Node {}), median of {rounds}, interleaved:\n  \
         node -e 0                 {:.1} ms\n  \
         runtime::call (library)   {:.1} ms  ({:.2}x)\n  \
         splice pkg run --json     {:.1} ms  ({:.2}x)\n  \
         bar: 1.30x",
        node.version_text(),
        ms(bare),
        ms(call),
        ms(call) / ms(bare),
        ms(command),
        ms(command) / ms(bare),
    );
}

fn pkg_run(node: &NodeBinary) -> Duration {
    let started = Instant::now();
    let output = Command::new(SPLICE)
        .args([
            "pkg",
            "run",
            OFFICIAL,
            "parse",
            r#"{"text":"[1]"}"#,
            "--json",
        ])
        .env("SPLICE_NODE", &node.path)
        .stdin(Stdio::null())
        .output()
        .expect("run splice");
    let took = started.elapsed();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    took
}

fn node_e0(node: &NodeBinary) -> Duration {
    let started = Instant::now();
    let status = Command::new(&node.path)
        .args(["-e", "0"])
        .stdin(Stdio::null())
        .status()
        .expect("run node");
    let took = started.elapsed();
    assert!(status.success());
    took
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// `SPLICE_NODE`, else `node` on PATH when it is new enough, else the tests' `target/node22`.
fn find_node() -> PathBuf {
    if let Some(path) = std::env::var_os("SPLICE_NODE").filter(|v| !v.is_empty()) {
        return PathBuf::from(path);
    }
    let new_enough = |path: &Path| runtime::find_node(Some(path)).is_ok();
    if let Some(path) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("node"))
            .find(|n| n.is_file())
    }) && new_enough(&path)
    {
        return path;
    }
    let fetched = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/node22/package/bin/node");
    if fetched.is_file() {
        return fetched;
    }
    panic!(
        "no Node 22.18+: set SPLICE_NODE, or run `python3 scripts/test_deps.py node` once to fetch it into target/node22"
    );
}
