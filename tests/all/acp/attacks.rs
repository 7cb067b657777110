//! Attacks on what an editor's permission dialog decides: an answer reaches only the question
//! it was asked for (never a later one the model gave the same tool call id), a question
//! Splice abandons is withdrawn in the editor, and the dialog shows all of what would run.

use serde_json::{Value, json};

use super::{client, light, text_of, updates};
use crate::support;
use support::Sandbox;
use support::fake_provider::{FakeProvider, Reply, openai};

/// What the model runs once the stale answer has come; it must never run.
const PWNED: &str = "id > PWNED";

fn command(id: &str, command: &str) -> Reply {
    openai::call_json(id, "run_command", json!({ "command": command }))
}

/// The checks every stale-answer attack shares: two dialogs, the first withdrawn in the editor
/// (its request cancelled, its call ended as not run) before the second came; the stale
/// "allow once" refused with a warning; nothing ran on it.
fn assert_stale_answer_refused(sandbox: &Sandbox, report: &Value, call: &str) {
    assert!(
        !sandbox.root.join("PWNED").exists(),
        "the stale answer approved the later command: {report}"
    );
    let asked = report["permissions"].as_array().expect("permissions");
    assert_eq!(asked.len(), 2, "{report}");
    assert_eq!(asked[0]["toolCall"]["toolCallId"], call);
    assert_eq!(asked[1]["toolCall"]["toolCallId"], call, "the id reused");
    assert!(
        asked[1]["toolCall"]["content"].to_string().contains(PWNED),
        "{report}"
    );
    // The editor was told: the request cancelled ($/cancel_request) by the time the person
    // answered it, and its call ended.
    assert_eq!(report["withdrawn"][0], true, "{report}");
    let ended = updates(report, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == call && u["content"].to_string().contains("withdrawn"))
        .unwrap_or_else(|| panic!("the withdrawn call never ended: {report}"));
    assert_eq!(ended["status"], "failed", "{ended}");
    assert!(
        text_of(report, "agent_message_chunk").contains("no longer waits"),
        "the refused approval is not told: {report}"
    );
}

/// The editor keeps the first dialog (`printf first`) open while the turn is cancelled; the
/// next turn's command, `id > PWNED`, has the same tool call id. The person clicks "Allow
/// once" on the old dialog: that answers nothing, and the new dialog's "Reject" decides.
#[test]
fn a_stale_answer_after_a_cancel_never_approves_a_later_command() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        command("call_1", "printf first > first.txt"),
        Reply::when("SECOND-REQUEST", command("call_1", PWNED)),
        openai::answer(&["Done."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": light(),
            "prompts": ["FIRST-REQUEST", "SECOND-REQUEST"],
            "hold": true,
            "cancelOnPermission": true,
            "answer": "allow_once",
            "laterAnswer": "reject_once",
        }),
    );
    assert_eq!(
        report["stopReasons"],
        json!(["cancelled", "end_turn"]),
        "{report}"
    );
    assert_stale_answer_refused(&sandbox, &report, "call_1");
    assert!(!sandbox.root.join("first.txt").exists(), "{report}");
}

/// A subagent's command dialog is open when its time (`agentTimeoutSecs`) runs out; the
/// editor keeps it. The next turn's command reuses the tool call id: the late "Allow once" on
/// the old dialog answers nothing.
#[test]
fn a_stale_answer_after_a_subagent_timed_out_never_approves_a_later_command() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    support::commit_all(&sandbox.root);
    std::fs::write(
        sandbox.dir.path().join("config.json"),
        r#"{"agentTimeoutSecs": 4}"#,
    )
    .expect("write the config");
    crate::subagents::user_agent(
        &sandbox,
        "runner",
        "---\ndescription: Runs\ntools: [run_command]\n---\nRun.\n",
    );
    let provider = FakeProvider::start(vec![
        Reply::when(
            "PARENT-REQUEST",
            openai::call_json(
                "call_a",
                "agent",
                json!({"description": "run", "prompt": "SUBTASK-RUN", "agent": "runner"}),
            ),
        ),
        Reply::when("SUBTASK-RUN", command("call_r", "printf first > first.txt")),
        Reply::when("agentTimeoutSecs", openai::answer(&["It was stopped."])),
        Reply::when("SECOND-REQUEST", command("call_r", PWNED)),
        openai::answer(&["Done."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({
            "args": light(),
            "prompts": ["PARENT-REQUEST", "SECOND-REQUEST"],
            "hold": true,
            "answer": "allow_once",
            "laterAnswer": "reject_once",
        }),
    );
    assert_eq!(
        report["stopReasons"],
        json!(["end_turn", "end_turn"]),
        "{report}"
    );
    assert_stale_answer_refused(&sandbox, &report, "call_r");
    assert!(!sandbox.root.join("first.txt").exists(), "{report}");
}

/// The editor's report of one turn whose model asks to run `shown` and whose person rejects
/// it: nothing ran.
fn rejected(sandbox: &Sandbox, shown: &str) -> Value {
    let provider = FakeProvider::start(vec![
        command("call_1", shown),
        openai::answer(&["Not allowed."]),
    ]);
    let report = client(
        sandbox,
        &provider,
        json!({"args": light(), "prompts": ["list the files"], "answer": "reject_once"}),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    assert!(!sandbox.root.join("PWNED").exists(), "{report}");
    report
}

/// The first dialog's text and title.
fn dialog(report: &Value) -> (&str, &str) {
    let asked = &report["permissions"][0]["toolCall"];
    let text = asked["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in the dialog: {asked}"));
    (text, asked["title"].as_str().unwrap_or_default())
}

/// What an editor shows of markdown: the text of every text and code event, in order.
fn rendered(markdown: &str) -> String {
    use pulldown_cmark::{Event, Parser};
    let mut shown = String::new();
    for event in Parser::new(markdown) {
        match event {
            Event::Text(text) | Event::Code(text) | Event::Html(text) => shown.push_str(&text),
            Event::SoftBreak | Event::HardBreak => shown.push('\n'),
            _ => {}
        }
    }
    shown
}

/// The command holds a line of four backticks (which closed the dialog's four-backtick fence)
/// and a link reference definition spanning the line that runs `id > PWNED` (which renders as
/// nothing): the dialog shows every line of it, and its title names the command.
#[test]
fn the_permission_dialog_shows_all_of_a_command_that_hides_in_markdown() {
    // To the shell: `ls`, an empty line, a command not found, then `id > PWNED`; the rest of
    // each line is a comment. To markdown: a fence's end, then a link reference definition
    // whose title spans the line that writes PWNED.
    let hiding = format!("ls # ```\n````\n[x]: # \"\n{PWNED} # \"");
    let report = rejected(&Sandbox::new(), &hiding);
    let (text, title) = dialog(&report);
    let shown = rendered(text);
    assert!(
        shown.contains(PWNED),
        "the dialog hides it: {shown:?} of {text:?}"
    );
    assert_eq!(
        shown.trim_end(),
        hiding,
        "the dialog shows {shown:?} of {text:?}"
    );
    // The title names the command, whole, on one line.
    let shown = rendered(title);
    assert!(shown.starts_with("Run "), "{title}");
    assert!(shown.contains(PWNED) && !shown.contains('\n'), "{shown:?}");
    // So does the call's own title.
    let call = updates(&report, "tool_call");
    let shown = rendered(call[0]["title"].as_str().unwrap_or_default());
    assert!(shown.contains(PWNED), "{shown:?}");
}

/// A write's dialog names the tool and the file (title) and points at it (locations), so the
/// editor does not show a bare "Agent requested permission".
#[test]
fn a_permission_request_has_a_title_and_the_files_it_writes() {
    let sandbox = Sandbox::new();
    let provider = FakeProvider::start(vec![
        openai::call_json(
            "call_1",
            "write_file",
            json!({"path": "b.txt", "content": "new\n"}),
        ),
        openai::answer(&["Not allowed."]),
    ]);
    let report = client(
        &sandbox,
        &provider,
        json!({"args": light(), "prompts": ["write b.txt"], "answer": "reject_once"}),
    );
    assert_eq!(report["stopReasons"], json!(["end_turn"]), "{report}");
    let asked = &report["permissions"][0]["toolCall"];
    assert_eq!(asked["title"], "Write `b.txt`", "{asked}");
    assert_eq!(asked["kind"], "edit", "{asked}");
    let b = sandbox.root.join("b.txt").display().to_string();
    assert_eq!(asked["locations"][0]["path"], b, "{asked}");
    assert_eq!(asked["locations"][0]["line"], 1, "{asked}");
    assert_eq!(sandbox.read("b.txt"), None);
}

/// Characters an editor lays out or hides rather than shows: bidirectional embeddings,
/// overrides and isolates, and zero-width marks.
fn disguising(c: char) -> bool {
    matches!(
        c,
        '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}'
    )
}

/// A Trojan Source command: to the shell `ls ; id > PWNED #`, but with a right-to-left
/// override around two isolates an editor lays it out as `ls # ; id > PWNED`, the command
/// shown as a comment; a zero-width space hides in the file's name. The dialog (its text and
/// its title) and the call's own title show each such character as an escape, never as it
/// is.
#[test]
fn the_permission_dialog_shows_bidi_overrides_and_invisible_characters() {
    let trojan = format!("ls \u{202e}\u{2066}; {PWNED}\u{2069}\u{2066}# \u{2069}\u{200b}");
    let report = rejected(&Sandbox::new(), &trojan);
    let (text, title) = dialog(&report);
    let call = updates(&report, "tool_call");
    let call_title = call[0]["title"].as_str().unwrap_or_default();
    for (what, shown) in [("text", text), ("title", title), ("call title", call_title)] {
        assert!(
            !shown.chars().any(disguising),
            "the dialog's {what} lays the command out as something else: {shown:?}"
        );
        for escape in ["\\u{202e}", "\\u{2066}", "\\u{2069}", "\\u{200b}"] {
            assert!(shown.contains(escape), "{what} hides {escape}: {shown:?}");
        }
        assert!(shown.contains(PWNED), "{what}: {shown:?}");
    }
}

/// The shell splits words on spaces, tabs and line breaks only: `./check\u{a0}--help` runs
/// the planted file `check --help`, not `./check` with `--help`, and a trailing no-break space
/// after `. ` sources a planted file the dialog showed as nothing. The dialog shows every
/// space the shell does not split on as an escape.
#[test]
fn the_permission_dialog_shows_spaces_the_shell_does_not_split_on() {
    let sandbox = Sandbox::new();
    sandbox.write("check", "echo fine\n");
    sandbox.write("check\u{a0}--help", &format!("{PWNED}\n"));
    sandbox.write("\u{2003}", &format!("{PWNED}\n"));
    let report = rejected(&sandbox, "sh ./check\u{a0}--help; . \u{2003}");
    let (text, title) = dialog(&report);
    for (what, shown) in [("text", text), ("title", title)] {
        assert!(
            !shown.contains(['\u{a0}', '\u{2003}']),
            "the dialog's {what} shows a word the shell runs as two: {shown:?}"
        );
        for escape in ["\\u{a0}", "\\u{2003}"] {
            assert!(shown.contains(escape), "{what} hides {escape}: {shown:?}");
        }
    }
}
