//! Attacks on the permission prompt, against the real binary in a pseudo-terminal (tmux) with
//! the fake provider scripting the tool calls: keys typed as a prompt appears, "allow always" on
//! a high-risk command, and a command that bidirectional overrides would show reordered.

use crate::support;

use support::Sandbox;
use support::fake_provider::{FakeProvider, Reply, openai};
use support::tmux::{Tmux, quote, splice_shell};

/// The tmux session the TUI runs in.
const MODAL: &str = "modal";

/// The TUI in ask mode on a 100x30 tmux window, asked `prompt`, the provider replying `replies`.
fn open(name: &str, sandbox: &Sandbox, provider: &FakeProvider, prompt: &str) -> Tmux {
    let args = format!("--tier light --permission-mode ask {}", quote(prompt));
    let shell = splice_shell(sandbox, &provider.url, sandbox.dir.path(), &args);
    let tmux = Tmux::new(&format!("modal-{name}"));
    tmux.start(MODAL, (100, 30), &shell);
    tmux
}

fn command_call(id: &str, command: &str) -> Reply {
    let args = serde_json::json!({ "command": command }).to_string();
    openai::tool_call(id, "run_command", &[&args])
}

fn sandbox() -> Sandbox {
    // HOME (the sandbox's temporary directory) lies outside what a confined command may write.
    Sandbox::new_in(&support::outside_dir())
}

#[test]
fn typing_through_a_prompt_as_it_appears_grants_nothing() {
    let provider = FakeProvider::start(vec![
        command_call("call_1", "touch pwned"),
        openai::answer(&["Done."]),
    ]);
    let sandbox = sandbox();
    let tmux = open("typing", &sandbox, &provider, "Set things up");
    tmux.wait_for(MODAL, "Permission needed");
    // The person was writing their next request when the prompt popped up.
    tmux.type_text(MODAL, " and then");
    let screen = tmux.wait_until(MODAL, "the typing reached the composer", |s| {
        s.lines().any(|l| l.starts_with(" and then"))
    });
    assert!(screen.contains("Permission needed"), "{screen}");
    // Once the guard is over the prompt is still there, unanswered.
    let screen = tmux.wait_for(MODAL, "y allow once");
    assert!(screen.contains("$ touch pwned"), "{screen}");
    assert!(
        sandbox.read("pwned").is_none(),
        "a typed `a` ran the command"
    );
    tmux.keys(MODAL, &["n"]);
    let done = tmux.wait_for(MODAL, "✓ done");
    // The person's "no", said once in plain words.
    assert!(done.contains("⎿ you denied it"), "{done}");
    assert!(!done.contains("denied in TUI"), "{done}");
    assert!(
        done.lines().any(|l| l.starts_with(" and then")),
        "the typing was lost:\n{done}"
    );
    assert!(sandbox.read("pwned").is_none());
    // No rule was added behind the person's back.
    tmux.keys(MODAL, &["C-c"]);
    tmux.type_text(MODAL, "/permissions");
    tmux.keys(MODAL, &["Enter"]);
    tmux.wait_for(MODAL, "no session allow rules");
}

#[test]
fn a_high_risk_command_cannot_be_allowed_always() {
    let provider = FakeProvider::start(vec![
        command_call("call_1", "rm -rf build"),
        command_call("call_2", "rm -rf build"),
        openai::answer(&["Done."]),
        // The `a` typed at the prompt was queued as a request of its own.
        openai::answer(&["Queued request answered."]),
    ]);
    let sandbox = sandbox();
    sandbox.write("build/keep.txt", "kept\n");
    let tmux = open("high", &sandbox, &provider, "Clean the build");
    let prompt = tmux.wait_for(MODAL, "y allow once");
    assert!(prompt.contains("risk high"), "{prompt}");
    assert!(prompt.contains("no allow-always"), "{prompt}");
    assert!(!prompt.contains("allow always"), "{prompt}");
    // `a` and Enter are no answer here: they reach the composer (which queues the text while
    // the run goes on), and the prompt stays.
    tmux.type_text(MODAL, "a");
    tmux.keys(MODAL, &["Enter"]);
    tmux.wait_for(MODAL, "queued: a");
    let screen = tmux.wait_for(MODAL, "y allow once");
    assert!(screen.contains("Permission needed"), "{screen}");
    assert_eq!(sandbox.read("build/keep.txt").as_deref(), Some("kept\n"));
    tmux.keys(MODAL, &["n"]);
    // The second, identical call asks again: nothing was allowed for the session.
    let again = tmux.wait_until(MODAL, "a second prompt", |s| {
        s.contains("you denied it") && s.contains("y allow once")
    });
    assert!(again.contains("$ rm -rf build"), "{again}");
    tmux.keys(MODAL, &["n"]);
    tmux.wait_for(MODAL, "Queued request answered.");
    assert_eq!(sandbox.read("build/keep.txt").as_deref(), Some("kept\n"));
}

#[test]
fn a_command_with_bidirectional_overrides_is_not_shown_reordered() {
    // Shown raw, the override would draw the tail reversed: `echo "exe.txt"` hiding `rm`.
    let hostile = "echo ok #\u{202e} \u{2066}fr- mr\u{2069}; rm -f notes.txt";
    let provider = FakeProvider::start(vec![
        command_call("call_1", hostile),
        openai::answer(&["Done."]),
    ]);
    let sandbox = sandbox();
    sandbox.write("notes.txt", "mine\n");
    let tmux = open("bidi", &sandbox, &provider, "Say ok");
    let prompt = tmux.wait_for(MODAL, "y allow once");
    for c in ['\u{202e}', '\u{2066}', '\u{2069}'] {
        assert!(
            !prompt.contains(c),
            "U+{:04X} reached the screen",
            u32::from(c)
        );
    }
    assert!(
        prompt.contains("$ echo ok # fr- mr; rm -f notes.txt"),
        "{prompt}"
    );
    assert!(
        prompt.contains("control or bidirectional characters are not shown"),
        "{prompt}"
    );
    tmux.keys(MODAL, &["n"]);
    tmux.wait_for(MODAL, "✓ done");
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("mine\n"));
}
