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
    // It ran and was refused the terminal (no device opens for it; without a controlling
    // terminal `/dev/tty` would not open anyway), rather than failing for another reason.
    assert!(events.contains("Permission denied"), "{events}");
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

/// Issue 28: Landlock granted reading everywhere, so a confined command opened Splice's
/// terminal (`/dev/pts/N`, found from the process table) and read what the person typed, and
/// any other terminal of theirs (a `sudo` password). No terminal device opens, nor Splice's
/// through `/proc/<pid>/fd`; the command's own streams still do.
#[test]
fn a_confined_command_cannot_open_any_terminal_to_read_keystrokes() {
    let home = Sandbox::new_in(&outside_dir());
    home.write("probe.py", TERMINAL_PROBE);
    let provider = FakeProvider::start(vec![
        openai::tool_call(
            "call_1",
            "run_command",
            &[&json!({ "command": "python3 probe.py" }).to_string()],
        ),
        openai::answer(&["done"]),
    ]);
    let line = "\"$SPLICE\" exec --output-format stream-json --permission-mode auto 'do it' \
                > \"$OUT\" 2>&1";
    let out = home.dir.path().join("out.jsonl");
    on_a_terminal(
        &home,
        &provider.url,
        line,
        &[("OUT", out.as_path())],
        Path::new("/dev/null"),
    );
    let events = std::fs::read_to_string(&out).unwrap_or_default();
    assert!(events.contains("probe-ended"), "{events}");
    assert!(!events.contains("OPENED"), "{events}");
    // Splice's own terminal was found and refused, as were the others.
    let splice_tty = events
        .split("SPLICE_TTY ")
        .nth(1)
        // The output is a JSON string here: lines end with `\n`.
        .and_then(|rest| rest.split(['\\', ' ']).next())
        .unwrap_or_else(|| panic!("the probe found no terminal of Splice's: {events}"));
    assert!(splice_tty.starts_with("/dev/pts/"), "{events}");
    for refused in [splice_tty, "/dev/tty", "/dev/ptmx"] {
        let said = format!("REFUSED {refused} 13");
        assert!(events.contains(&said), "{said}: {events}");
    }
    assert!(events.contains("REFUSED /proc/"), "{events}");
    assert!(events.contains("own-stream-ok"), "{events}");
}

/// Every terminal device there is, and fd 0 to 2 of each ancestor (Splice's is its terminal),
/// opened for reading (non-blocking, not to become a controlling terminal): `OPENED path` or
/// `REFUSED path errno` (or `NOT-A-TERMINAL` for an ancestor's stream that is none). Then the command's own stdout, reopened.
const TERMINAL_PROBE: &str = r#"import glob, os
def attempt(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        print("REFUSED", path, e.errno)
        return
    # The command's own shell shares its sandbox: its streams are pipes and /dev/null.
    if path.startswith("/proc/") and not os.isatty(fd):
        print("NOT-A-TERMINAL", path)
    else:
        try:
            print("OPENED", path, os.read(fd, 100))
        except OSError as e:
            print("OPENED", path, "read:", e.errno)
    os.close(fd)
paths = sorted(set(glob.glob("/dev/pts/*") + glob.glob("/dev/tty*") + glob.glob("/dev/vcs*")
        + ["/dev/tty", "/dev/console", "/dev/ptmx"]))
pid = os.getpid()
while pid > 1:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    pid, tty = int(fields[1]), int(fields[4])
    major, minor = (tty >> 8) & 0xFFF, (tty & 0xFF) | ((tty >> 12) & 0xFFF00)
    if tty and 136 <= major < 144:
        print("SPLICE_TTY", f"/dev/pts/{(major - 136) * 256 + minor}")
    paths += [f"/proc/{pid}/fd/{n}" for n in range(3)]
for path in paths:
    if os.path.exists(path) or path.startswith("/proc/"):
        attempt(path)
with open("/proc/self/fd/1", "w") as out:
    out.write("own-stream-ok\n")
print("probe-ended")
"#;
