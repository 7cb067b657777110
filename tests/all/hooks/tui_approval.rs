//! Approving a project's hooks in the real TUI (tmux): the modal shows each command with its
//! event before anything of it runs; the approval is stored, so a later headless run runs
//! them unasked; a changed configuration is not covered by it.

use super::{exec, hook, warnings};
use crate::support::Sandbox;
use crate::support::fake_provider::{FakeProvider, openai};
use crate::support::tmux::{Tmux, splice_shell};

fn project_hook(sandbox: &Sandbox, word: &str) {
    let marker = sandbox.dir.path().join("ran.txt");
    // The script it names is covered by the approval too, by its content.
    sandbox.write(".splice/hooks/note.sh", "echo noted\n");
    let command = format!(
        "cat > /dev/null; sh .splice/hooks/note.sh > /dev/null; echo {word} >> {}",
        marker.display()
    );
    let settings = serde_json::json!({ "hooks": hook("UserPromptSubmit", "", &command) });
    sandbox.write(".splice/settings.json", &settings.to_string());
}

#[test]
fn the_tui_asks_with_each_command_and_the_approval_covers_exactly_those_hooks() {
    let sandbox = Sandbox::new();
    let marker = sandbox.dir.path().join("ran.txt");
    project_hook(&sandbox, "approved-hook");
    let provider = FakeProvider::start(vec![openai::answer(&["one"]), openai::answer(&["two"])]);
    let tmux = Tmux::new("hooks-approve");
    tmux.start(
        "splice",
        (120, 40),
        &splice_shell(&sandbox, &provider.url, sandbox.dir.path(), ""),
    );
    // The whole modal: a capture may come while its frame is still being written.
    let modal = tmux.wait_until("splice", "the whole approval modal", |screen| {
        screen.contains("Run this project's hooks?") && screen.contains("unsandboxed")
    });
    assert!(modal.contains("UserPromptSubmit"), "{modal}");
    assert!(modal.contains("echo approved-hook"), "{modal}");
    assert!(modal.contains("unsandboxed"), "{modal}");
    assert!(modal.contains("The approval covers these files"), "{modal}");
    assert!(modal.contains(".splice/hooks/note.sh"), "{modal}");
    tmux.wait_for("splice", "y/a approve these hooks");
    tmux.keys("splice", &["y"]);
    tmux.wait_for("splice", "project hooks approved");
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "Ctrl-C again to quit");
    tmux.keys("splice", &["C-c"]);
    let end = tmux.wait_for("splice", "SPLICE_EXIT=");
    assert!(end.contains("SPLICE_EXIT=0"), "{end}");
    assert!(!marker.exists(), "a hook ran without a request");

    // Headless, without the flag: the stored approval runs them.
    let out = exec(&sandbox, &provider, &["hello"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(
        warnings(&out, "hooks_unapproved").is_empty(),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "approved-hook\n"
    );

    // A changed command is another configuration: not run, and said so.
    project_hook(&sandbox, "changed-hook");
    let out = exec(&sandbox, &provider, &["hello again"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let warned = warnings(&out, "hooks_unapproved");
    assert_eq!(warned.len(), 1, "{}", out.stdout);
    assert!(warned[0].contains("echo changed-hook"), "{}", warned[0]);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap_or_default(),
        "approved-hook\n"
    );
}
