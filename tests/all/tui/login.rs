//! `/login` in the real TUI (tmux) against the real registry server: the modal shows the code,
//! a person approves it from the server's shell, the modal says who is signed in and the
//! credential is saved 0600, as `splice login` saves it. Esc cancels: the modal goes, nothing
//! is saved, and the server is polled no more (an approval after the cancel is never picked up).

use crate::support;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::process::{Running, Start};
use support::tmux::{Tmux, quote, splice_shell};
use support::{Outcome, Sandbox, run_raw};

/// A registry server on a free loopback port (polls every 1 s), `alice` owning `acme`;
/// stopped when dropped.
struct Server {
    /// Ended and reaped when the server is dropped.
    _process: Running,
    url: String,
    data: PathBuf,
}

impl Server {
    fn start(sandbox: &Sandbox) -> Server {
        crate::support::need_registry_server();
        let data = sandbox.dir.path().join("registry");
        let mut add = Command::new(env!("CARGO_BIN_EXE_splice"));
        add.args(["registry", "user", "add", "alice", "--namespace", "acme"])
            .arg("--data")
            .arg(&data)
            .arg("--password-stdin");
        let added = run_raw(add, Some("correct horse battery staple"));
        assert_eq!(added.code, 0, "user add: {}", added.stderr);
        let mut child = Command::new(env!("CARGO_BIN_EXE_splice"))
            .args(["registry", "serve", "--addr", "127.0.0.1:0"])
            .args(["--device-interval", "1", "--device-expiry", "300"])
            .arg("--data")
            .arg(&data)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .start()
            .expect("registry serve");
        let stdout = child.stdout.take().expect("no stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("read a line from stdout");
        let url = first.trim().to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "first line: {first}");
        Server {
            _process: child,
            url,
            data,
        }
    }

    fn admin(&self, args: &[&str]) -> Outcome {
        let mut command = Command::new(env!("CARGO_BIN_EXE_splice"));
        command
            .arg("registry")
            .args(args)
            .arg("--data")
            .arg(&self.data);
        run_raw(command, None)
    }

    /// The pending login's state and last poll time, read from the server's own index.
    fn device_row(&self, user_code: &str) -> Option<(String, i64)> {
        let url = splice_registry::db::default_url(&self.data);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("build the tokio runtime");
        runtime.block_on(async {
            let pool = sqlx::SqlitePool::connect(&url)
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            let row: Option<(String, i64)> =
                sqlx::query_as("SELECT state, last_poll_ms FROM device_codes WHERE user_code = ?")
                    .bind(user_code)
                    .fetch_optional(&pool)
                    .await
                    .expect("query device_codes");
            pool.close().await;
            row
        })
    }
}

/// The TUI in tmux with `SPLICE_REGISTRY` set to the server (no model is asked anything).
fn tui(sandbox: &Sandbox, server: &Server, name: &str) -> Tmux {
    let shell = splice_shell(sandbox, "http://127.0.0.1:9", sandbox.dir.path(), "").replacen(
        "env -i",
        &format!("env -i SPLICE_REGISTRY={}", quote(&server.url)),
        1,
    );
    let tmux = Tmux::new(name);
    tmux.start("splice", (100, 30), &shell);
    tmux.wait_for("splice", "Type a request");
    tmux
}

/// The user code read off the modal: the letter-spaced line under "Your code:".
fn user_code_on(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("Your code:"))
        .unwrap_or_else(|| panic!("no code on screen:\n{screen}"));
    let row = lines[at + 1].trim_start_matches(|c: char| c == '│' || c.is_whitespace());
    // The code ends where the QR code's blocks begin.
    let code: String = row
        .split("   ")
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    assert_eq!(code.len(), 9, "code `{code}` from line: {}", lines[at + 1]);
    code
}

fn credentials(sandbox: &Sandbox) -> PathBuf {
    sandbox.dir.path().join("credentials.json")
}

#[test]
fn login_in_the_tui_shows_the_code_and_saves_the_approved_login() {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox);
    let tmux = tui(&sandbox, &server, "login-ok");
    tmux.type_text("splice", "/login");
    tmux.keys("splice", &["Enter"]);
    let screen = tmux.wait_for("splice", "Waiting for approval");
    assert!(
        screen.contains(&format!("Sign in to registry {}", server.url)),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("{}/device", server.url)),
        "{screen}"
    );
    assert!(screen.contains("Expires in 0"), "{screen}");
    // 100x30 has room for the QR code beside the text.
    assert!(screen.contains("▀▀▀▀▀"), "no QR code:\n{screen}");
    let code = user_code_on(&screen);
    assert!(!credentials(&sandbox).exists());

    let approved = server.admin(&["approve", &code, "--user", "alice"]);
    assert_eq!(approved.code, 0, "approve {code}: {}", approved.stderr);
    let done = tmux.wait_for("splice", "Signed in as alice");
    assert!(!done.contains("Waiting for approval"), "{done}");

    let path = credentials(&sandbox);
    let mode = std::fs::metadata(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read path"))
            .expect("parse path as JSON");
    assert_eq!(saved[&server.url]["user"], "alice", "{saved}");
    let token = saved[&server.url]["token"].as_str().unwrap_or_default();
    assert!(!token.is_empty(), "{saved}");
    assert!(!done.contains(token), "the token is never shown");

    // Enter closes the modal; the transcript keeps a line about it and the composer is back.
    tmux.keys("splice", &["Enter"]);
    let closed = tmux.wait_until("splice", "the modal to close", |s| {
        !s.contains("Signed in as alice")
    });
    assert!(
        closed.contains(&format!("signed in to registry {} as alice", server.url)),
        "{closed}"
    );
    tmux.keys("splice", &["C-c"]);
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=0");
}

#[test]
fn esc_cancels_the_login_and_nothing_is_saved_or_polled() {
    let sandbox = Sandbox::new();
    let server = Server::start(&sandbox);
    let tmux = tui(&sandbox, &server, "login-esc");
    tmux.type_text("splice", "/login");
    tmux.keys("splice", &["Enter"]);
    let screen = tmux.wait_for("splice", "Waiting for approval");
    let code = user_code_on(&screen);
    // Keys belong to the modal: typing does not reach the composer behind it.
    tmux.type_text("splice", "typed");
    tmux.keys("splice", &["Escape"]);
    let closed = tmux.wait_until("splice", "the modal to close", |s| {
        !s.contains("Waiting for approval")
    });
    assert!(closed.contains("cancelled"), "{closed}");
    assert!(!closed.contains("typed"), "{closed}");

    // Approved after the cancel: a login still polling would collect the token within a
    // second (the interval) and save it. Wait several intervals; nothing may have polled.
    let approved = server.admin(&["approve", &code, "--user", "alice"]);
    assert_eq!(approved.code, 0, "approve {code}: {}", approved.stderr);
    let (_, polled_at_approval) = server
        .device_row(&code)
        .unwrap_or_else(|| panic!("no pending login {code}"));
    std::thread::sleep(Duration::from_secs(4));
    let row = server.device_row(&code);
    assert_eq!(
        row,
        Some(("approved".to_string(), polled_at_approval)),
        "the cancelled login polled again or took its token"
    );
    assert!(
        !credentials(&sandbox).exists(),
        "a cancelled login saved a credential"
    );
    let screen = tmux.screen("splice");
    assert!(!screen.contains("Signed in"), "{screen}");
}

/// Without a registry configured `/login` says how to set one, and opens nothing.
#[test]
fn login_without_a_registry_says_how_to_set_one() {
    let sandbox = Sandbox::new();
    let shell = splice_shell(&sandbox, "http://127.0.0.1:9", sandbox.dir.path(), "");
    let tmux = Tmux::new("login-none");
    tmux.start("splice", (100, 30), &shell);
    tmux.wait_for("splice", "Type a request");
    tmux.type_text("splice", "/login");
    tmux.keys("splice", &["Enter"]);
    let screen = tmux.wait_for("splice", "no registry to sign in to");
    assert!(screen.contains("SPLICE_REGISTRY"), "{screen}");
    assert!(screen.contains("/login URL"), "{screen}");
    assert!(!screen.contains("Sign in to registry"), "{screen}");
}
