//! The real binary in a pseudo-terminal (tmux) against the fake provider: a prompt goes in, the
//! model asks to write a file, `y` approves it, the file lands on disk and the screen shows it.

use crate::support;

use support::fake_provider::{FakeProvider, openai};
use support::tmux::{Tmux, quote, splice_shell};
use support::{Sandbox, TEST_KEY};

#[test]
fn prompt_approve_write_with_y_and_see_it_on_screen() {
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "write_file",
            &[
                r#"{"path":"hello.txt","#,
                r#""content":"hi from splice\n"}"#,
            ],
        ),
        openai::answer(&["Wrote **hello.txt** for you."]),
    ]);
    let sandbox = Sandbox::new();
    let home = sandbox.dir.path();
    let resume = splice_shell(&sandbox, &provider.url, home, "--continue");
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        home,
        &format!("--tier light {}", quote("Create hello.txt")),
    );
    let tmux = Tmux::new("tui");
    tmux.start("splice", (100, 30), &shell);

    let prompt = tmux.wait_for("splice", "Permission needed");
    assert!(prompt.contains("write_file"), "{prompt}");
    assert!(prompt.contains("hello.txt"), "{prompt}");
    assert!(
        prompt.contains("+ hi from splice"),
        "the diff of the write:\n{prompt}"
    );
    assert!(
        sandbox.read("hello.txt").is_none(),
        "written before approval"
    );

    // Keys are the composer's for a moment after a prompt appears; the legend says when not.
    tmux.wait_for("splice", "y allow once");
    tmux.keys("splice", &["y"]);
    // The answer streams in before the run ends: wait for the end, then look at everything.
    let done = tmux.wait_for("splice", "✓ done");
    assert!(done.contains("Wrote hello.txt for you."), "{done}");
    assert!(done.contains("approved in TUI"), "{done}");
    assert!(!done.contains("Permission needed"), "{done}");
    assert_eq!(
        sandbox.read("hello.txt").as_deref(),
        Some("hi from splice\n")
    );
    // Both requests' usage (120 tokens each) reached the status line, priced.
    assert!(done.contains("240 tok · $"), "{done}");

    // Ctrl-C twice when idle quits and gives the terminal back.
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    let after = tmux.wait_for("splice", "SPLICE_EXIT=0");
    assert!(!after.contains("Permission needed"), "{after}");

    // The session was saved under the data dir.
    let sessions: Vec<_> = std::fs::read_dir(sandbox.data.join("sessions"))
        .map(|d| d.filter_map(Result::ok).collect())
        .unwrap_or_default();
    assert_eq!(sessions.len(), 1);
    let saved = std::fs::read_to_string(sessions[0].path()).unwrap_or_default();
    assert!(saved.contains("Create hello.txt"), "{saved}");
    assert!(saved.contains("permission_decision"), "{saved}");
    assert!(
        !saved.contains(TEST_KEY),
        "secrets are redacted in the session file"
    );

    // `--continue` reopens that session with its transcript.
    tmux.start("resumed", (100, 30), &resume);
    let reopened = tmux.wait_for("resumed", "session resumed");
    assert!(reopened.contains("› Create hello.txt"), "{reopened}");
    assert!(reopened.contains("Wrote hello.txt for you."), "{reopened}");
    tmux.keys("resumed", &["/quit", "Enter"]);
    tmux.wait_for("resumed", "SPLICE_EXIT=0");
}
