//! Session truths (issue 8, item 5) against the real binary: `--resume`/`--continue` never turn
//! an id into a prompt, never open another directory's session, and an unknown id is a usage
//! error that lists the sessions one could mean.

use crate::support;

use std::path::Path;

use support::fake_provider::{FakeProvider, openai};
use support::tmux::{Tmux, splice_shell};
use support::{Sandbox, run_raw};

/// A saved session as the TUI writes it: its header record and one prompt.
fn saved_session(sandbox: &Sandbox, id: &str, cwd: &Path, prompt: &str) {
    let dir = sandbox.data.join("sessions");
    std::fs::create_dir_all(&dir).expect("create dir");
    let header = serde_json::json!({"kind": "session", "sessionId": id, "cwd": cwd});
    let prompt = serde_json::json!({"kind": "prompt", "text": prompt});
    std::fs::write(
        dir.join(format!("{id}.jsonl")),
        format!("{header}\n{prompt}\n"),
    )
    .expect("write <id>.jsonl");
}

/// Two saved sessions, one started here and a newer one elsewhere; a provider that would answer
/// if anything were wrongly submitted.
fn setup() -> (Sandbox, FakeProvider) {
    let sandbox = Sandbox::new();
    saved_session(
        &sandbox,
        "session_here01",
        &sandbox.root,
        "fix the add function",
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    saved_session(
        &sandbox,
        "session_else01",
        Path::new("/somewhere/else"),
        "elsewhere secret plan",
    );
    let provider = FakeProvider::start(vec![openai::answer(&["I should never be asked."])]);
    (sandbox, provider)
}

fn splice(sandbox: &Sandbox, provider: &FakeProvider, args: &[&str]) -> support::Outcome {
    let mut command = sandbox.command(&provider.url);
    command.env("SPLICE_PROVIDER", "openai").args(args);
    run_raw(command, None)
}

#[test]
fn an_unknown_resume_id_is_a_usage_error_listing_this_directorys_sessions() {
    for args in [
        &["--resume", "nosuch"][..],
        &["--resume=nosuch", "go on"][..],
    ] {
        let (sandbox, provider) = setup();
        let out = splice(&sandbox, &provider, args);
        assert_eq!(out.code, 2, "{args:?}: stderr {}", out.stderr);
        assert!(
            out.stderr.contains("no saved session `nosuch`"),
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("session_here01") && out.stderr.contains("fix the add function"),
            "the recent sessions of this directory are listed: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("session_else01") && !out.stderr.contains("elsewhere secret"),
            "another directory's session is not listed: {}",
            out.stderr
        );
        assert!(
            provider.requests().is_empty(),
            "{args:?}: the id was submitted as a prompt"
        );
    }
}

#[test]
fn resume_never_opens_a_session_of_another_directory() {
    let (sandbox, provider) = setup();
    let out = splice(&sandbox, &provider, &["--resume=session_else01"]);
    assert_eq!(out.code, 2, "stderr {}", out.stderr);
    assert!(out.stderr.contains("session_else01"), "{}", out.stderr);
    assert!(out.stderr.contains("/somewhere/else"), "{}", out.stderr);
    assert!(provider.requests().is_empty());
}

#[test]
fn continue_and_resume_without_a_terminal_are_refused_not_ignored() {
    let (sandbox, provider) = setup();
    // A known session of this directory: the flags open the TUI, which needs a terminal;
    // running the words as a fresh headless request would silently drop the session.
    for args in [
        &["--continue", "and now the tests"][..],
        &["--resume=session_here01", "and now the tests"][..],
        &["--resume"][..],
    ] {
        let out = splice(&sandbox, &provider, args);
        assert_eq!(out.code, 2, "{args:?}: stderr {}", out.stderr);
        assert!(out.stderr.contains("terminal"), "{args:?}: {}", out.stderr);
    }
    assert!(provider.requests().is_empty());
}

#[test]
fn continue_with_no_session_here_is_a_usage_error() {
    let sandbox = Sandbox::new();
    saved_session(
        &sandbox,
        "session_else02",
        Path::new("/somewhere/else"),
        "elsewhere",
    );
    let provider = FakeProvider::start(vec![openai::answer(&["no"])]);
    let out = splice(&sandbox, &provider, &["--continue"]);
    assert_eq!(out.code, 2, "stderr {}", out.stderr);
    assert!(out.stderr.contains("no saved session"), "{}", out.stderr);
    assert!(!out.stderr.contains("session_else02"), "{}", out.stderr);
    assert!(provider.requests().is_empty());
}

/// `cd ROOT && env -i VARS splice ARGS; echo SPLICE_EXIT=$?; sleep 60`, HOME outside the sandbox.
fn shell(sandbox: &Sandbox, provider: &FakeProvider, args: &str) -> String {
    splice_shell(sandbox, &provider.url, &support::outside_dir(), args)
}

/// `/quit` the TUI in `session`; the session id it prints for `splice --resume`.
fn quit_for_id(tmux: &Tmux, session: &str) -> String {
    tmux.keys(session, &["/quit", "Enter"]);
    let after = tmux.wait_for(session, "SPLICE_EXIT=0");
    after
        .split("splice --resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no `splice --resume <id>` after quitting:\n{after}"))
        .to_string()
}

/// The text of every user message of one recorded request.
fn user_texts(body: &serde_json::Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["content"].to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn after_undo_the_model_is_told_and_a_resumed_session_is_told_too() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "write_file",
            &[r#"{"path":"notes.txt","content":"written by the model\n"}"#],
        ),
        openai::answer(&["I wrote notes.txt."]),
        openai::answer(&["Understood, notes.txt is back."]),
        openai::answer(&["Still know it was undone."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "original\n");
    let tmux = Tmux::new("undo");
    tmux.start(
        "first",
        (110, 30),
        &shell(
            &sandbox,
            &provider,
            "--tier light --permission-mode accept-edits 'Write notes.txt'",
        ),
    );
    tmux.wait_for("first", "I wrote notes.txt.");
    tmux.wait_for("first", "✓ done");
    assert_eq!(
        sandbox.read("notes.txt").as_deref(),
        Some("written by the model\n")
    );
    tmux.keys("first", &["/undo", "Enter"]);
    tmux.wait_for("first", "undo: restored notes.txt");
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("original\n"));
    tmux.keys("first", &["what is in notes.txt now?", "Enter"]);
    tmux.wait_for("first", "Understood, notes.txt is back.");
    tmux.wait_for("first", "✓ done");

    // The request after the undo tells the model its write was undone, naming the file.
    let requests = provider.requests();
    assert_eq!(requests.len(), 3, "requests: {}", requests.len());
    let told = |body: &serde_json::Value| {
        user_texts(body)
            .iter()
            .any(|t| t.contains("/undo") && t.contains("notes.txt"))
    };
    assert!(
        told(&requests[2].body),
        "the model was not told about the undo: {:?}",
        user_texts(&requests[2].body)
    );
    assert!(!told(&requests[1].body));

    // Quitting gives the terminal back and says how to come back.
    let id = quit_for_id(&tmux, "first");
    assert!(id.starts_with("session_"), "{id}");

    // Reopened, the session still knows about the undo: the note is replayed, and the undone
    // checkpoint is not offered again.
    tmux.start(
        "second",
        (110, 30),
        &shell(&sandbox, &provider, &format!("--resume={id} --tier light")),
    );
    tmux.wait_for("second", "session resumed");
    let reopened = tmux.wait_for("second", id.as_str());
    assert!(reopened.contains("undo: restored notes.txt"), "{reopened}");
    tmux.keys("second", &["/undo", "Enter"]);
    tmux.wait_for("second", "nothing to undo");
    tmux.keys("second", &["and now?", "Enter"]);
    tmux.wait_for("second", "Still know it was undone.");
    let requests = provider.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        told(&requests[3].body),
        "the resumed conversation lost the undo note: {:?}",
        user_texts(&requests[3].body)
    );
    tmux.keys("second", &["/quit", "Enter"]);
    tmux.wait_for("second", "SPLICE_EXIT=0");
}

#[test]
fn resume_without_an_id_offers_a_picker_of_this_directorys_sessions() {
    let (sandbox, provider) = setup();
    std::thread::sleep(std::time::Duration::from_millis(20));
    saved_session(&sandbox, "session_here02", &sandbox.root, "rename parse");
    let tmux = Tmux::new("picker");
    tmux.start("pick", (110, 30), &shell(&sandbox, &provider, "--resume"));
    let picker = tmux.wait_for("pick", "Resume a session");
    assert!(
        picker.contains("session_here02") && picker.contains("session_here01"),
        "{picker}"
    );
    assert!(!picker.contains("session_else01"), "{picker}");
    // The newest is selected first; Down then Enter opens the older one.
    tmux.keys("pick", &["Down"]);
    tmux.keys("pick", &["Enter"]);
    let opened = tmux.wait_for("pick", "session resumed");
    assert!(opened.contains("› fix the add function"), "{opened}");
    tmux.keys("pick", &["/quit", "Enter"]);
    let after = tmux.wait_for("pick", "SPLICE_EXIT=0");
    assert!(after.contains("splice --resume session_here01"), "{after}");

    // Esc leaves without opening anything.
    tmux.start("cancel", (110, 30), &shell(&sandbox, &provider, "--resume"));
    tmux.wait_for("cancel", "Resume a session");
    tmux.keys("cancel", &["Escape"]);
    let after = tmux.wait_for("cancel", "SPLICE_EXIT=0");
    assert!(!after.contains("splice --resume"), "{after}");
    assert!(provider.requests().is_empty());
}

#[test]
fn a_request_typed_during_a_run_is_queued_and_sent_when_the_run_ends() {
    use support::fake_provider::Reply;
    let mut slow = vec![openai::text("Working on it. ")];
    slow.extend(["still going. ", "First done."].map(openai::text));
    slow.extend([
        openai::finish("stop"),
        openai::usage(100, 20, 0),
        openai::done(),
    ]);
    let provider = FakeProvider::start(vec![
        Reply::Slow(slow, std::time::Duration::from_millis(700)),
        openai::answer(&["Second done."]),
    ]);
    let sandbox = Sandbox::new();
    let tmux = Tmux::new("queue");
    tmux.start(
        "queue",
        (110, 30),
        &shell(&sandbox, &provider, "--tier light 'first request'"),
    );
    tmux.wait_for("queue", "Working on it.");
    tmux.keys("queue", &["then the second", "Enter"]);
    let queued = tmux.wait_for("queue", "1 queued");
    assert!(queued.contains("queued: then the second"), "{queued}");
    assert!(
        !queued.contains("First done."),
        "the run ended before the test typed:\n{queued}"
    );
    let done = tmux.wait_for("queue", "Second done.");
    assert!(done.contains("First done."), "{done}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let last_user = user_texts(&requests[1].body).pop().unwrap_or_default();
    assert!(last_user.contains("then the second"), "{last_user}");
    tmux.keys("queue", &["/quit", "Enter"]);
    tmux.wait_for("queue", "SPLICE_EXIT=0");
}

/// The messages of one recorded request, without the system prompt.
fn conversation_of(body: &serde_json::Value) -> Vec<serde_json::Value> {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] != "system")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_resumed_session_sends_the_model_the_conversation_it_had_denials_included() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "edit_file",
            &[r#"{"path":"calc.py","old_string":"a - b","new_string":"a + b"}"#],
        ),
        openai::answer(&["The edit was denied."]),
        openai::answer(&["It still subtracts."]),
    ]);
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    let tmux = Tmux::new("memory");
    tmux.start(
        "first",
        (110, 30),
        &shell(
            &sandbox,
            &provider,
            "--tier light --permission-mode read-only 'Fix add in calc.py'",
        ),
    );
    tmux.wait_for("first", "The edit was denied.");
    tmux.wait_for("first", "✓ done");
    let id = quit_for_id(&tmux, "first");

    tmux.start(
        "second",
        (110, 30),
        &shell(
            &sandbox,
            &provider,
            &format!("--resume={id} --tier light --permission-mode read-only"),
        ),
    );
    tmux.wait_for("second", "session resumed");
    tmux.keys("second", &["did it change?", "Enter"]);
    tmux.wait_for("second", "It still subtracts.");
    tmux.keys("second", &["/quit", "Enter"]);
    tmux.wait_for("second", "SPLICE_EXIT=0");

    let requests = provider.requests();
    assert_eq!(requests.len(), 3);
    let before = conversation_of(&requests[1].body);
    let resumed = conversation_of(&requests[2].body);
    // The first run's last request held the call and its denied result.
    assert!(
        before
            .iter()
            .any(|m| m["role"] == "assistant"
                && m["tool_calls"][0]["function"]["name"] == "edit_file"),
        "{before:?}"
    );
    assert!(
        before
            .iter()
            .any(|m| m["role"] == "tool"
                && m["content"].as_str().is_some_and(|c| c.contains("denied"))),
        "{before:?}"
    );
    // Resumed: exactly those messages, the answer that followed, and the new request.
    assert_eq!(resumed.len(), before.len() + 2, "{resumed:?}");
    assert_eq!(resumed[..before.len()], before[..]);
    assert_eq!(resumed[before.len()]["role"], "assistant");
    assert_eq!(
        resumed[before.len()]["content"],
        "The edit was denied.",
        "{resumed:?}"
    );
    assert_eq!(resumed[before.len() + 1]["role"], "user");
    assert!(
        resumed[before.len() + 1]["content"]
            .to_string()
            .contains("did it change?"),
        "{resumed:?}"
    );
    assert_eq!(
        sandbox.read("calc.py").as_deref(),
        Some("def add(a, b):\n    return a - b\n")
    );
}
