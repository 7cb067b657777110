//! Keypress-to-frame in the real UI loop (`tui::event_loop::drive`, test backend) while the run
//! diffs a repository with 5,000 changed files and a 50 MB untracked file, over and over, as a
//! reviewing stage does (`pipeline::diff::change`). Fails (exit 1) when the bar of issue 8 is
//! missed: keypress-to-frame under 16 ms (p99).
//!
//! Run: `cargo bench --bench ui_busy_run` (optionally `-- 300` for the number of keypresses).

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use splice::permissions::{PermissionMode, Policy};
use splice::protocol::Event;
use splice::provider::pricing::PriceTable;
use splice::provider::{ProviderConfig, ProviderKind};
use splice::run::{RunSettings, Tier};
use splice::tui::app::App;
use splice::tui::event_loop::{LoopInput, Screen, StartRun, drive};
use splice::tui::theme::Theme;
use splice::usage::Budget;

const FILES: usize = 5_000;
const UNTRACKED_BYTES: usize = 50 * 1024 * 1024;
/// Between keypresses, so that they land at every point of a diff.
const TYPING_GAP: Duration = Duration::from_millis(7);

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .expect("git");
    assert!(status.status.success(), "git {args:?} failed");
}

/// A repository whose 5,000 committed files are all changed, plus a 50 MB untracked file.
fn repository(root: &Path) {
    for i in 0..FILES {
        let dir = root.join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&dir).expect("create dir");
        let body: String = (0..20).map(|l| format!("line {l} of file {i}\n")).collect();
        std::fs::write(dir.join(format!("f{i}.txt")), body).expect("write f<i>.txt");
    }
    git(root, &["init", "-q", "-b", "main"]);
    git(root, &["add", "-A"]);
    git(
        root,
        &[
            "-c",
            "user.email=b@example.com",
            "-c",
            "user.name=Bench",
            "commit",
            "-q",
            "-m",
            "initial",
        ],
    );
    for i in 0..FILES {
        let path = root.join(format!("src/m{}/f{i}.txt", i / 100));
        let body: String = (0..20).map(|l| format!("LINE {l} of file {i}\n")).collect();
        std::fs::write(path, body).expect("write path");
    }
    let big: Vec<u8> = (0..UNTRACKED_BYTES)
        .map(|i| b'a' + (i % 26) as u8)
        .collect();
    std::fs::write(root.join("big.log"), big).expect("write big.log");
}

fn settings(root: PathBuf) -> RunSettings {
    let mut provider = ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4.1"))
        .expect("provider config for the fake provider");
    provider.api_key = None;
    RunSettings {
        session_id: "session_bench".into(),
        cwd: root,
        provider,
        policy: Policy::new(PermissionMode::Ask, vec![]),
        tier: Tier::Full,
        max_turns: 40,
        layout: splice::layout::Layout::at(std::path::Path::new("/nonexistent/splice-data")),
        pricing: PriceTable::default(),
        budget: Budget::default(),
        pipeline: Default::default(),
        conversation: Default::default(),
        packages: Default::default(),
        mcp: Default::default(),
        hooks: Default::default(),
    }
}

/// A run that diffs the tree until interrupted, reporting each diff's duration.
fn diffing_run(started: std_mpsc::Sender<()>, diffs: Arc<Mutex<Vec<Duration>>>) -> StartRun {
    let started = Arc::new(Mutex::new(started));
    Arc::new(move |settings, bus, _text, mut stop| {
        let (started, diffs) = (started.clone(), diffs.clone());
        Box::pin(async move {
            if let Ok(started) = started.lock() {
                let _ = started.send(());
            }
            loop {
                let begun = Instant::now();
                tokio::select! {
                    _ = &mut stop => return splice::exit::Exit::Interrupted,
                    text = splice::pipeline::diff::change(&settings.cwd) => {
                        if let Ok(mut diffs) = diffs.lock() {
                            diffs.push(begun.elapsed());
                        }
                        bus.emit(Event::text(format!("diffed {} bytes\n", text.len())));
                    }
                }
            }
        })
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    let presses: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().expect("create a temporary directory");
    let root = dir
        .path()
        .canonicalize()
        .expect("canonicalize dir")
        .join("repo");
    std::fs::create_dir_all(&root).expect("create root");
    repository(&root);

    let (started_tx, started_rx) = std_mpsc::channel();
    let diffs = Arc::new(Mutex::new(Vec::new()));
    let (frames_tx, frames_rx) = std_mpsc::channel::<(Instant, usize)>();
    let (keys, keys_rx) = tokio::sync::mpsc::unbounded_channel::<std::io::Result<TermEvent>>();
    let events = Box::pin(futures_util::stream::unfold(keys_rx, |mut rx| async move {
        rx.recv().await.map(|event| (event, rx))
    }));
    let screen = Screen {
        terminal: Terminal::new(TestBackend::new(120, 40)).expect("create the test terminal"),
        events,
        start: diffing_run(started_tx, diffs.clone()),
        on_frame: Box::new(move |app: &App| {
            let _ = frames_tx.send((Instant::now(), app.composer().text().chars().count()));
        }),
    };
    let input = LoopInput {
        app: App::new(settings(root), Theme::ansi()),
        prompt: Some("review the change".into()),
        session: None,
        history: Default::default(),
        mcp: splice::session::McpScope::PerTurn,
    };

    // The typist: one key at a time, each timed until the frame that shows it.
    let typist = std::thread::spawn(move || {
        started_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the run never started");
        let mut samples = Vec::with_capacity(presses);
        for typed in 1..=presses {
            std::thread::sleep(TYPING_GAP);
            let sent = Instant::now();
            let _ = keys.send(Ok(TermEvent::Key(KeyEvent::from(KeyCode::Char('x')))));
            loop {
                let (at, shown) = frames_rx
                    .recv_timeout(Duration::from_secs(30))
                    .unwrap_or_else(|e| panic!("no frame for key {typed}: {e}"));
                if shown >= typed {
                    samples.push(at.saturating_duration_since(sent));
                    break;
                }
            }
        }
        let _ = keys.send(Ok(TermEvent::Key(KeyEvent::from(KeyCode::Esc))));
        drop(keys);
        samples
    });

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("build the tokio runtime");
    let code = runtime
        .block_on(drive(input, screen))
        .expect("drive the UI");
    runtime.shutdown_background();
    let mut samples = typist.join().unwrap_or_else(|_| panic!("typist panicked"));
    samples.sort();
    let mut diffs = diffs.lock().map(|d| d.clone()).unwrap_or_default();
    diffs.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "ui_busy_run: {presses} keypresses while the run diffs {FILES} changed files + a {} MB untracked file (run exit {code})",
        UNTRACKED_BYTES / (1024 * 1024)
    );
    if !diffs.is_empty() {
        eprintln!(
            "  diffs taken: {}, each median {:.1} ms, max {:.1} ms",
            diffs.len(),
            ms(percentile(&diffs, 0.5)),
            ms(percentile(&diffs, 1.0))
        );
    }
    let p99 = percentile(&samples, 0.99);
    eprintln!(
        "  keypress-to-frame: median {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&samples, 0.5)),
        ms(p99),
        ms(percentile(&samples, 1.0))
    );
    if diffs.is_empty() {
        eprintln!("  BAR MISSED: no diff finished while typing");
        std::process::exit(1);
    }
    if p99 >= Duration::from_millis(16) {
        eprintln!("  BAR MISSED: keypress-to-frame p99 must be under 16 ms");
        std::process::exit(1);
    }
}
