//! The TUI defects found in daily use (issue 19), on the real binary in tmux: a start without
//! a provider key says so at once, Ctrl-U clears the line, and a submission applied in
//! accept-edits shows its diff (folded, Ctrl-O unfolds it).

use crate::support;

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::tmux::{Tmux, quote, splice_shell};
use support::{Sandbox, TEST_KEY};

/// Ctrl-C twice: the TUI quits and the shell says how it ended.
fn quit(tmux: &Tmux) -> String {
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=")
}

#[test]
fn a_start_without_a_key_says_what_to_set_and_ctrl_u_clears_the_line() {
    let provider = FakeProvider::start(vec![]);
    let sandbox = Sandbox::new();
    let home = sandbox.dir.path();
    // OpenAI's own service, no key: what a new user gets.
    let shell = splice_shell(&sandbox, &provider.url, home, "")
        .replace(&format!(" OPENAI_API_KEY={}", quote(TEST_KEY)), "")
        .replace(&format!(" OPENAI_BASE_URL={}", quote(&provider.url)), "");
    assert!(!shell.contains("OPENAI_API_KEY") && !shell.contains("OPENAI_BASE_URL"));
    let tmux = Tmux::new("nokey");
    tmux.start("splice", (120, 30), &shell);
    let screen = tmux.wait_for("splice", "OPENAI_API_KEY is not set");
    assert!(screen.contains("--provider anthropic"), "{screen}");
    tmux.type_text("splice", "a draft I do not want");
    tmux.wait_for("splice", "a draft I do not want");
    tmux.keys("splice", &["C-u"]);
    tmux.wait_until("splice", "the composer emptied", |s| {
        !s.contains("a draft I do not want") && s.contains("Ask Splice to change something")
    });
    let after = quit(&tmux);
    assert!(after.contains("SPLICE_EXIT=0"), "{after}");
    assert!(provider.requests().is_empty(), "nothing was sent");
}

#[test]
fn a_submission_applied_in_accept_edits_shows_its_diff() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    support::commit_all(&sandbox.root);
    // The code writer's submission; the stages after it get no answer and the run fails, which
    // leaves the applied change and its cell on screen.
    let provider = FakeProvider::start(vec![openai::tool_call(
        "cw",
        "submit_code",
        &[&json!({
            "files": [{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}],
            "summary": "swap minus for plus"
        })
        .to_string()],
    )]);
    let home = sandbox.dir.path();
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        home,
        &format!(
            "--tier standard --permission-mode accept-edits --max-iterations 1 \
             --test-command true {}",
            quote("Fix add")
        ),
    );
    let tmux = Tmux::new("diff");
    tmux.start("splice", (120, 40), &shell);
    let folded = tmux.wait_for("splice", "+1 -1 lines · Ctrl-O shows the diff");
    assert!(folded.contains("submit_code"), "{folded}");
    assert!(!folded.contains("return a - b"), "{folded}");
    assert_eq!(
        sandbox.read("calc.py").as_deref(),
        Some("def add(a, b):\n    return a + b\n")
    );
    tmux.keys("splice", &["C-o"]);
    let expanded = tmux.wait_for("splice", "-     return a - b");
    assert!(expanded.contains("+     return a + b"), "{expanded}");
    assert!(expanded.contains("calc.py  (edit)"), "{expanded}");
    quit(&tmux);
}
