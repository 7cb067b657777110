//! Rendering a 10,000-cell transcript: frame time (cold and warm), keypress-to-frame while a
//! model streams, and resident memory. Fails (exit 1) when a bar of issue 4 is missed:
//! a frame under 5 ms, keypress-to-frame under 16 ms.

// A benchmark is test code: a failed step fails it with a message saying what failed.
#![allow(clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use splice::permissions::{PermissionMode, Policy};
use splice::protocol::events::ToolStatus;
use splice::protocol::{Event, SideEffect};
use splice::provider::pricing::PriceTable;
use splice::provider::{ProviderConfig, ProviderKind};
use splice::run::{RunSettings, Tier};
use splice::tui::app::App;
use splice::tui::cells::{Cell, Level, ToolOutcome};
use splice::tui::theme::Theme;
use splice::usage::Budget;

const CELLS: usize = 10_000;
const FRAMES: usize = 300;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4)
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn p99(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() * 99 / 100]
}

fn app() -> App {
    let settings = RunSettings {
        session_id: "session_bench".into(),
        cwd: PathBuf::from("/repo"),
        provider: ProviderConfig::from_env(ProviderKind::OpenAi, Some("gpt-4.1"))
            .expect("provider config for the fake provider"),
        policy: Policy::new(PermissionMode::Ask, vec![]),
        tier: Tier::Auto,
        max_turns: 40,
        layout: splice::layout::Layout::at(std::path::Path::new("/nonexistent")),
        pricing: PriceTable::default(),
        budget: Budget::default(),
        pipeline: Default::default(),
        conversation: Default::default(),
        packages: Default::default(),
        mcp: Default::default(),
        hooks: Default::default(),
    };
    App::new(settings, Theme::load("dark").unwrap_or_default())
}

fn fill(app: &mut App) {
    let answer = "Here is the change, with **bold** and `code`:\n\n- one item\n- another item that is long enough to wrap at a narrow width\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n";
    for i in 0..CELLS {
        let cell = match i % 4 {
            0 => Cell::User(format!("request number {i}: please fix the parser")),
            1 => Cell::Assistant(answer.to_string()),
            2 => Cell::Tool {
                id: format!("call_{i}"),
                name: "read_file".into(),
                args: json!({"path": format!("src/file_{i}.rs")}),
                side_effect: SideEffect::Read,
                decision: None,
                waiting: false,
                result: Some(ToolOutcome {
                    status: ToolStatus::Ok,
                    output: "line one\nline two\nline three\nline four\nline five\n".into(),
                    truncated: false,
                }),
                progress: None,
                agent: None,
                expanded: false,
            },
            _ => Cell::Notice(Level::Warning, format!("warning {i}: retrying")),
        };
        app.transcript_mut().push(cell);
    }
}

fn main() {
    let before = rss_kib();
    let mut app = app();
    fill(&mut app);
    let mut terminal = match Terminal::new(TestBackend::new(120, 40)) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("terminal: {e}");
            std::process::exit(2);
        }
    };
    let mut draw = |app: &mut App| {
        let start = Instant::now();
        let _ = terminal.draw(|frame| app.render(frame));
        start.elapsed()
    };

    let cold = draw(&mut app);
    let mut warm: Vec<Duration> = (0..FRAMES).map(|_| draw(&mut app)).collect();

    // Scrolled far up: the frame walks more cells.
    for _ in 0..50 {
        app.on_key(KeyEvent::from(KeyCode::PageUp));
    }
    let mut scrolled: Vec<Duration> = (0..FRAMES).map(|_| draw(&mut app)).collect();
    for _ in 0..50 {
        app.on_key(KeyEvent::from(KeyCode::PageDown));
    }

    // A model streams into the newest cell while the user types: event, key, frame.
    app.on_event(
        "run_bench",
        Event::RunStart {
            session_id: "s".into(),
            cwd: "/repo".into(),
            provider: "openai".into(),
            model: "gpt-4.1".into(),
            api_model: "gpt-4.1".into(),
        },
    );
    let mut keypress: Vec<Duration> = Vec::with_capacity(FRAMES);
    for i in 0..FRAMES {
        let start = Instant::now();
        app.on_event("run_bench", Event::text(format!("word{i} ")));
        if i % 40 == 39 {
            app.on_event("run_bench", Event::text("\n\n```rust\nlet x = 1;\n```\n\n"));
        }
        app.on_key(KeyEvent::from(KeyCode::Char('x')));
        let _ = draw(&mut app);
        keypress.push(start.elapsed());
    }
    let after = rss_kib();

    let frame = median(&mut warm);
    let key = median(&mut keypress);
    eprintln!("tui_render: {CELLS} cells, 120x40");
    eprintln!("  first frame (cold caches):       {cold:?}");
    eprintln!(
        "  frame median (pinned to bottom): {frame:?}  p99 {:?}",
        p99(&mut warm)
    );
    eprintln!(
        "  frame median (scrolled up):      {:?}  p99 {:?}",
        median(&mut scrolled),
        p99(&mut scrolled)
    );
    eprintln!(
        "  keypress-to-frame median while streaming: {key:?}  p99 {:?}",
        p99(&mut keypress)
    );
    eprintln!(
        "  resident memory: {} KiB before, {} KiB after (+{} KiB)",
        before,
        after,
        after.saturating_sub(before)
    );
    let mut failed = false;
    if frame >= Duration::from_millis(5) {
        eprintln!("  BAR MISSED: frame median must be under 5 ms");
        failed = true;
    }
    if key >= Duration::from_millis(16) {
        eprintln!("  BAR MISSED: keypress-to-frame median must be under 16 ms");
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
}
