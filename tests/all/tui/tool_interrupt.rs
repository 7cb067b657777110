//! Esc in the TUI while a tool runs: the interrupt reaches the tool (its process is ended) and
//! the tool's cell gets its `interrupted` result, the run ending as interrupted.

use crate::support;

use std::time::{Duration, Instant};

use support::Sandbox;
use support::fake_provider::{FakeProvider, openai};
use support::tmux::{Tmux, quote, splice_shell};

/// Whether `pid` is a live process (a zombie waiting to be reaped counts as ended).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            // The state follows the parenthesised name, which may itself hold spaces.
            let after = stat.rsplit_once(") ")?.1.to_string();
            after.chars().next()
        })
        .is_some_and(|state| state != 'Z' && state != 'X')
}

#[test]
fn esc_during_a_running_command_ends_the_command_and_its_cell_says_interrupted() {
    let provider = FakeProvider::start(vec![openai::tool_call(
        "call_1",
        "run_command",
        &[r#"{"command":"echo $$ > pid.txt && exec sleep 60"}"#],
    )]);
    let sandbox = Sandbox::new();
    let shell = splice_shell(
        &sandbox,
        &provider.url,
        sandbox.dir.path(),
        &format!(
            "--tier light --permission-mode auto {}",
            quote("wait a minute")
        ),
    );
    let tmux = Tmux::new("toolint");
    tmux.start("splice", (100, 30), &shell);
    tmux.wait_for("splice", "running…");
    let pid_file = sandbox.root.join("pid.txt");
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if !pid.trim().is_empty() && alive(pid.trim()) {
            break pid.trim().to_string();
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(50));
    };

    tmux.keys("splice", &["Escape"]);
    let screen = tmux.wait_for("splice", "interrupted before the tool finished");
    assert!(screen.contains("✗ run_command"), "{screen}");
    assert!(!screen.contains("running…"), "{screen}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(&pid) {
        assert!(
            Instant::now() < deadline,
            "the command (pid {pid}) outlived the interrupt"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.keys("splice", &["/quit", "Enter"]);
    tmux.wait_for("splice", "SPLICE_EXIT=");
}
