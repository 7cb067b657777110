//! Benchmark: a scripted three-turn headless run (read a file, write a file, answer) against
//! the local fake provider, through the real `splice` binary. Reports the median and p90 wall
//! time, time to the first stream-json line, and the peak RSS of the child processes.
//!
//! Run: `cargo bench --bench three_turn` (optionally `-- 50` for the number of runs); with
//! `SPLICE_BENCH_BIN=PATH` it runs that `splice` instead of this build's. With
//! `SPLICE_BENCH_PROFILE=1` it makes one run and checks nothing of its result: that is how
//! `scripts/link_order.py` runs `splice` under a profiler that cannot do everything it does.

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

#[path = "../tests/all/support/fake_provider.rs"]
mod fake_provider;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_provider::{FakeProvider, openai};

struct Sample {
    wall: Duration,
    first_event: Duration,
}

fn one_run(work: &std::path::Path, data: &std::path::Path) -> Sample {
    let provider = FakeProvider::start(vec![
        openai::tool_call("c1", "read_file", &[r#"{"path":"input.txt"}"#]),
        openai::tool_call(
            "c2",
            "write_file",
            &[r#"{"path":"output.txt","content":"copied\n"}"#],
        ),
        openai::answer(&["Copied ", "input.txt to output.txt."]),
    ]);
    let _ = std::fs::remove_file(work.join("output.txt"));
    let started = Instant::now();
    let mut child = Command::new(splice_binary())
        .args([
            "exec",
            "--output-format",
            "stream-json",
            "--permission-mode",
            "accept-edits",
            "--tier",
            "light",
        ])
        .arg("Copy input.txt to output.txt")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", data)
        .env("SPLICE_DATA_DIR", data)
        .env("SPLICE_CONFIG", data.join("config.json"))
        .env("OPENAI_BASE_URL", &provider.url)
        .env("OPENAI_API_KEY", "sk-bench")
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("no stdout");
    let mut first_event = None;
    let mut lines = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read");
        first_event.get_or_insert_with(|| started.elapsed());
        lines += 1;
        assert!(line.contains("\"schemaVersion\":2"));
    }
    let status = child.wait().expect("wait");
    let wall = started.elapsed();
    if profiling() {
        return Sample {
            wall,
            first_event: first_event.unwrap_or(wall),
        };
    }
    assert!(status.success(), "run failed");
    assert!(
        lines >= 10,
        "expected a full event stream, got {lines} lines"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("output.txt"))
            .ok()
            .as_deref(),
        Some("copied\n")
    );
    Sample {
        wall,
        first_event: first_event.unwrap_or(wall),
    }
}

/// The binary under test: this build's `splice`, or `SPLICE_BENCH_BIN` (an installed build,
/// e.g. one without the registry server, which this bench's own build links in).
fn splice_binary() -> std::ffi::OsString {
    std::env::var_os("SPLICE_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_splice").into())
}

/// A profiling run (see the module comment): one run, its result not checked.
fn profiling() -> bool {
    std::env::var_os("SPLICE_BENCH_PROFILE").is_some_and(|v| v == "1")
}

/// Peak resident set of any waited-for child, in KiB (Linux reports ru_maxrss in KiB).
#[allow(unsafe_code)]
fn children_peak_rss_kib() -> i64 {
    // SAFETY: getrusage writes only into the zeroed struct we pass; a plain value type.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let work = dir.path().join("repo");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&work).expect("create work");
    std::fs::create_dir_all(&data).expect("create data");
    std::fs::write(data.join("config.json"), "{}").expect("write config.json");
    std::fs::write(work.join("input.txt"), "copied\n").expect("write input.txt");
    if profiling() {
        one_run(&work, &data);
        return;
    }
    // One warm-up run so the binary is in the page cache.
    one_run(&work, &data);
    let samples: Vec<Sample> = (0..runs).map(|_| one_run(&work, &data)).collect();
    let mut walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
    let mut firsts: Vec<Duration> = samples.iter().map(|s| s.first_event).collect();
    walls.sort();
    firsts.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!("three-turn scripted run, {runs} runs (read a file, write a file, answer)");
    eprintln!(
        "wall time:        median {:.1} ms, p90 {:.1} ms",
        ms(percentile(&walls, 0.5)),
        ms(percentile(&walls, 0.9))
    );
    eprintln!(
        "first event:      median {:.1} ms, p90 {:.1} ms",
        ms(percentile(&firsts, 0.5)),
        ms(percentile(&firsts, 0.9))
    );
    eprintln!(
        "peak RSS:         {:.1} MiB (largest of all runs)",
        children_peak_rss_kib() as f64 / 1024.0
    );
}
