//! A confined command cannot reach the user's terminal: neither type into it nor write to it.

use crate::support;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use support::fake_provider::{FakeProvider, openai};
use support::process::Start;
use support::{Sandbox, outside_dir};

/// Run `line` (a shell line) on a fresh pseudo-terminal, as a user's shell would run Splice:
/// `script` makes the line's shell a session leader whose controlling terminal is the pty.
/// What the terminal showed goes to `screen`.
fn on_a_terminal(
    sandbox: &Sandbox,
    base_url: &str,
    line: &str,
    extra: &[(&str, &Path)],
    screen: &Path,
) {
    let splice = sandbox.command(base_url);
    let mut command = Command::new("script");
    command.env_clear();
    for (name, value) in splice.get_envs() {
        if let Some(value) = value {
            command.env(name, value);
        }
    }
    command
        .env("SPLICE", env!("CARGO_BIN_EXE_splice"))
        // `script` runs the line with $SHELL; the line uses bash's `read -t`.
        .env("SHELL", "/bin/bash")
        .envs(extra.iter().map(|(k, v)| (*k, *v)))
        .args(["-q", "-e", "-c", line])
        .arg(screen)
        .current_dir(&sandbox.root)
        // Held open until the session ends: at end of input `script` hangs up the terminal.
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = command.start().expect("start script");
    let keyboard = child.stdin.take();
    let status = child.wait().expect("script");
    drop(keyboard);
    assert!(status.success(), "the terminal session failed: {status}");
}

/// TIOCSTI pushes bytes into a terminal's input queue as if the user typed them. A confined
/// command that can open Splice's controlling terminal (`/dev/tty`) could queue a command line
/// for the user's shell, which runs it unconfined once Splice exits.
#[test]
fn a_confined_command_cannot_type_into_the_users_terminal() {
    let home = Sandbox::new_in(&outside_dir());
    let marker = home.dir.path().join("typed");
    let inject = "python3 -c \"import fcntl, termios\nwith open('/dev/tty', 'rb') as t:\n    for c in b'INJECTED\\n':\n        fcntl.ioctl(t, termios.TIOCSTI, bytes([c]))\"";
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": inject }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    // After Splice exits, the "user's shell" reads one line from the terminal.
    let line = "\"$SPLICE\" exec --output-format stream-json --permission-mode auto 'do it' \
                > \"$OUT\" 2>&1; IFS= read -r -t 2 typed; printf '%s' \"$typed\" > \"$MARKER\"";
    let out = home.dir.path().join("out.jsonl");
    on_a_terminal(
        &home,
        &provider.url,
        line,
        &[("OUT", out.as_path()), ("MARKER", marker.as_path())],
        Path::new("/dev/null"),
    );
    let events = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(events.contains("\"run_end\""), "{events}");
    let typed = std::fs::read_to_string(&marker)
        .unwrap_or_else(|e| panic!("the terminal's reader never ran ({e}); events: {events}"));
    assert_eq!(
        typed, "",
        "the command typed into the terminal; events: {events}"
    );
    // It ran and found no terminal to open (ENXIO), rather than failing for another reason.
    assert!(events.contains("No such device or address"), "{events}");
}

/// `/dev` was writable as a whole, terminals included: a confined command found Splice's
/// terminal from the process table (`ps -o tty=` of its ancestors; no /proc access needed)
/// and wrote to it directly, escape sequences and all (a forged permission prompt over the
/// TUI, a terminal title, OSC 52 into the clipboard), past every output filter.
#[test]
fn a_confined_command_cannot_write_to_the_users_terminal() {
    let home = Sandbox::new_in(&outside_dir());
    // What builds rely on still works: the sinks, the command's own pipes, shared memory.
    // (Paths relative to `/dev`: a redirection to an absolute path is high risk, asked about.)
    let scrawl = "cd /dev && echo x > null && echo via-stderr > stderr \
                  && echo x > shm/splice-$$ && rm shm/splice-$$ && echo shm-ok; \
                  p=$PPID; while [ \"$p\" -gt 1 ]; do \
                  t=$(ps -o tty= -p \"$p\" | tr -d ' '); \
                  case $t in pts/*|tty*) printf 'SCRAWL''ED' > \"$t\"; break;; esac; \
                  p=$(ps -o ppid= -p \"$p\" | tr -d ' '); done";
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": scrawl }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let out = home.dir.path().join("out.jsonl");
    let screen = home.dir.path().join("screen");
    let line = "\"$SPLICE\" exec --output-format stream-json --permission-mode auto 'do it' \
                > \"$OUT\" 2>&1";
    on_a_terminal(
        &home,
        &provider.url,
        line,
        &[("OUT", out.as_path())],
        &screen,
    );
    let events = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(events.contains("\"run_end\""), "{events}");
    let shown = std::fs::read_to_string(&screen).unwrap_or_default();
    assert!(
        !shown.contains("SCRAWLED"),
        "the command wrote to the terminal: {shown}\nevents: {events}"
    );
    assert!(events.contains("Permission denied"), "{events}");
    assert!(
        events.contains("via-stderr") && events.contains("shm-ok"),
        "{events}"
    );
}
