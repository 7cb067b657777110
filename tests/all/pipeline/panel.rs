//! The pipeline panel drawn from a real run's stream-json, as any consumer of the stream could:
//! every iteration stays visible with each stage's outcome, `iteration N of M` comes from the
//! markers, and a failure's detail (model-written text) is shown in full on demand without a
//! control character reaching the screen.

use crate::support;

use std::path::Path;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::json;
use splice::tui::pipeline::{PANEL_WIDTH, Pipeline, StageState};
use splice::tui::theme::Theme;
use support::fake_provider::openai::call_json as submit;
use support::fake_provider::{FakeProvider, Reply};
use support::tmux::{Tmux, quote, splice_shell};
use support::{Outcome, Sandbox, run, stream_json};

/// The tmux session the TUI runs in.
const PANEL: &str = "panel";

const FIXED: &str = "def add(a, b):\n    return a + b\n";

const TEST: &str = "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";

/// A rejection whose reasons try to retitle the window, write the clipboard and clear the
/// screen, and run past any one row of the panel.
const HOSTILE: &str = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobyBoaQ==\u{7}\u{1b}[2J the change \
                       does not handle negative numbers, which the request asked for explicitly; \
                       END-OF-REASON";

fn project() -> Sandbox {
    let sandbox = Sandbox::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")));
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    sandbox.write("test_calc.py", TEST);
    sandbox.write(".gitignore", "__pycache__/\n");
    support::commit_all(&sandbox.root);
    sandbox
}

fn code(id: &str) -> Reply {
    submit(
        id,
        "submit_code",
        json!({"files": [{"path": "calc.py", "content": FIXED}], "summary": "add"}),
    )
}

/// A standard run: the verifier rejects iteration 1 with `HOSTILE`, accepts iteration 2.
fn rejected_once() -> Outcome {
    let provider = FakeProvider::start(vec![
        code("cw1"),
        submit(
            "av1",
            "submit_verdict",
            json!({"accepted": false, "reasons": [HOSTILE]}),
        ),
        code("cw2"),
        submit(
            "av2",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["adds"]}),
        ),
    ]);
    let sandbox = project();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "standard",
        "--permission-mode",
        "auto",
        "--max-iterations",
        "3",
        "--test-command",
        "python3 -m unittest test_calc",
        "Fix add in calc.py",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

/// The stream's reasoning, re-cut into pieces of `size` bytes (at char boundaries) so markers
/// arrive split, as a consumer reading a pipe may see them.
fn pieces(out: &Outcome, size: usize) -> Vec<String> {
    let all: String = out
        .of_type("reasoning")
        .iter()
        .filter_map(|l| l["delta"].as_str())
        .collect();
    let mut pieces = Vec::new();
    let mut piece = String::new();
    for c in all.chars() {
        piece.push(c);
        if piece.len() >= size {
            pieces.push(std::mem::take(&mut piece));
        }
    }
    pieces.push(piece);
    pieces
}

fn screen(pipeline: &Pipeline, now: Instant) -> (Buffer, String) {
    let area = Rect::new(0, 0, PANEL_WIDTH, 30);
    let mut buffer = Buffer::empty(area);
    pipeline.render(area, &mut buffer, &Theme::ansi(), now, 0);
    let text = (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n");
    (buffer, text)
}

#[test]
fn a_real_runs_markers_keep_every_iteration_and_show_a_hostile_failure_safely() {
    let out = rejected_once();
    let now = Instant::now();
    let mut pipeline = Pipeline::default();
    pipeline.max_iterations = Some(3);
    let mut shown = String::new();
    for piece in pieces(&out, 7) {
        shown.push_str(&pipeline.take_reasoning(&piece, now));
    }
    assert!(!shown.contains('\u{0}'), "a marker leaked into the text");
    // The markers carry exactly the payload docs/stream-json.md fixes.
    assert!(!out.stdout.contains("maxIterations"));
    let outcomes: Vec<Vec<String>> = pipeline
        .iterations
        .iter()
        .map(|it| {
            it.stages
                .iter()
                .map(|s| {
                    let state = match &s.state {
                        StageState::Done { .. } => "done",
                        StageState::Failed { .. } => "failed",
                        StageState::Skipped => "skipped",
                        StageState::Pending => "pending",
                        StageState::Running { .. } => "running",
                    };
                    format!("{}:{state}", s.name)
                })
                .collect()
        })
        .collect();
    assert_eq!(
        outcomes,
        [
            [
                "code_writer:done",
                "test_runner:done",
                "acceptance_verifier:failed"
            ],
            [
                "code_writer:done",
                "test_runner:done",
                "acceptance_verifier:done"
            ],
        ]
    );
    let (_, folded) = screen(&pipeline, now);
    assert!(folded.contains("iteration 2 of 3"), "{folded}");
    assert!(folded.contains("iteration 1 ✓ ✓ ✗"), "{folded}");
    assert!(!folded.contains("END-OF-REASON"), "{folded}");
    pipeline.toggle_detail();
    let (buffer, expanded) = screen(&pipeline, now);
    let flat: String = expanded.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("END-OF-REASON"), "{expanded}");
    for cell in buffer.content() {
        assert!(
            !cell.symbol().chars().any(char::is_control),
            "a control character reached a cell: {:?}",
            cell.symbol()
        );
    }
}

/// The pipeline panel's columns of a captured screen (its last `PANEL_WIDTH` of `width`).
fn panel_of(screen: &str, width: usize) -> String {
    screen
        .lines()
        .map(|line| {
            let chars: Vec<char> = line.chars().collect();
            let mut padded = chars.clone();
            padded.resize(width.max(chars.len()), ' ');
            let start = width.saturating_sub(usize::from(PANEL_WIDTH));
            padded[start.min(padded.len())..].iter().collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_tui_shows_every_iteration_and_ctrl_t_unfolds_a_hostile_failure() {
    let provider = FakeProvider::start(vec![
        code("cw1"),
        submit(
            "av1",
            "submit_verdict",
            json!({"accepted": false, "reasons": [HOSTILE]}),
        ),
        code("cw2"),
        submit(
            "av2",
            "submit_verdict",
            json!({"accepted": true, "reasons": ["adds"]}),
        ),
    ]);
    let sandbox = project();
    let args = format!(
        "--tier standard --permission-mode auto --max-iterations 3 --test-command {} {}",
        quote("python3 -m unittest test_calc"),
        quote("Fix add in calc.py"),
    );
    let shell = splice_shell(&sandbox, &provider.url, sandbox.dir.path(), &args);
    let tmux = Tmux::new("panel");
    tmux.start(PANEL, (110, 40), &shell);
    let done = panel_of(&tmux.wait_for(PANEL, "✓ done"), 110);
    assert!(done.contains("iteration 2 of 3"), "{done}");
    assert!(done.contains("iteration 1 ✓ ✓ ✗"), "{done}");
    assert!(done.contains("Ctrl-T full detail"), "{done}");
    assert!(!done.contains("END-OF-REASON"), "{done}");
    tmux.keys(PANEL, &["C-t"]);
    let screen = tmux.wait_for(PANEL, "Ctrl-T fold detail");
    let expanded = panel_of(&screen, 110);
    assert!(expanded.contains("END-OF-REASON"), "{expanded}");
    // The rejection's escape sequences never reached the terminal: the title is not `pwned`,
    // and the screen was not cleared.
    let title = tmux.run(&["display-message", "-p", "-t", PANEL, "#{pane_title}"]);
    assert!(!title.contains("pwned"), "{title}");
    assert!(
        screen.contains("Pipeline completed after 2 iteration(s)"),
        "{screen}"
    );
    tmux.keys(PANEL, &["C-t"]);
    let folded = panel_of(&tmux.wait_for(PANEL, "Ctrl-T full detail"), 110);
    assert!(!folded.contains("END-OF-REASON"), "{folded}");
}
