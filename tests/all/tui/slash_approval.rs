//! Issue 28, a planted command: a project command file's `` !`…` `` commands and
//! `allowed-tools` take effect only once the person approved the file. Against the real binary
//! in tmux: `/status` from `.splice/commands/status.md` brings up the approval prompt, which
//! shows the file, what it would allow and the command it would run; refused, the command does
//! not run and the model gets the file as plain text; approved in a new session, it runs and
//! the model gets its output, and the approval is kept (not asked again).

use crate::slash_commands::sent_text;
use crate::support;

use support::Sandbox;
use support::fake_provider::{FakeProvider, openai};
use support::tmux::{Tmux, splice_shell};

const TUI: &str = "slash";
const FILE: &str = ".splice/commands/status.md";
/// The command the file runs, and what it prints: the output differs from the command's
/// text, so the request shows whether it ran.
const RUNS: &str = "printf '%s-%s' status green";
const PRINTS: &str = "status-green";

/// A TUI in ask mode, idle, the provider answering each request with `replies`.
fn session(name: &str, sandbox: &Sandbox, replies: &[&str]) -> (Tmux, FakeProvider) {
    let provider = FakeProvider::start(replies.iter().map(|r| openai::answer(&[r])).collect());
    let shell = splice_shell(
        sandbox,
        &provider.url,
        sandbox.dir.path(),
        "--tier light --permission-mode ask",
    );
    let tmux = Tmux::new(&format!("slash-{name}"));
    tmux.start(TUI, (110, 40), &shell);
    tmux.wait_for(TUI, "Ask Splice");
    (tmux, provider)
}

/// Type `/status` and send it: the approval prompt comes up (its keys once the guard is over).
fn invoke(tmux: &Tmux) -> String {
    tmux.type_text(TUI, "/status");
    tmux.keys(TUI, &["Enter"]);
    tmux.wait_until(TUI, "the prompt's keys", |s| {
        s.contains("Permission needed") && s.contains(" deny")
    })
}

#[test]
fn a_project_command_runs_its_commands_only_once_approved_in_the_tui() {
    let sandbox = Sandbox::new();
    sandbox.write(
        FILE,
        &format!("---\nallowed-tools: Bash(printf:*)\n---\nReport the status: !`{RUNS}`\n"),
    );

    // Refused: the prompt shows what the approval covers; `n` runs nothing.
    let (tmux, provider) = session("refuse", &sandbox, &["Plain."]);
    let prompt = invoke(&tmux);
    for shown in [
        "/status",
        &format!("the project's command file {FILE} would run `{RUNS}`"),
        "and would allow Bash(printf:*); it has not been approved",
        "allowed-tools (for the request it makes): Bash(printf:*)",
        "commands it runs before the request is sent:",
        &format!("  {RUNS}"),
    ] {
        assert!(prompt.contains(shown), "`{shown}` not shown:\n{prompt}");
    }
    assert!(provider.requests().is_empty(), "sent before the answer");
    tmux.keys(TUI, &["n"]);
    let done = tmux.wait_for(TUI, "Plain.");
    assert!(done.contains("sent as plain text"), "{done}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 1);
    let text = sent_text(&requests[0]);
    assert!(
        !text.contains(PRINTS),
        "the refused command ran and its output was sent: {text}"
    );
    assert!(
        text.contains(&format!(
            "Report the status: `{RUNS}` (not run: this command file is not approved)"
        )),
        "{text}"
    );
    drop(tmux);

    // A new session: approved ("allow always"), the command runs and the model gets its output;
    // the approval is kept, so a second `/status` is not asked about.
    let (tmux, provider) = session("approve", &sandbox, &["Green.", "Still green."]);
    invoke(&tmux);
    tmux.keys(TUI, &["a"]);
    let confirm = tmux.wait_for(TUI, "a/Enter confirm");
    // The prompt says how long the approval holds: it is kept, not for this session only.
    assert!(
        confirm.contains("in this project, kept for later sessions?"),
        "{confirm}"
    );
    tmux.keys(TUI, &["a"]);
    tmux.wait_for(TUI, "Green.");
    let text = sent_text(&provider.requests()[0]);
    assert!(
        text.contains(&format!("Report the status: {PRINTS}")),
        "{text}"
    );
    assert!(!text.contains("!`"), "{text}");
    tmux.type_text(TUI, "/status");
    tmux.keys(TUI, &["Enter"]);
    let again = tmux.wait_for(TUI, "Still green.");
    assert!(!again.contains("Permission needed"), "{again}");
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert!(sent_text(&requests[1]).contains(PRINTS));
    let kept = std::fs::read_to_string(sandbox.data.join("command-approvals.json"))
        .expect("the approval is kept in the data dir");
    assert!(kept.contains("status.md"), "{kept}");
}
