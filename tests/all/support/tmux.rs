//! The real binary in a pseudo-terminal: a tmux server of the test's own, on its own socket, so
//! tests run in parallel and never touch a tmux the person running them has open.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::Sandbox;

/// How long a screen may take to show what a test waits for (the machine may be busy).
const PATIENCE: Duration = Duration::from_secs(60);

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server for the test `name`. Panics saying why when tmux is not installed, rather than
    /// failing later on an empty screen.
    pub fn new(name: &str) -> Tmux {
        if let Err(error) = Command::new("tmux").arg("-V").output() {
            panic!(
                "this test drives the TUI in a real terminal through tmux, which is not installed \
                 ({error}); `scripts/test` installs it"
            );
        }
        Tmux {
            socket: format!("splice-{name}-{}", std::process::id()),
        }
    }

    pub fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("tmux {args:?}: {e}"));
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// A detached session `session`, `width` x `height` cells, running `shell`.
    pub fn start(&self, session: &str, (width, height): (u16, u16), shell: &str) {
        let (width, height) = (width.to_string(), height.to_string());
        self.run(&[
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            &width,
            "-y",
            &height,
            shell,
        ]);
    }

    /// Keys by tmux name (`Enter`, `C-c`, `y`), each its own key press.
    pub fn keys(&self, session: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", session];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Text typed in one write: the characters arrive together, as fast typing does.
    pub fn type_text(&self, session: &str, text: &str) {
        self.run(&["send-keys", "-t", session, "-l", text]);
    }

    /// The visible screen, lines tmux wrapped joined again.
    pub fn screen(&self, session: &str) -> String {
        self.run(&["capture-pane", "-p", "-J", "-t", session])
    }

    /// The screen once `done` holds for it; the run is asynchronous, so no timing is asserted.
    pub fn wait_until(&self, session: &str, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen(session);
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

    /// The screen once it shows `needle`.
    pub fn wait_for(&self, session: &str, needle: &str) -> String {
        self.wait_until(session, &format!("`{needle}`"), |s| s.contains(needle))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Only the server on this test's own socket.
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "-f", "/dev/null", "kill-server"])
            .output();
    }
}

/// `text` as one shell word.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `cd ROOT && env -i VARS splice ARGS; echo SPLICE_EXIT=$?; sleep 60`: the TUI in the sandbox
/// against the provider at `provider_url`, with none of the test's environment but PATH. `args`
/// are shell words already (see [`quote`]). The shell stays so the exit code can be read.
pub fn splice_shell(sandbox: &Sandbox, provider_url: &str, home: &Path, args: &str) -> String {
    let dir = sandbox.dir.path();
    let env = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", home.display().to_string()),
        ("TERM", "xterm-256color".to_string()),
        ("SPLICE_DATA_DIR", sandbox.data.display().to_string()),
        (
            "SPLICE_CONFIG",
            dir.join("config.json").display().to_string(),
        ),
        (
            "SPLICE_PRICING_FILE",
            dir.join("pricing.json").display().to_string(),
        ),
        ("OPENAI_BASE_URL", provider_url.to_string()),
        ("OPENAI_API_KEY", super::TEST_KEY.to_string()),
        ("SPLICE_PROVIDER", "openai".to_string()),
    ];
    let mut shell = format!(
        "cd {} && env -i",
        quote(&sandbox.root.display().to_string())
    );
    for (name, value) in &env {
        shell.push_str(&format!(" {name}={}", quote(value)));
    }
    format!(
        "{shell} {} {args}; echo SPLICE_EXIT=$?; sleep 60",
        quote(env!("CARGO_BIN_EXE_splice"))
    )
}
