//! The real binary in a pseudo-terminal (tmux): a project definition that writes is approved in
//! a prompt the first time it is used, its diff is asked about in another, and the subagent folds
//! to one line under its call once it ended.

use super::support;

use support::Sandbox;
use support::fake_provider::FakeProvider;
use support::tmux::{Tmux, quote, splice_shell};

#[test]
fn a_project_writer_is_approved_and_its_diff_allowed_in_the_tui() {
    let provider = FakeProvider::start(super::writes::writer_replies("changes were applied"));
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "old\n");
    sandbox.write("draft.txt", "draft\n");
    sandbox.write(".splice/agents/writer.md", super::writes::WRITER);
    support::commit_all(&sandbox.root);
    let home = sandbox.dir.path();
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        home,
        &format!("--tier light {}", quote("PARENT-REQUEST")),
    );
    let tmux = Tmux::new("subagents");
    tmux.start("splice", (110, 40), &shell);

    let approval = tmux.wait_for("splice", "project agent `writer`");
    assert!(approval.contains("Permission needed"), "{approval}");
    tmux.wait_for("splice", "y allow once");
    tmux.keys("splice", &["y"]);

    let diff = tmux.wait_for("splice", "+ made by a subagent");
    assert!(diff.contains("write_file"), "{diff}");
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("old\n"));
    tmux.wait_for("splice", "y allow once");
    tmux.keys("splice", &["y"]);

    let done = tmux.wait_for("splice", "✓ done");
    assert!(done.contains("The writer is done."), "{done}");
    assert!(done.contains("agent_1 (writer) · 3 tool calls"), "{done}");
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("new\n"));
    assert_eq!(
        sandbox.read("new.txt").as_deref(),
        Some("made by a subagent\n")
    );
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=0");
}
