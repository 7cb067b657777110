//! `/login scribiz` in the real TUI (tmux) with the fake Scribiz CLI: the same device-code
//! modal as the registry's shows the CLI's code, then the account it signed in; Esc cancels the
//! CLI's login (it is sent `{"cmd":"cancel"}` and ends).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::Sandbox;
use support::tmux::{Tmux, quote, splice_shell};

fn fake_scribiz() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_scribiz/scribiz")
}

/// The TUI with `SCRIBIZ_BIN` the fake, playing `scenario`, recording into `record`.
fn tui(sandbox: &Sandbox, name: &str, scenario: &str, record: &Path) -> Tmux {
    let extra = format!(
        "env -i SCRIBIZ_BIN={} SCRIBIZ_FAKE_SCENARIO={scenario} SCRIBIZ_FAKE_RECORD={}",
        quote(&fake_scribiz().display().to_string()),
        quote(&record.display().to_string()),
    );
    let shell = splice_shell(sandbox, "http://127.0.0.1:9", sandbox.dir.path(), "")
        .replacen("env -i", &extra, 1);
    let tmux = Tmux::new(name);
    tmux.start("splice", (100, 30), &shell);
    tmux.wait_for("splice", "Type a request");
    tmux
}

fn records(record: &Path) -> Vec<Value> {
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn login_scribiz_shows_the_clis_code_and_the_signed_in_account() {
    let sandbox = Sandbox::new();
    let record = sandbox.dir.path().join("scribiz-record.jsonl");
    let tmux = tui(&sandbox, "scribiz-login-ok", "login-ok", &record);
    tmux.type_text("splice", "/login scribiz");
    tmux.keys("splice", &["Enter"]);
    let done = tmux.wait_for("splice", "Signed in as you@example.com");
    assert!(done.contains("Sign in to Scribiz"), "{done}");
    // The CLI ran its own login, as `scribiz login --json`.
    let argv = records(&record)
        .into_iter()
        .find_map(|r| r.get("argv").cloned())
        .expect("the fake recorded no argv");
    assert!(argv.to_string().contains("login"), "{argv}");
    assert!(argv.to_string().contains("--json"), "{argv}");
    tmux.keys("splice", &["Enter"]);
    tmux.keys("splice", &["C-c"]);
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=0");
}

#[test]
fn esc_cancels_the_scribiz_login_and_the_cli_ends() {
    let sandbox = Sandbox::new();
    let record = sandbox.dir.path().join("scribiz-record.jsonl");
    let tmux = tui(&sandbox, "scribiz-login-esc", "login-wait", &record);
    tmux.type_text("splice", "/login scribiz");
    tmux.keys("splice", &["Enter"]);
    let screen = tmux.wait_for("splice", "Waiting for approval");
    assert!(
        screen.contains("ABCD-1234") || screen.contains("A B C D"),
        "{screen}"
    );
    tmux.keys("splice", &["Escape"]);
    tmux.wait_until("splice", "the modal to close", |s| {
        !s.contains("Waiting for approval")
    });
    // The CLI was told to cancel on its standard input.
    let until = Instant::now() + Duration::from_secs(20);
    let cancelled = || {
        records(&record)
            .iter()
            .any(|r| r["stdin"] == serde_json::json!({"cmd": "cancel"}))
    };
    while !cancelled() {
        assert!(
            Instant::now() < until,
            "no cancel reached the CLI: {:?}",
            records(&record)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.keys("splice", &["C-c"]);
    tmux.keys("splice", &["C-c"]);
    tmux.wait_for("splice", "SPLICE_EXIT=0");
}
