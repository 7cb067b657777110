//! Benchmark: a burst against `splice registry serve` on loopback, as the issue states it:
//! 50 concurrent clients make 1,000 version-metadata reads and 200 archive downloads. Prints
//! p50/p99/max per kind and whether metadata p99 is under 50 ms; any failed request fails the
//! bench. Run: `cargo build --release --locked -p splice-registry && cargo bench --bench
//! registry_burst` (release builds of the server, `splice-registry`, which `splice registry`
//! becomes from beside `splice`, and of the client).

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splice::packages::archive;

const SPLICE: &str = env!("CARGO_BIN_EXE_splice");
const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/packages/json");

fn splice(data: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(SPLICE)
        .arg("registry")
        .args(args)
        .arg("--data")
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start splice");
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).expect("write to input");
    }
    let out = child.wait_with_output().expect("wait for child");
    assert!(out.status.success(), "registry {args:?} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn figures(mut times: Vec<Duration>) -> (f64, f64, f64) {
    times.sort();
    let at = |p: f64| {
        let index = ((times.len() as f64 - 1.0) * p).round() as usize;
        times[index.min(times.len() - 1)].as_secs_f64() * 1000.0
    };
    (at(0.5), at(0.99), at(1.0))
}

fn main() {
    let server = Path::new(SPLICE).with_file_name("splice-registry");
    assert!(
        server.is_file(),
        "there is no {}: build it first with `cargo build --release --locked -p splice-registry`",
        server.display()
    );
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let data = dir.path().join("registry");
    splice(
        &data,
        &[
            "user",
            "add",
            "bench",
            "--namespace",
            "bench",
            "--password-stdin",
        ],
        "bench password\n",
    );
    let mut server = Command::new(SPLICE)
        .args([
            "registry",
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--device-interval",
            "1",
            "--data",
        ])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start splice");
    let mut url = String::new();
    BufReader::new(server.stdout.take().expect("no stdout"))
        .read_line(&mut url)
        .expect("read a line from server's stdout");
    let url = url.trim().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime");
    let bytes = archive::pack(Path::new(OFFICIAL))
        .expect("pack the official package")
        .bytes;
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(Path::new(OFFICIAL).join("manifest.json")).unwrap_or_default(),
    )
    .unwrap_or_default();
    let version = manifest["version"].as_str().unwrap_or_default().to_string();
    // The official package is splice/json: the bench user gets that namespace too.
    splice(
        &data,
        &["user", "add", "bench", "--namespace", "splice"],
        "",
    );
    let client = splice::http::client_builder()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let token = runtime.block_on(async {
        let code: Value = serde_json::from_slice(
            &client
                .post(format!("{url}/api/v1/device/code"))
                .send()
                .await
                .expect("POST <url>/api/v1/device/code")
                .bytes()
                .await
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        splice(
            &data,
            &[
                "approve",
                code["user_code"].as_str().unwrap_or_default(),
                "--user",
                "bench",
            ],
            "",
        );
        let answer: Value = serde_json::from_slice(
            &client
                .post(format!("{url}/api/v1/device/token"))
                .header("content-type", "application/json")
                .body(json!({"device_code": code["device_code"]}).to_string())
                .send()
                .await
                .expect("POST <url>/api/v1/device/token")
                .bytes()
                .await
                .unwrap_or_default(),
        )
        .unwrap_or_default();
        answer["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    });
    let meta = format!("{url}/api/v1/packages/splice/json/{version}");
    let status = runtime.block_on(async {
        client
            .put(&meta)
            .bearer_auth(&token)
            .body(bytes.clone())
            .send()
            .await
            .expect("PUT meta")
            .status()
    });
    assert_eq!(status.as_u16(), 201, "publish failed");
    let (metas, downloads, wall) = runtime.block_on(async {
        let semaphore = Arc::new(tokio::sync::Semaphore::new(50));
        let mut tasks = tokio::task::JoinSet::new();
        let started = Instant::now();
        for i in 0..1200 {
            let permit = semaphore
                .clone()
                .acquire_owned()
                .await
                .expect("acquire a semaphore permit");
            let (client, meta, bytes) = (client.clone(), meta.clone(), bytes.clone());
            // One download in six, spread through the burst.
            let download = i % 6 == 5;
            tasks.spawn(async move {
                let start = Instant::now();
                let target = if download {
                    format!("{meta}/archive")
                } else {
                    meta
                };
                let response = client.get(target).send().await.expect("GET target");
                let ok = response.status().is_success();
                let body = response.bytes().await.unwrap_or_default();
                assert!(ok && (!download || body == bytes), "request {i} failed");
                drop(permit);
                (download, start.elapsed())
            });
        }
        let (mut metas, mut downloads) = (Vec::new(), Vec::new());
        while let Some(done) = tasks.join_next().await {
            let (download, took) = done.expect("a request of the burst");
            if download {
                downloads.push(took)
            } else {
                metas.push(took)
            }
        }
        (metas, downloads, started.elapsed())
    });
    let _ = server.kill();
    let _ = server.wait();
    eprintln!(
        "burst: {} metadata reads, {} downloads, 50 concurrent, {:.0} ms in all",
        metas.len(),
        downloads.len(),
        wall.as_secs_f64() * 1000.0
    );
    let (p50, p99, max) = figures(metas);
    eprintln!(
        "metadata: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms (bar: p99 < 50 ms: {})",
        if p99 < 50.0 { "met" } else { "NOT met" }
    );
    let (p50, p99, max) = figures(downloads);
    eprintln!("download: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms");
}
