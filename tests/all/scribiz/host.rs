//! Splice as a Scribiz host, against the fake CLI in tests/fake_scribiz (a Python script written
//! from the protocol document): the job's typed lines, the environment it gets, exit codes,
//! protocol refusal, stall, cancel and its escalation, hostile text, media requests, and
//! `splice scribiz login` through the real binary.

use crate::support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splice::scribiz::error::FailureKind;
use splice::scribiz::job::{Ended, Job, JobOptions};
use splice::scribiz::launch::{Env, Limits, transcribe_args};
use splice::scribiz::login::LoginEvent;
use splice::scribiz::media::{HostMedia, MediaFailure, NoHostMedia};
use splice::scribiz::protocol::{ContextResult, Line, ResultLine};
use splice::scribiz::{ScribizError, login};

const PROVIDER_KEY: &str = "sk-provider-key-that-must-not-reach-scribiz";

fn fake_cli() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_scribiz/scribiz")
}

/// A scratch HOME and TMPDIR, the record file, and the environment Splice would have.
struct Fake {
    dir: tempfile::TempDir,
    record: PathBuf,
    tmp: PathBuf,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let record = dir.path().join("record.jsonl");
        let tmp = dir.path().join("tmp");
        std::fs::create_dir_all(&tmp).expect("create tmp");
        Fake { dir, record, tmp }
    }

    /// Splice's environment: what the child may get, plus provider keys and Splice settings
    /// that it must not.
    fn env(&self, scenario: &str, extra: &[(&str, &str)]) -> Env {
        let mut env: Vec<(String, String)> = vec![
            // The system's python3 first: a version manager's shim would add its own variables.
            (
                "PATH".into(),
                format!(
                    "/usr/bin:/bin:{}",
                    std::env::var("PATH").unwrap_or_default()
                ),
            ),
            ("HOME".into(), self.dir.path().display().to_string()),
            ("TMPDIR".into(), self.tmp.display().to_string()),
            ("LANG".into(), "C.UTF-8".into()),
            ("LC_ALL".into(), "C.UTF-8".into()),
            ("SCRIBIZ_BIN".into(), fake_cli().display().to_string()),
            ("SCRIBIZ_FAKE_SCENARIO".into(), scenario.into()),
            (
                "SCRIBIZ_FAKE_RECORD".into(),
                self.record.display().to_string(),
            ),
            ("SCRIBIZ_FAKE_HEARTBEAT_MS".into(), "100".into()),
            ("GEMINI_API_KEY".into(), "gemini-key-for-scribiz".into()),
            ("OPENAI_API_KEY".into(), PROVIDER_KEY.into()),
            ("ANTHROPIC_API_KEY".into(), PROVIDER_KEY.into()),
            ("SPLICE_CONFIG".into(), "/nonexistent/config.json".into()),
            ("LD_PRELOAD".into(), "/nonexistent/evil.so".into()),
        ];
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        env.into_iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn start(&self, env: Env, args: Vec<OsString>, limits: Limits) -> Job {
        self.start_with(env, args, limits, Arc::new(NoHostMedia))
    }

    fn start_with(
        &self,
        env: Env,
        args: Vec<OsString>,
        limits: Limits,
        media: Arc<dyn HostMedia>,
    ) -> Job {
        Job::start(JobOptions {
            program: fake_cli(),
            args,
            env,
            cwd: Some(self.dir.path().to_path_buf()),
            limits,
            media,
        })
        .expect("start the Scribiz job")
    }

    fn transcribe_args(&self) -> Vec<OsString> {
        transcribe_args(
            self.dir.path().join("talk.mp3").as_os_str(),
            &self.dir.path().join("out.json"),
        )
        .expect("transcribe arguments")
    }

    /// What the fake recorded: argv and env first, then stdin lines and events.
    fn records(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.record)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    fn stdin(&self) -> Vec<Value> {
        self.records()
            .into_iter()
            .filter_map(|r| r.get("stdin").cloned())
            .collect()
    }

    fn got_cancel(&self) -> bool {
        self.stdin().contains(&json!({"cmd": "cancel"}))
    }

    fn pid(&self, event: &str) -> i32 {
        let records = self.records();
        let found = if event == "self" {
            records.first().and_then(|r| r["pid"].as_i64())
        } else {
            records
                .iter()
                .find(|r| r["event"] == event)
                .and_then(|r| r["pid"].as_i64())
        };
        let pid = found.unwrap_or_else(|| panic!("no {event} pid in {records:?}"));
        i32::try_from(pid).expect("pid as i32")
    }
}

/// Standard stall limit (heartbeats keep the run alive); short cancel escalation.
fn quick_cancel() -> Limits {
    Limits::shortened(
        Duration::from_secs(15),
        Duration::from_millis(300),
        Duration::from_millis(300),
    )
}

/// Running or sleeping; a zombie or a missing process is not.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X'))
}

/// Waits (bounded) for a process to be gone: death by SIGKILL is not instantaneous.
fn assert_gone(pid: i32, what: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while alive(pid) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(pid), "{what} (pid {pid}) is still running");
}

async fn read_all(job: &mut Job) -> Vec<Line> {
    let mut lines = Vec::new();
    while let Some(line) = job.next().await {
        lines.push(line);
    }
    lines
}

async fn read_until_start(job: &mut Job) {
    while let Some(line) = job.next().await {
        if matches!(line, Line::Start(_)) {
            return;
        }
    }
    panic!("the job ended before `start`");
}

fn failure_of(ended: &Ended) -> &splice::scribiz::Failure {
    match &ended.outcome {
        Err(error) => error
            .failure()
            .unwrap_or_else(|| panic!("not a CLI failure: {error}")),
        Ok(outcome) => panic!("succeeded: {outcome:?}"),
    }
}

#[tokio::test]
async fn every_line_type_reaches_the_caller_and_what_is_not_protocol_is_skipped() {
    let fake = Fake::new();
    let mut job = fake.start(
        fake.env("every-line", &[]),
        fake.transcribe_args(),
        Limits::default(),
    );
    let lines = read_all(&mut job).await;
    let ended = job.finish().await;
    let kinds: Vec<&str> = lines.iter().map(Line::type_name).collect();
    for expected in [
        "hello",
        "start",
        "stage",
        "plan",
        "progress",
        "chunk",
        "usage",
        "partial",
        "done",
        "retry",
        "warning",
        "cache",
        "item",
        "device_code",
        "heartbeat",
        "summary",
        "result",
    ] {
        assert!(kinds.contains(&expected), "no {expected} in {kinds:?}");
    }
    assert_eq!(kinds[0], "hello");
    assert_eq!(kinds.last(), Some(&"result"));
    // The unknown `telemetry` type is ignored, not passed on; the non-JSON line is counted.
    assert!(!kinds.contains(&"unknown"), "{kinds:?}");
    assert_eq!(ended.skipped_lines, 1, "{:?}", ended.logs);
    assert!(
        ended
            .logs
            .iter()
            .any(|l| l.contains("skipped a stdout line")),
        "{:?}",
        ended.logs
    );
    // A raw U+2028 inside a string did not split the line.
    let warning = lines
        .iter()
        .find_map(|l| match l {
            Line::Warning(w) => w.message.clone(),
            _ => None,
        })
        .expect("no warning message");
    assert_eq!(warning.as_str(), "one\u{2028}two\u{2029}three");
    let outcome = ended.outcome.expect("ended outcome");
    assert_eq!(outcome.exit_code, 0);
    let Some(ResultLine::Context(ContextResult {
        context: Some(context),
        ..
    })) = outcome.result()
    else {
        panic!("no inline context: {outcome:?}")
    };
    assert_eq!(context.0["schema"], 1);
}

#[tokio::test]
async fn the_child_gets_a_clean_environment_and_the_documented_arguments() {
    let fake = Fake::new();
    let job = fake.start(
        fake.env("transcribe", &[("SCRIBIZ_FAKE_RESULT", "out-file")]),
        fake.transcribe_args(),
        Limits::default(),
    );
    let ended = job.finish().await;
    let outcome = ended.outcome.expect("ended outcome");
    let first = &fake.records()[0];
    let env = first["env"]
        .as_object()
        .unwrap_or_else(|| panic!("no env: {first}"));
    let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
    names.sort_unstable();
    // Only what Splice passes (and what a python3 shim on a machine without a system python3
    // would add on its own).
    let allowed = |n: &str| {
        ["PATH", "HOME", "TMPDIR", "LANG", "GEMINI_API_KEY"].contains(&n)
            || n.starts_with("LC_")
            || n.starts_with("SCRIBIZ_")
            || (n.contains("PYENV") || ["PWD", "SHLVL", "_"].contains(&n))
                && !Path::new("/usr/bin/python3").exists()
    };
    assert!(names.iter().all(|n| allowed(n)), "{names:?}");
    for absent in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "SPLICE_CONFIG",
        "LD_PRELOAD",
    ] {
        assert!(!env.contains_key(absent), "{absent} reached the CLI");
    }
    assert!(!first["env"].to_string().contains(PROVIDER_KEY));
    assert_eq!(env["GEMINI_API_KEY"], "gemini-key-for-scribiz");
    let out = fake.dir.path().join("out.json");
    assert_eq!(
        first["argv"],
        json!([
            fake.dir.path().join("talk.mp3").display().to_string(),
            "--json",
            "--out-file",
            out.display().to_string(),
            "--media-prep",
            "stdio,ffmpeg"
        ])
    );
    // The Context by path: the file Splice chose, with the size announced.
    let Some(ResultLine::Context(ContextResult {
        path: Some(path),
        bytes: Some(bytes),
        ..
    })) = outcome.result()
    else {
        panic!("no context path: {outcome:?}")
    };
    assert_eq!(path, &out);
    let written = std::fs::read(&out).expect("read out");
    assert_eq!(written.len() as u64, *bytes);
}

#[tokio::test]
async fn a_context_announced_in_a_temp_file_is_reported_by_path() {
    let fake = Fake::new();
    let job = fake.start(
        fake.env("transcribe", &[("SCRIBIZ_FAKE_RESULT", "temp")]),
        fake.transcribe_args(),
        Limits::default(),
    );
    let outcome = job.finish().await.outcome.expect("job outcome");
    let Some(ResultLine::Context(ContextResult {
        path: Some(path), ..
    })) = outcome.result()
    else {
        panic!("no context path: {outcome:?}")
    };
    // The CLI used the TMPDIR it was given.
    assert!(path.starts_with(&fake.tmp), "{}", path.display());
    assert!(path.is_file());
}

#[tokio::test]
async fn a_batch_reports_each_item_and_its_summary() {
    let fake = Fake::new();
    let folder = fake.dir.path().join("contexts");
    std::fs::create_dir_all(&folder).expect("create folder");
    let args = ["a.mp3", "b.mp3", "--json", "--out-file"]
        .iter()
        .map(OsString::from)
        .chain([folder.clone().into_os_string()])
        .collect();
    let job = fake.start(fake.env("batch", &[]), args, Limits::default());
    let outcome = job.finish().await.outcome.expect("job outcome");
    // The exit code is the first failure's; the batch is still reported item by item.
    assert_eq!(outcome.exit_code, 4);
    assert!(matches!(
        outcome.results.as_slice(),
        [ResultLine::Context(ContextResult {
            index: Some(0),
            path: Some(_),
            ..
        })]
    ));
    assert_eq!(outcome.item_errors.len(), 1);
    assert_eq!(outcome.item_errors[0].index, Some(1));
    assert_eq!(
        outcome.item_errors[0].error.code.as_str(),
        "SOURCE_NOT_FOUND"
    );
    let summary = outcome.summary.expect("no summary");
    assert_eq!((summary.succeeded, summary.failed), (Some(1), Some(1)));
}

#[tokio::test]
async fn each_exit_code_is_mapped_with_the_error_fields_kept() {
    let cases = [
        (1, FailureKind::Other, "INTERNAL"),
        (2, FailureKind::Usage, "INPUT_UNSUPPORTED"),
        (3, FailureKind::Credentials, "AUTH"),
        (4, FailureKind::Source, "SOURCE_NOT_FOUND"),
        (5, FailureKind::Service, "SERVICE_UNAVAILABLE"),
        (6, FailureKind::ToolMissing, "TOOL_MISSING"),
        (130, FailureKind::Cancelled, "CANCELLED"),
    ];
    for (code, expected, error_code) in cases {
        let text = code.to_string();
        for error_line in [true, false] {
            let fake = Fake::new();
            let mut extra = vec![("SCRIBIZ_FAKE_EXIT", text.as_str())];
            if !error_line {
                extra.push(("SCRIBIZ_FAKE_NO_ERROR_LINE", "1"));
            }
            let job = fake.start(
                fake.env("error", &extra),
                fake.transcribe_args(),
                Limits::default(),
            );
            let ended = job.finish().await;
            let failure = failure_of(&ended);
            assert_eq!(failure.kind, expected, "exit {code}");
            assert_eq!(failure.exit_code, Some(code));
            if !error_line {
                // The exit code alone decided.
                assert_eq!(failure.code, None);
                continue;
            }
            assert_eq!(failure.code.as_deref(), Some(error_code));
            assert_eq!(failure.message, format!("failure {code}"));
            assert_eq!(failure.hint, Some(format!("hint for {code}")));
            assert_eq!(failure.stage.as_deref(), Some("transcribe"));
            let scope = if code == 3 { "account" } else { "job" };
            assert_eq!(failure.scope.as_deref(), Some(scope));
            assert_eq!(failure.retryable, Some(code == 5));
            if code == 5 {
                assert_eq!(failure.status, Some(503));
                assert_eq!(failure.retry_after_ms, Some(2000));
            } else {
                assert_eq!(failure.status, None);
            }
        }
    }
    // Exit 0 is a success.
    let fake = Fake::new();
    let job = fake.start(
        fake.env("error", &[("SCRIBIZ_FAKE_EXIT", "0")]),
        fake.transcribe_args(),
        Limits::default(),
    );
    let outcome = job.finish().await.outcome.expect("job outcome");
    assert_eq!(outcome.exit_code, 0);
}

#[tokio::test]
async fn protocol_2_is_refused_with_a_cancel() {
    let fake = Fake::new();
    let mut job = fake.start(
        fake.env("protocol2", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    let lines = read_all(&mut job).await;
    let ended = job.finish().await;
    assert!(lines.is_empty(), "lines of a refused protocol: {lines:?}");
    let error = ended.outcome.err().unwrap_or_else(|| panic!("accepted"));
    assert!(
        matches!(error, ScribizError::UnsupportedProtocol { version: 2 }),
        "{error}"
    );
    assert!(error.to_string().contains("protocol 2"), "{error}");
    assert!(fake.got_cancel(), "no cancel: {:?}", fake.records());
    assert_gone(fake.pid("self"), "the CLI");
}

#[tokio::test]
async fn a_stream_that_does_not_start_with_hello_fails() {
    let fake = Fake::new();
    let job = fake.start(
        fake.env("no-hello", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    let error = job.finish().await.outcome.err();
    assert!(
        matches!(&error, Some(ScribizError::Protocol(m)) if m.contains("`start`, not `hello`")),
        "{error:?}"
    );
    assert!(fake.got_cancel());
}

#[tokio::test]
async fn a_stream_that_never_says_hello_fails_even_while_it_prints() {
    let fake = Fake::new();
    let limits = Limits::shortened(
        Duration::from_millis(1500),
        Duration::from_millis(300),
        Duration::from_millis(300),
    );
    let job = fake.start(fake.env("junk", &[]), fake.transcribe_args(), limits);
    let ended = job.finish().await;
    assert!(
        matches!(&ended.outcome, Err(ScribizError::Protocol(m)) if m.contains("no `hello` line")),
        "{:?}",
        ended.outcome
    );
    assert!(ended.skipped_lines > 0);
    assert!(fake.got_cancel());
    assert_gone(fake.pid("self"), "the CLI");
}

#[tokio::test]
async fn a_stall_is_cancelled_and_the_cli_and_its_child_are_ended() {
    let fake = Fake::new();
    let limits = Limits::shortened(
        Duration::from_millis(1500),
        Duration::from_millis(300),
        Duration::from_millis(300),
    );
    let job = fake.start(fake.env("stall", &[]), fake.transcribe_args(), limits);
    let ended = job.finish().await;
    assert!(
        matches!(ended.outcome, Err(ScribizError::Stalled { .. })),
        "{:?}",
        ended.outcome
    );
    assert!(fake.got_cancel(), "no cancel: {:?}", fake.records());
    assert_gone(fake.pid("self"), "the stalled CLI");
    assert_gone(fake.pid("grandchild"), "the CLI's child");
}

#[tokio::test]
async fn cancel_ends_with_130_and_nothing_left_running() {
    let fake = Fake::new();
    let mut job = fake.start(
        fake.env("cancel", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    read_until_start(&mut job).await;
    job.canceller().cancel();
    let ended = job.finish().await;
    let failure = failure_of(&ended);
    assert_eq!(failure.kind, FailureKind::Cancelled);
    assert_eq!(failure.exit_code, Some(130));
    assert_eq!(failure.code.as_deref(), Some("CANCELLED"));
    assert!(fake.got_cancel());
    assert_gone(fake.pid("self"), "the CLI");
    // The CLI left its child running; the group went with it.
    assert_gone(fake.pid("grandchild"), "the CLI's child");
}

#[tokio::test]
async fn a_cancel_that_is_ignored_escalates_to_sigterm_then_sigkill() {
    let fake = Fake::new();
    let mut job = fake.start(
        fake.env("ignore-cancel", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    read_until_start(&mut job).await;
    job.cancel();
    let ended = job.finish().await;
    let failure = failure_of(&ended);
    assert_eq!(failure.kind, FailureKind::Cancelled);
    // Killed by a signal: no exit code.
    assert_eq!(failure.exit_code, None);
    assert!(fake.got_cancel());
    assert!(
        fake.records().iter().any(|r| r["event"] == "sigterm"),
        "no SIGTERM: {:?}",
        fake.records()
    );
    assert_gone(fake.pid("self"), "the CLI");
    assert_gone(fake.pid("grandchild"), "the CLI's child");
}

#[tokio::test]
async fn dropping_the_job_ends_the_cli() {
    let fake = Fake::new();
    let mut job = fake.start(
        fake.env("ignore-cancel", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    read_until_start(&mut job).await;
    drop(job);
    // The driver goes on in the background: cancel, SIGTERM, SIGKILL, reaped.
    let (cli, grandchild) = (fake.pid("self"), fake.pid("grandchild"));
    tokio::task::spawn_blocking(move || {
        assert_gone(cli, "the CLI");
        assert_gone(grandchild, "the CLI's child");
    })
    .await
    .expect("join the blocking check");
    assert!(fake.got_cancel());
}

#[tokio::test]
async fn a_cancel_is_heard_while_the_caller_is_not_reading() {
    let fake = Fake::new();
    let job = fake.start(
        fake.env("flood", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    let record = fake.record.clone();
    // Held, never read: the job's buffer fills up.
    let flooded = tokio::task::spawn_blocking(move || {
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            let text = std::fs::read_to_string(&record).unwrap_or_default();
            if text.contains("\"flooded\"") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    assert!(flooded.await.expect("the flooded job"));
    job.cancel();
    let cli = fake.pid("self");
    tokio::task::spawn_blocking(move || assert_gone(cli, "the CLI"))
        .await
        .expect("join the blocking check");
    assert!(fake.got_cancel());
    let ended = job.finish().await;
    assert_eq!(failure_of(&ended).kind, FailureKind::Cancelled);
}

#[tokio::test]
async fn hostile_text_is_stripped_before_it_reaches_the_caller() {
    let fake = Fake::new();
    let mut job = fake.start(
        fake.env("hostile", &[]),
        fake.transcribe_args(),
        quick_cancel(),
    );
    let lines = read_all(&mut job).await;
    let ended = job.finish().await;
    let seen = format!("{lines:?}");
    for bad in ['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}'] {
        assert!(!seen.contains(bad), "{bad:?} in {seen}");
    }
    let detail = lines.iter().find_map(|l| match l {
        Line::Stage(s) => s.detail.clone(),
        _ => None,
    });
    assert_eq!(
        detail.map(|d| d.into_string()),
        Some("My video".to_string())
    );
    let failure = failure_of(&ended);
    assert_eq!(failure.message, "upstream said no");
    assert_eq!(failure.hint.as_deref(), Some("try again later"));
    assert!(!ended.to_string_lossy().contains('\u{1b}'));
}

trait Lossy {
    fn to_string_lossy(&self) -> String;
}

impl Lossy for Ended {
    fn to_string_lossy(&self) -> String {
        format!("{:?}{:?}", self.outcome, self.logs)
    }
}

/// Answers `probe` of `first.mov` only once the CLI has received the answer to the
/// `extractWav` sent after it (so two requests were in flight at once, and the second was
/// answered first), and stops `cancel-me` only when told to (and `after-cancel` waits for it).
struct TestMedia {
    record: PathBuf,
    saw_cancel: AtomicBool,
}

impl HostMedia for TestMedia {
    fn probe(&self, path: &Path) -> Result<Value, MediaFailure> {
        if path.ends_with("first.mov") {
            let until = Instant::now() + Duration::from_secs(20);
            let answered = |id: u64| {
                std::fs::read_to_string(&self.record)
                    .unwrap_or_default()
                    .lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .any(|r| r["stdin"]["type"] == "response" && r["stdin"]["id"] == id)
            };
            while !answered(2) {
                if Instant::now() > until {
                    return Err(MediaFailure::Failed(
                        "extractWav never ran beside probe".into(),
                    ));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        if path.ends_with("after-cancel.mov") {
            // Sent after `request-cancel` 6: answered once that work saw its cancel.
            let until = Instant::now() + Duration::from_secs(20);
            while !self.saw_cancel.load(Ordering::SeqCst) {
                if Instant::now() > until {
                    return Err(MediaFailure::Failed(
                        "request 6 never saw its cancel".into(),
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(json!({"durationSeconds": 1.5, "hasAudio": true, "hasVideo": true}))
    }

    fn extract_wav(
        &self,
        path: &Path,
        out: &Path,
        progress: &mut dyn FnMut(f64),
        cancelled: &AtomicBool,
    ) -> Result<Value, MediaFailure> {
        if path.ends_with("cancel-me.mov") {
            progress(0.1);
            let until = Instant::now() + Duration::from_secs(20);
            while !cancelled.load(Ordering::SeqCst) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            self.saw_cancel
                .store(cancelled.load(Ordering::SeqCst), Ordering::SeqCst);
            // A wrong host would send this answer.
            return Ok(json!({"durationSeconds": 9.9}));
        }
        progress(0.5);
        std::fs::write(out, b"RIFF").map_err(|e| MediaFailure::Failed(e.to_string()))?;
        Ok(json!({"durationSeconds": 1.5}))
    }
}

#[tokio::test]
async fn media_requests_are_answered_concurrently_by_id_and_a_cancelled_one_never() {
    let fake = Fake::new();
    let media = Arc::new(TestMedia {
        record: fake.record.clone(),
        saw_cancel: AtomicBool::new(false),
    });
    let job = fake.start_with(
        fake.env("media", &[]),
        fake.transcribe_args(),
        Limits::default(),
        media.clone(),
    );
    let ended = job.finish().await;
    let checked = fake
        .records()
        .into_iter()
        .find(|r| r["event"] == "media-checked")
        .unwrap_or_else(|| panic!("the fake did not finish its checks: {:?}", fake.records()));
    assert_eq!(checked["problems"], json!([]));
    ended.outcome.expect("ended outcome");
    let stdin = fake.stdin();
    let answered: Vec<u64> = stdin
        .iter()
        .filter(|l| l["type"] == "response")
        .filter_map(|l| l["id"].as_u64())
        .collect();
    // The second request was answered first: the two ran side by side.
    assert_eq!(answered[..2], [2, 1], "{answered:?}");
    assert!(!answered.contains(&6), "the cancelled request was answered");
    assert!(media.saw_cancel.load(Ordering::SeqCst));
    for id in [3, 4, 5] {
        let answer = stdin
            .iter()
            .find(|l| l["type"] == "response" && l["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}"));
        assert_eq!(answer["ok"], false);
        assert_eq!(answer["error"]["code"], "UNSUPPORTED");
    }
    assert!(stdin.contains(&json!({"type": "request-progress", "id": 2, "fraction": 0.5})));
    assert!(stdin.contains(&json!({"type": "request-progress", "id": 6, "fraction": 0.1})));
    // Every line the host wrote was whole JSON.
    assert!(fake.records().iter().all(|r| r["json"] != false));
}

#[tokio::test]
async fn the_login_task_sends_the_code_then_the_account_or_the_failure() {
    let fake = Fake::new();
    let mut task =
        login::start(fake.env("login-ok", &[])).expect("start the Scribiz login (login-ok)");
    let mut events = Vec::new();
    while let Some(event) = task.events.recv().await {
        events.push(event);
    }
    assert_eq!(
        events,
        vec![
            LoginEvent::Code {
                user_code: "ABCD-1234".into(),
                verification_uri: "https://scribiz.com/login/device".into(),
                verification_uri_complete: "https://scribiz.com/login/device?user_code=ABCD-1234"
                    .into(),
                expires_in: 600,
            },
            LoginEvent::SignedIn {
                account: "you@example.com".into()
            },
        ]
    );
    assert_eq!(fake.records()[0]["argv"], json!(["login", "--json"]));

    let fake = Fake::new();
    let mut task = login::start(fake.env("login-denied", &[]))
        .expect("start the Scribiz login (login-denied)");
    let mut last = None;
    while let Some(event) = task.events.recv().await {
        last = Some(event);
    }
    assert!(
        matches!(&last, Some(LoginEvent::Failed { message, hint: Some(hint) })
            if message == "The sign-in was denied" && hint.contains("right Scribiz account")),
        "{last:?}"
    );

    // Cancel while waiting for a person: the CLI is told and ends.
    let fake = Fake::new();
    let mut task =
        login::start(fake.env("login-wait", &[])).expect("start the Scribiz login (login-wait)");
    let code = task.events.recv().await;
    assert!(matches!(code, Some(LoginEvent::Code { .. })), "{code:?}");
    task.cancel();
    let last = task.events.recv().await;
    assert!(
        matches!(&last, Some(LoginEvent::Failed { message, .. }) if message == "Sign-in cancelled"),
        "{last:?}"
    );
    task.join().await;
    assert!(fake.got_cancel());
    assert_gone(fake.pid("self"), "the login CLI");
}

/// `splice scribiz login` through the real binary, with a provider key in its environment.
fn splice_login(fake: &Fake, scenario: &str, json: bool) -> support::Outcome {
    let sandbox = support::Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .env("SCRIBIZ_BIN", fake_cli())
        .env("SCRIBIZ_FAKE_SCENARIO", scenario)
        .env("SCRIBIZ_FAKE_RECORD", &fake.record)
        .env("SCRIBIZ_FAKE_HEARTBEAT_MS", "100")
        .args(["scribiz", "login"]);
    if json {
        command.arg("--json");
    }
    if json {
        support::run(command, None)
    } else {
        support::run_raw(command, None)
    }
}

#[test]
fn splice_scribiz_login_json_prints_the_code_then_the_result() {
    let fake = Fake::new();
    let outcome = splice_login(&fake, "login-ok", true);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(
        outcome.lines,
        vec![
            json!({"type": "device_code", "userCode": "ABCD-1234",
                "verificationUri": "https://scribiz.com/login/device",
                "verificationUriComplete": "https://scribiz.com/login/device?user_code=ABCD-1234",
                "expiresIn": 600, "interval": 5}),
            json!({"type": "result", "kind": "login", "saved": true,
                "configPath": outcome.lines[1]["configPath"].clone(),
                "keyId": "key_T09PW9orWbQL", "user": {"email": "you@example.com"}}),
        ]
    );
    assert!(
        outcome.lines[1]["configPath"]
            .as_str()
            .is_some_and(|p| p.ends_with(".scribiz/config.json"))
    );
    // The key the CLI put in its result is never printed; the provider key never reached it.
    assert!(!outcome.stdout.contains("sk_never_printed"));
    let env = fake.records()[0]["env"].to_string();
    assert!(!env.contains("OPENAI_API_KEY") && !env.contains("ANTHROPIC_API_KEY"));
    assert!(!env.contains("SPLICE_"), "{env}");
}

#[test]
fn splice_scribiz_login_json_expired_and_denied_exit_3_with_an_error_line() {
    for (scenario, message) in [
        ("login-expired", "The code expired before it was confirmed"),
        ("login-denied", "The sign-in was denied"),
    ] {
        let fake = Fake::new();
        let outcome = splice_login(&fake, scenario, true);
        assert_eq!(outcome.code, 3, "{scenario}: {}", outcome.stderr);
        assert_eq!(outcome.types(), ["device_code", "error"], "{scenario}");
        let error = &outcome.lines[1]["error"];
        assert_eq!(error["code"], "AUTH");
        assert_eq!(error["message"], message);
        assert_eq!(error["scope"], "account");
        assert_eq!(error["retryable"], false);
        assert!(error["hint"].is_string(), "{error}");
    }
}

#[test]
fn splice_scribiz_login_for_a_person_and_with_hostile_text() {
    let fake = Fake::new();
    let outcome = splice_login(&fake, "login-ok", false);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "Signed in as you@example.com\n");
    assert!(
        outcome.stderr.contains("ABCD-1234")
            && outcome
                .stderr
                .contains("https://scribiz.com/login/device?user_code=ABCD-1234"),
        "{}",
        outcome.stderr
    );

    let fake = Fake::new();
    let outcome = splice_login(&fake, "login-hostile", true);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(!outcome.stdout.contains('\u{1b}') && !outcome.stdout.contains("\\u001b"));
    assert_eq!(outcome.lines[0]["userCode"], "ABCD-1234");
    assert_eq!(outcome.lines[1]["user"]["email"], "you@example.com");
}

#[test]
fn splice_scribiz_login_without_a_cli_says_so_and_exits_1() {
    let sandbox = support::Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .env("PATH", "/nonexistent")
        .args(["scribiz", "login", "--json"]);
    let outcome = support::run(command, None);
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_eq!(outcome.types(), ["error"]);
    assert_eq!(outcome.lines[0]["error"]["code"], "SCRIBIZ_MISSING");
    assert!(outcome.stderr.contains("SCRIBIZ_BIN"), "{}", outcome.stderr);

    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .env("SCRIBIZ_BIN", sandbox.root.join("missing"))
        .args(["scribiz", "login"]);
    let outcome = support::run_raw(command, None);
    assert_eq!(outcome.code, 1);
    assert!(
        outcome.stderr.contains("not an executable file"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn splice_scribiz_login_is_cancelled_by_sigint_with_130() {
    let fake = Fake::new();
    let sandbox = support::Sandbox::new();
    let mut command = sandbox.command("http://127.0.0.1:9");
    command
        .env("SCRIBIZ_BIN", fake_cli())
        .env("SCRIBIZ_FAKE_SCENARIO", "login-wait")
        .env("SCRIBIZ_FAKE_RECORD", &fake.record)
        .env("SCRIBIZ_FAKE_HEARTBEAT_MS", "100")
        .args(["scribiz", "login", "--json"]);
    let outcome = support::run_and_signal(command, "INT", |lines| {
        lines.iter().any(|l| l["type"] == "device_code")
    });
    assert_eq!(outcome.code, 130, "{}", outcome.stderr);
    assert_eq!(outcome.types(), ["device_code", "error"]);
    assert_eq!(outcome.lines[1]["error"]["code"], "CANCELLED");
    assert!(fake.got_cancel());
    assert_gone(fake.pid("self"), "the login CLI");
}
