//! Benchmark: a design plan of 4 independent tasks against a provider that takes 1 s per
//! request, run with `--jobs 1` and `--jobs 4` through the real `splice` binary in a committed
//! git repository. The plan and its critique are one request each, in series; each task is two
//! (code writer, acceptance verifier). Bar: `--jobs 4` takes at most 0.5 × the wall time of
//! `--jobs 1`, with the same files at the end. Exits 1 when the bar is missed.
//!
//! Run: `cargo bench --bench design_jobs` (optionally `-- 3` for the rounds, and `-- 3 2000` to
//! commit 2000 more files in the repository, so each task's git work (its worktree, commit and
//! merge) takes long enough to show whether it holds up the tasks beside it).

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

#[path = "../tests/all/support/fake_provider.rs"]
mod fake_provider;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_provider::{FakeProvider, Reply, openai};
use serde_json::json;

const TASKS: [&str; 4] = ["T1", "T2", "T3", "T4"];

/// `reply`, its events spread over one second.
fn slow(reply: Reply) -> Reply {
    match reply {
        Reply::Sse(events) => {
            let pause = Duration::from_secs(1) / u32::try_from(events.len().max(1)).unwrap_or(1);
            Reply::Slow(events, pause)
        }
        other => other,
    }
}

fn replies() -> Vec<Reply> {
    let tasks: Vec<_> = TASKS
        .iter()
        .map(|id| json!({"id": id, "title": format!("task {id}"), "description": format!("write {id}.txt"), "depends_on": []}))
        .collect();
    let mut replies = vec![
        slow(openai::call_json(
            "plan",
            "submit_plan",
            json!({"tasks": tasks}),
        )),
        slow(openai::call_json(
            "critique",
            "submit_critique",
            json!({"approved": true, "issues": []}),
        )),
    ];
    for id in TASKS {
        let needle = format!("This is task {id} of");
        replies.push(Reply::when(
            &needle,
            slow(openai::call_json(
                &format!("{id}cw"),
                "submit_code",
                json!({"files": [{"path": format!("{id}.txt"), "content": format!("{id}\n")}], "summary": id}),
            )),
        ));
        replies.push(Reply::when(
            &needle,
            slow(openai::call_json(
                &format!("{id}av"),
                "submit_verdict",
                json!({"accepted": true, "reasons": ["ok"]}),
            )),
        ));
    }
    replies
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run git");
    assert!(status.success(), "git {args:?}");
}

/// One plan run with `--jobs jobs` in a fresh repository: its wall time and the files it left.
fn one_run(jobs: &str, bulk: usize) -> (Duration, Vec<(String, String)>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let work = dir.path().join("repo");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&work).expect("mkdir repo");
    std::fs::create_dir_all(&data).expect("mkdir data");
    std::fs::write(data.join("config.json"), "{}").expect("write config");
    std::fs::write(work.join("README"), "bench\n").expect("write README");
    if bulk > 0 {
        let dir = work.join("bulk");
        std::fs::create_dir_all(&dir).expect("mkdir bulk");
        for n in 0..bulk {
            std::fs::write(dir.join(format!("f{n}.txt")), format!("{n}\n")).expect("write bulk");
        }
    }
    git(&work, &["init", "-q", "-b", "main"]);
    git(&work, &["add", "-A"]);
    git(
        &work,
        &[
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@localhost",
            "commit",
            "-qm",
            "start",
        ],
    );
    let provider = FakeProvider::start(replies());
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_splice"))
        .args([
            "exec",
            "--output-format",
            "stream-json",
            "--design-plan",
            "--jobs",
            jobs,
            "--permission-mode",
            "auto",
            "--max-iterations",
            "1",
            "--test-command",
            "true",
            "Write the four files",
        ])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &data)
        .env("SPLICE_DATA_DIR", &data)
        .env("SPLICE_CONFIG", data.join("config.json"))
        .env("OPENAI_BASE_URL", &provider.url)
        .env("OPENAI_API_KEY", "sk-bench")
        .current_dir(&work)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .expect("spawn splice");
    let wall = started.elapsed();
    assert!(
        output.status.success(),
        "the plan failed with --jobs {jobs}: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let mut files: Vec<(String, String)> = std::fs::read_dir(&work)
        .expect("read repo")
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    files.sort();
    (wall, files)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let rounds = numbers.first().copied().unwrap_or(3);
    let bulk = numbers.get(1).copied().unwrap_or(0);
    let (mut serial, mut parallel) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (one, files_one) = one_run("1", bulk);
        let (four, files_four) = one_run("4", bulk);
        assert_eq!(files_one, files_four, "the same files at the end");
        assert_eq!(files_one.len(), 5, "README and the four tasks' files");
        serial.push(one);
        parallel.push(four);
    }
    let (one, four) = (median(serial), median(parallel));
    let ratio = four.as_secs_f64() / one.as_secs_f64();
    eprintln!(
        "design plan, 4 independent tasks, provider 1 s per request, {bulk} more files, {rounds} rounds"
    );
    eprintln!("--jobs 1: median {:.2} s", one.as_secs_f64());
    eprintln!("--jobs 4: median {:.2} s", four.as_secs_f64());
    eprintln!("ratio: {ratio:.2} (bar: at most 0.50)");
    if ratio > 0.5 {
        eprintln!("bar missed: --jobs 4 took {ratio:.2} × the time of --jobs 1");
        std::process::exit(1);
    }
}
