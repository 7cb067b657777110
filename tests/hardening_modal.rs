//! Attacks on the permission prompt, against the real binary in a pseudo-terminal (tmux) with
//! the fake provider scripting the tool calls: keys typed as a prompt appears, "allow always" on
//! a high-risk command, and a command that bidirectional overrides would show reordered.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::fake_provider::{FakeProvider, Reply, openai};
use support::{Sandbox, TEST_KEY};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn command(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket, "-f", "/dev/null"]);
        command
    }

    fn run(&self, args: &[&str]) -> String {
        let output = self
            .command()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("tmux is required for this test ({e})"));
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Keys as typed text, all in one write: they arrive together, as fast typing does.
    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "modal", "-l", text]);
    }

    fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "modal", key]);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "modal"])
    }

    fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{what} never happened; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn wait_for(&self, needle: &str) -> String {
        self.wait_until(&format!("`{needle}`"), |s| s.contains(needle))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Only the server on this test's own socket.
        let _ = self.command().arg("kill-server").output();
    }
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The TUI in ask mode on a 100x30 tmux window, asked `prompt`, the provider replying `replies`.
fn open(name: &str, sandbox: &Sandbox, provider: &FakeProvider, prompt: &str) -> Tmux {
    let env = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", sandbox.dir.path().display().to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("SPLICE_DATA_DIR", sandbox.data.display().to_string()),
        (
            "SPLICE_CONFIG",
            sandbox.dir.path().join("config.json").display().to_string(),
        ),
        (
            "SPLICE_PRICING_FILE",
            sandbox
                .dir
                .path()
                .join("pricing.json")
                .display()
                .to_string(),
        ),
        ("OPENAI_BASE_URL", provider.url.clone()),
        ("OPENAI_API_KEY", TEST_KEY.to_string()),
        ("SPLICE_PROVIDER", "openai".to_string()),
    ];
    let mut shell = format!(
        "cd {} && env -i",
        quote(&sandbox.root.display().to_string())
    );
    for (name, value) in &env {
        shell.push_str(&format!(" {name}={}", quote(value)));
    }
    shell.push_str(&format!(
        " {} --tier light --permission-mode ask {}; echo SPLICE_EXIT=$?; sleep 60",
        quote(env!("CARGO_BIN_EXE_splice")),
        quote(prompt)
    ));
    let tmux = Tmux {
        socket: format!("splice-modal-{name}-{}", std::process::id()),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "modal",
        "-x",
        "100",
        "-y",
        "30",
        &shell,
    ]);
    tmux
}

fn command_call(id: &str, command: &str) -> Reply {
    let args = serde_json::json!({ "command": command }).to_string();
    openai::tool_call(id, "run_command", &[&args])
}

fn sandbox() -> Sandbox {
    // HOME (the sandbox's temporary directory) lies outside what a confined command may write.
    Sandbox::new_in(Path::new(env!("CARGO_TARGET_TMPDIR")))
}

#[test]
fn typing_through_a_prompt_as_it_appears_grants_nothing() {
    let provider = FakeProvider::start(vec![
        command_call("call_1", "touch pwned"),
        openai::answer(&["Done."]),
    ]);
    let sandbox = sandbox();
    let tmux = open("typing", &sandbox, &provider, "Set things up");
    tmux.wait_for("Permission needed");
    // The person was writing their next request when the prompt popped up.
    tmux.type_text(" and then");
    let screen = tmux.wait_until("the typing reached the composer", |s| {
        s.lines().any(|l| l.starts_with(" and then"))
    });
    assert!(screen.contains("Permission needed"), "{screen}");
    // Once the guard is over the prompt is still there, unanswered.
    let screen = tmux.wait_for("y allow once");
    assert!(screen.contains("$ touch pwned"), "{screen}");
    assert!(
        sandbox.read("pwned").is_none(),
        "a typed `a` ran the command"
    );
    tmux.key("n");
    let done = tmux.wait_for("✓ done");
    assert!(done.contains("denied in TUI"), "{done}");
    assert!(
        done.lines().any(|l| l.starts_with(" and then")),
        "the typing was lost:\n{done}"
    );
    assert!(sandbox.read("pwned").is_none());
    // No rule was added behind the person's back.
    tmux.key("C-c");
    tmux.type_text("/permissions");
    tmux.key("Enter");
    tmux.wait_for("no session allow rules");
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
    let prompt = tmux.wait_for("y allow once");
    assert!(prompt.contains("risk high"), "{prompt}");
    assert!(prompt.contains("no allow-always"), "{prompt}");
    assert!(!prompt.contains("allow always"), "{prompt}");
    // `a` and Enter are no answer here: they reach the composer (which queues the text while
    // the run goes on), and the prompt stays.
    tmux.type_text("a");
    tmux.key("Enter");
    tmux.wait_for("queued: a");
    let screen = tmux.wait_for("y allow once");
    assert!(screen.contains("Permission needed"), "{screen}");
    assert_eq!(sandbox.read("build/keep.txt").as_deref(), Some("kept\n"));
    tmux.key("n");
    // The second, identical call asks again: nothing was allowed for the session.
    let again = tmux.wait_until("a second prompt", |s| {
        s.contains("denied in TUI") && s.contains("y allow once")
    });
    assert!(again.contains("$ rm -rf build"), "{again}");
    tmux.key("n");
    tmux.wait_for("Queued request answered.");
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
    let prompt = tmux.wait_for("y allow once");
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
    tmux.key("n");
    tmux.wait_for("✓ done");
    assert_eq!(sandbox.read("notes.txt").as_deref(), Some("mine\n"));
}
