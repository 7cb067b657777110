//! A running tool's live view in the whole screen, drawn with `TestBackend`: a transcription
//! mid-run at a wide and a narrow width, a tool that reports only a fraction and a detail, and
//! the view folded once the result is in.

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::app::App;
use super::cells::Cell;
use super::snapshot_tests::app;
use splice_core::protocol::events::ToolStatus;
use splice_core::protocol::{Event, SideEffect};

fn draw(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    terminal.backend().to_string()
}

fn call(app: &mut App, id: &str, name: &str, args: serde_json::Value) {
    app.submit("implement what @demo.mp4 asks for".into());
    app.on_event(
        "run_1",
        Event::ToolCall {
            id: id.into(),
            name: name.into(),
            args,
            side_effect: SideEffect::Network,
        },
    );
}

fn report(app: &mut App, id: &str, stage: Option<&str>, fraction: Option<f64>, detail: &str) {
    app.on_event(
        "run_1",
        Event::ToolProgress {
            id: id.into(),
            stage: stage.map(str::to_string),
            fraction,
            detail: Some(detail.to_string()),
        },
    );
}

/// A transcription as the `transcribe` tool reports it: the plan, stages done and skipped, five
/// chunks in three states, a retry, and the transcribe stage at 42%.
fn transcription_mid_run() -> App {
    let mut app = app();
    call(
        &mut app,
        "call_1",
        "transcribe",
        json!({"path": "demo.mp4"}),
    );
    let id = "call_1";
    report(&mut app, id, Some("resolve"), None, "start");
    report(
        &mut app,
        id,
        Some("resolve"),
        Some(1.0),
        "done · local:8ee9f0a2",
    );
    report(
        &mut app,
        id,
        Some("plan"),
        None,
        "estimate $0.00274–$0.009942",
    );
    report(&mut app, id, Some("extract"), None, "start");
    report(&mut app, id, Some("extract"), Some(1.0), "done");
    report(
        &mut app,
        id,
        Some("chunk"),
        Some(1.0),
        "done · 5 chunks, 61 s of speech",
    );
    report(&mut app, id, Some("visual"), None, "skipped · audio only");
    for n in 1..=5 {
        report(
            &mut app,
            id,
            Some("transcribe"),
            None,
            &format!("chunk {n}/5 queued"),
        );
    }
    report(&mut app, id, Some("transcribe"), None, "start");
    for n in 1..=3 {
        report(
            &mut app,
            id,
            Some("transcribe"),
            None,
            &format!("chunk {n}/5 transcribing"),
        );
        report(
            &mut app,
            id,
            Some("transcribe"),
            None,
            &format!("chunk {n}/5 done"),
        );
    }
    report(
        &mut app,
        id,
        Some("transcribe"),
        None,
        "chunk 4/5 transcribing",
    );
    report(&mut app, id, Some("transcribe"), None, "retry 1/3");
    report(&mut app, id, Some("transcribe"), Some(0.42), "3/5 chunks");
    app
}

#[test]
fn a_transcription_mid_run_wide() {
    let mut app = transcription_mid_run();
    let screen = draw(&mut app, 100, 16);
    assert!(screen.contains("◐ transcribe 42%"), "{screen}");
    assert!(
        screen.contains("chunks 3/5 done · 1 transcribing · 1 queued"),
        "{screen}"
    );
    assert!(screen.contains("estimate $0.00274–$0.009942"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn a_transcription_mid_run_narrow() {
    let mut app = transcription_mid_run();
    let screen = draw(&mut app, 30, 22);
    // Stage items are never split across rows.
    for item in ["✓ resolve", "✓ extract", "– visual", "◐ transcribe 42%"] {
        assert!(screen.contains(item), "{item} missing or split:\n{screen}");
    }
    assert_snapshot!(screen);
}

#[test]
fn a_tool_reporting_only_fraction_and_detail_keeps_one_line() {
    let mut app = app();
    call(&mut app, "call_1", "docs.search", json!({"query": "retry"}));
    report(&mut app, "call_1", None, Some(0.25), "indexing");
    report(
        &mut app,
        "call_1",
        None,
        Some(0.6),
        "reading 12 of 20 pages",
    );
    let screen = draw(&mut app, 80, 10);
    assert!(
        screen.contains("⎿ running… 60% · reading 12 of 20 pages"),
        "{screen}"
    );
    assert_snapshot!(screen);
}

#[test]
fn the_live_view_folds_to_one_line_when_the_result_arrives() {
    let mut app = transcription_mid_run();
    report(&mut app, "call_1", Some("transcribe"), Some(1.0), "done");
    app.on_event(
        "run_1",
        Event::ToolResult {
            id: "call_1".into(),
            status: ToolStatus::Ok,
            output: "[00:00] Add a dark mode toggle to settings.\n[00:07] It should remember the choice.\n".into(),
            truncated: false,
            changed_files: None,
            display: None,
        },
    );
    // A report after the result changes nothing.
    report(&mut app, "call_1", Some("verify"), None, "start");
    let screen = draw(&mut app, 80, 12);
    assert!(screen.contains("⎿ ok · 5 stages · 5 chunks"), "{screen}");
    assert!(!screen.contains("running…"), "{screen}");
    assert!(!screen.contains("verify"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn a_report_for_an_unknown_call_is_ignored() {
    let mut app = transcription_mid_run();
    let before: Vec<Cell> = app.transcript().cells().cloned().collect();
    report(
        &mut app,
        "call_unknown",
        Some("transcribe"),
        Some(0.9),
        "start",
    );
    let after: Vec<Cell> = app.transcript().cells().cloned().collect();
    assert_eq!(before, after);
}
