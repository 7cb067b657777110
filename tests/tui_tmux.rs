//! The real binary in a pseudo-terminal (tmux) against the fake provider: a prompt goes in, the
//! model asks to write a file, `y` approves it, the file lands on disk and the screen shows it.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::fake_provider::{FakeProvider, openai};
use support::{Sandbox, TEST_KEY};

struct Tmux {
    socket: String,
    target: String,
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

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", &self.target])
    }

    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "`{needle}` never appeared; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
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
    let resume = format!(
        "{shell} {} --continue; echo SPLICE_EXIT=$?; sleep 60",
        quote(env!("CARGO_BIN_EXE_splice"))
    );
    shell.push_str(&format!(
        " {} --tier light {}; echo SPLICE_EXIT=$?; sleep 60",
        quote(env!("CARGO_BIN_EXE_splice")),
        quote("Create hello.txt")
    ));
    let mut tmux = Tmux {
        socket: format!("splice-test-{}", std::process::id()),
        target: "splice".into(),
    };
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "splice",
        "-x",
        "100",
        "-y",
        "30",
        &shell,
    ]);

    let prompt = tmux.wait_for("Permission needed");
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
    tmux.wait_for("y allow once");
    tmux.run(&["send-keys", "-t", "splice", "y"]);
    // The answer streams in before the run ends: wait for the end, then look at everything.
    let done = tmux.wait_for("✓ done");
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
    tmux.run(&["send-keys", "-t", "splice", "C-c"]);
    tmux.wait_for("Ctrl-C again to quit");
    tmux.run(&["send-keys", "-t", "splice", "C-c"]);
    let after = tmux.wait_for("SPLICE_EXIT=0");
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
    tmux.run(&[
        "new-session",
        "-d",
        "-s",
        "resumed",
        "-x",
        "100",
        "-y",
        "30",
        &resume,
    ]);
    tmux.target = "resumed".into();
    let reopened = tmux.wait_for("session resumed");
    assert!(reopened.contains("› Create hello.txt"), "{reopened}");
    assert!(reopened.contains("Wrote hello.txt for you."), "{reopened}");
    tmux.run(&["send-keys", "-t", "resumed", "/quit", "Enter"]);
    tmux.wait_for("SPLICE_EXIT=0");
}
