//! What headless output carries: the answer alone on stdout in text mode, no escape sequences or
//! bidirectional overrides from the model, readable stage lines, and stream-json's exact text and
//! typed fields.

use crate::support;

use serde_json::json;
use support::attack::sandbox_outside_tmp;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, exec_json, exec_text, run, run_raw, stream_json};

use crate::pipeline::code_writer::{FIXED, code, fix_calc, project, verdict};

const HOSTILE: &str =
    "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZWNobyBoaQ==\u{7}\u{1b}[31mred\u{1b}[0m\u{1b}[2J";

fn assert_terminal_safe(what: &str, text: &str) {
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
        "{what} carries control sequences: {text:?}"
    );
}

#[test]
fn text_output_strips_escape_sequences_from_model_and_tool_text() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"printf '\\033]0;tool\\007\\033[41mbg\\n'"}"#],
        ),
        openai::answer(&[HOSTILE, "answer\u{1b}", "]0;split\u{7}"]),
    ]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "Say it",
    ]);
    let out = run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_terminal_safe("stdout", &out.stdout);
    assert_terminal_safe("stderr", &out.stderr);
    assert!(out.stdout.contains("redanswer"), "{:?}", out.stdout);
    assert!(out.stderr.contains("run_command"), "{}", out.stderr);
}

#[test]
fn stream_json_keeps_the_text_exactly() {
    // A program reading JSON gets the model's bytes, escaped by JSON, and decides for itself.
    let provider = FakeProvider::start(vec![openai::answer(&[HOSTILE])]);
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "Say it"]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.text(), HOSTILE);
    assert_terminal_safe("the raw JSON lines", &out.stdout);
}

/// The text printer redacted and then stripped control characters, so a key with a control
/// character inside it (`sk-…\a…`) passed redaction and was put back together on the terminal,
/// in one delta or across two.
#[test]
fn text_output_does_not_reassemble_a_secret_around_control_characters() {
    let (head, tail) = support::TEST_KEY.split_at(12);
    let provider = FakeProvider::start(vec![openai::answer(&[
        &format!("one {head}\u{7}{tail}\n"),
        &format!("two {head}\u{1b}[0m"),
        &format!("{tail}\n"),
    ])]);
    let sandbox = sandbox_outside_tmp();
    let mut command = sandbox.command(&provider.url);
    command.args(["exec", "--tier", "light", "Say it"]);
    let out = support::run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("one [REDACTED]"), "{:?}", out.stdout);
    assert!(!out.stdout.contains(support::TEST_KEY), "{:?}", out.stdout);
}

/// Bidirectional overrides and isolates are not escape sequences, but a terminal that lays out
/// bidirectional text (VTE, Konsole) shows `rm -rf ~ #` reordered: they are stripped too.
#[test]
fn text_output_strips_bidirectional_overrides() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[r#"{"command":"echo \u202e hi \u2066 there"}"#],
        ),
        openai::answer(&["safe \u{202e}txt.exe\u{202c} \u{2067}x\u{2069}\n"]),
    ]);
    let sandbox = sandbox_outside_tmp();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "Say it",
    ]);
    let out = support::run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for text in [&out.stdout, &out.stderr] {
        assert!(
            !text.contains(['\u{202e}', '\u{202c}', '\u{2066}', '\u{2067}', '\u{2069}']),
            "{text:?}"
        );
    }
    assert!(out.stdout.contains("safe txt.exe x"), "{:?}", out.stdout);
}

#[test]
fn text_output_shows_each_stage_as_a_readable_line_and_no_marker_text() {
    let provider = FakeProvider::start(vec![code("cw1", FIXED), verdict("av1")]);
    let sandbox = project();
    let out = exec_text(&sandbox, &provider, &fix_calc("accept-edits"));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for output in [&out.stdout, &out.stderr] {
        assert!(
            !output.contains("STAGE")
                && !output.contains('\u{0}')
                && !output.contains("{\"stage\""),
            "marker text reached the text output:\n{output}"
        );
    }
    let lines: Vec<&str> = out.stderr.lines().collect();
    for wanted in [
        "[1/3] code_writer started (iteration 1)",
        "[1/3] code_writer done in ",
        "[2/3] test_runner started (iteration 1)",
        "[2/3] test_runner done in ",
        "[3/3] acceptance_verifier done in ",
    ] {
        // Each on a line of its own, from its first column.
        assert!(
            lines.iter().any(|l| l.starts_with(wanted)),
            "no line starting {wanted:?}:\n{}",
            out.stderr
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[1/3] code_writer done in ") && l.ends_with(": wrote calc.py")),
        "{}",
        out.stderr
    );
    // The run is named at the end, with the way to undo what it wrote.
    let last = lines.last().copied().unwrap_or_default();
    assert!(
        last.starts_with("run run_") && last.contains("splice restore run_"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("Pipeline completed"), "{}", out.stdout);
}

#[test]
fn a_headless_denial_is_one_line_that_names_the_flags_and_stream_json_keeps_three_events() {
    let replies = || {
        vec![
            openai::call_json(
                "call_1",
                "write_file",
                json!({"path": "notes.txt", "content": "x\n"}),
            ),
            openai::answer(&["I could not write notes.txt."]),
        ]
    };
    let provider = FakeProvider::start(replies());
    let sandbox = Sandbox::new();
    let out = exec_text(&sandbox, &provider, &["--tier", "light", "Write notes.txt"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let denied: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("denied"))
        .collect();
    assert_eq!(denied.len(), 1, "{}", out.stderr);
    assert!(
        denied[0].contains("--permission-mode accept-edits")
            && denied[0].contains("--allow write_file"),
        "{}",
        denied[0]
    );
    assert!(!sandbox.root.join("notes.txt").exists());
    // The run id, for restore, even when nothing was written.
    assert!(
        out.stderr
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("run run_")),
        "{}",
        out.stderr
    );

    let provider = FakeProvider::start(replies());
    let out = exec_json(&sandbox, &provider, &["--tier", "light", "Write notes.txt"]);
    let kinds: Vec<String> = out
        .lines
        .iter()
        .filter(|l| l["id"] == "call_1" && l["type"] != "tool_call")
        .map(|l| l["type"].as_str().unwrap_or("?").to_string())
        .collect();
    assert_eq!(
        kinds,
        ["permission_request", "permission_decision", "tool_result"]
    );
}

/// A turn that narrates, then calls a failing command, then answers.
fn narrated_run() -> Vec<Reply> {
    let command = r#"{"command":"printf 'line 1\\nline 2\\nreason: disk full\\n'; exit 3"}"#;
    vec![
        Reply::Sse(vec![
            openai::text("Let me look at the files."),
            openai::tool_start(0, "call_1", "run_command"),
            openai::tool_args(0, command),
            openai::finish("tool_calls"),
            openai::usage(100, 20, 0),
            openai::done(),
        ]),
        openai::answer(&["The disk ", "is full."]),
    ]
}

/// `splice exec` text output: stdout is the answer only; narration, a failed command's tail and
/// a closing line with tokens and cost go to stderr.
#[test]
fn narration_stays_off_stdout_in_text_output() {
    let provider = FakeProvider::start(narrated_run());
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    command.args([
        "exec",
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "why is the build failing?",
    ]);
    let out = run_raw(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "The disk is full.\n");
    assert!(
        out.stderr.contains("Let me look at the files."),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("reason: disk full"), "{}", out.stderr);
    assert!(
        out.stderr.contains("tokens: 240 (200 in, 40 out)"),
        "{}",
        out.stderr
    );
}

/// In stream-json the answer is told apart from narration: the result carries it.
#[test]
fn stream_json_result_carries_the_answer_without_the_narration() {
    let provider = FakeProvider::start(narrated_run());
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args([
        "--tier",
        "light",
        "--permission-mode",
        "auto",
        "why is the build failing?",
    ]);
    let out = run(command, None);
    out.assert_well_formed();
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.final_result()["answer"], "The disk is full.");
}

#[test]
fn typed_result_fields_serialise_as_the_protocol_spells_them() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    let provider = FakeProvider::start(vec![openai::answer(&["hello"])]);
    let mut command = sandbox.command(&provider.url);
    stream_json(&mut command).args(["--tier", "light", "hi"]);
    let out = run(command, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let result = out.final_result();
    assert_eq!(result["tier"], "light");
    assert_eq!(result["status"], "completed");
    assert_eq!(result["stages"], serde_json::json!([]));
}
