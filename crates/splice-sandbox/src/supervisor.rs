//! The supervisor every command runs under, so that no process a command starts outlives it.
//!
//! `splice __sandbox-exec --parent PID [--confine --write DIR… --hide FILE… --read PATH… --own-dir DIR… --own-file FILE…] -- sh -c COMMAND` makes itself a
//! child subreaper (orphaned descendants, even ones that left the process group with `setsid`
//! or a double fork, are reparented to it rather than to init), asks for SIGHUP when Splice
//! dies, leaves the terminal's session, and starts the shell as its child: when asked to
//! confine it, through a second `splice __sandbox-exec --inner`, which confines itself with
//! Landlock and then becomes the shell, so the supervisor stays outside the command's domain. When the shell exits, or a signal arrives (Splice's timeout or
//! interrupt, or Splice's death), it kills every descendant that is left, reaps them, and
//! exits with the shell's status.
//!
//! The `--inner` stage also refuses Unix sockets to the command (`seccomp.rs`; `--allow-unix-sockets`,
//! the config file's `sandbox.allowAllUnixSockets`, lifts that part only), and starts it with
//! its standard streams only (`descriptors.rs`): nothing Splice inherited reaches it.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::io::Errno;
use rustix::process::{
    Pid, Signal, WaitOptions, getpid, getppid, kill_process, kill_process_group,
    set_child_subreaper, set_parent_process_death_signal, setsid, wait,
};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

use super::sandbox;

/// Exit code when the command could not be started (as a shell uses for "cannot run").
pub const CANNOT_RUN: i32 = 126;

/// The flags that name Splice's own directories and files.
pub const OWN_DIR_ARG: &str = "--own-dir";
pub const OWN_FILE_ARG: &str = "--own-file";

/// What the launcher was asked to do.
#[derive(Debug, Default, PartialEq)]
struct Request {
    parent: Option<i32>,
    /// Give up every capability before starting the program.
    no_caps: bool,
    /// SIGTERM goes on to the program's process group instead of ending everything.
    forward_term: bool,
    confine: bool,
    /// The confined command's first process rather than the supervisor (see [`inner`]).
    inner: bool,
    writable: Vec<PathBuf>,
    /// Files the confined command may not read.
    hidden: Vec<PathBuf>,
    /// Paths the person lets it read anyway (`sandbox.allowRead`, `reads.rs`).
    readable: Vec<PathBuf>,
    /// Splice's own places, which the confined command may not write (`places.rs`).
    own: crate::places::OwnPlaces,
    /// The person let confined commands use Unix sockets (`sandbox.allowAllUnixSockets`).
    allow_unix_sockets: bool,
    /// Splice's network proxy, the confined command's only way out (`netns.rs`).
    proxy: Option<PathBuf>,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Request {
    let mut request = Request::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--no-caps" {
            request.no_caps = true;
        } else if arg == "--forward-term" {
            request.forward_term = true;
        } else if arg == "--write" {
            request.writable.extend(rest.next().map(PathBuf::from));
        } else if arg == "--hide" {
            request.hidden.extend(rest.next().map(PathBuf::from));
        } else if arg == super::reads::READ_ARG {
            request.readable.extend(rest.next().map(PathBuf::from));
        } else if arg == OWN_DIR_ARG {
            request.own.dirs.extend(rest.next().map(PathBuf::from));
        } else if arg == OWN_FILE_ARG {
            request.own.files.extend(rest.next().map(PathBuf::from));
        } else if arg == "--confine" {
            request.confine = true;
        } else if arg == "--inner" {
            request.inner = true;
        } else if arg == sandbox::ALLOW_UNIX_SOCKETS_ARG {
            request.allow_unix_sockets = true;
        } else if arg == super::netns::PROXY_ARG {
            request.proxy = rest.next().map(PathBuf::from);
        } else if arg == "--parent" {
            request.parent = rest.next().and_then(|p| p.to_str()?.parse().ok());
        } else if arg == "--" {
            request.program = rest.by_ref().cloned().collect();
        }
    }
    request
}

/// The `__sandbox-exec` entry point; returns the exit code (the shell's, or 126).
///
/// MCP stdio servers and the Scribiz CLI run under it too (`--no-caps --forward-term -- PROGRAM
/// ARGS…`): without capabilities (as root they could otherwise read Splice's environment and
/// memory), and with SIGTERM passed on to the program's process group for a graceful end;
/// SIGHUP or SIGINT (Splice's last word, or its death) still ends everything at once.
pub fn main(args: &[OsString]) -> i32 {
    if args.first().is_some_and(|a| a == super::netns::RELAY_ARG) {
        return super::netns::relay_main(args);
    }
    let request = parse(args);
    if request.inner {
        return inner(&request);
    }
    let Some((first, others)) = request.program.split_first() else {
        eprintln!("splice supervisor: no command given");
        return CANNOT_RUN;
    };
    // A session of its own, so the command has no controlling terminal: one that could open
    // Splice's (`/dev/tty`) could type into it with TIOCSTI, and the user's shell would run
    // what it typed after Splice exits.
    if let Err(error) = setsid() {
        eprintln!("splice supervisor: cannot leave the terminal's session: {error}");
        return CANNOT_RUN;
    }
    if let Err(error) = set_child_subreaper(Some(getpid())) {
        eprintln!("splice supervisor: cannot become a subreaper: {error}");
        return CANNOT_RUN;
    }
    // The shell's process group, once it exists; a signal before that still counts.
    let group = Arc::new(AtomicI32::new(0));
    let signalled = Arc::new(AtomicI32::new(0));
    let Ok(mut signals) = Signals::new([SIGTERM, SIGINT, SIGHUP]) else {
        eprintln!("splice supervisor: cannot handle signals");
        return CANNOT_RUN;
    };
    {
        let (group, signalled) = (group.clone(), signalled.clone());
        let forward_term = request.forward_term;
        std::thread::spawn(move || {
            for signal in signals.forever() {
                let shell = group.load(Ordering::SeqCst);
                // A graceful end: the program decides; Splice follows with SIGHUP if need be.
                if forward_term && signal == SIGTERM && shell != 0 {
                    signal_group(shell, Signal::TERM);
                    continue;
                }
                signalled.store(signal, Ordering::SeqCst);
                kill_group(shell);
            }
        });
    }
    // Splice's death must end the command too (SIGHUP: at once, even with `--forward-term`).
    // Set before the check below, so a parent that died in between is caught by one or the
    // other.
    if set_parent_process_death_signal(Some(Signal::HUP)).is_err()
        || request
            .parent
            .is_some_and(|p| getppid().map(|pid| pid.as_raw_nonzero().get()) != Some(p))
    {
        return CANNOT_RUN;
    }
    // What the program starts cannot attach to the supervisor (to keep it from cleaning up).
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    if request.no_caps
        && let Err(error) = sandbox::drop_capabilities()
    {
        eprintln!(
            "splice supervisor: {} was not run: {error}",
            first.to_string_lossy()
        );
        return CANNOT_RUN;
    }
    // A confined command starts as a second `splice`, which confines itself and then becomes
    // the shell: the supervisor stays outside the command's Landlock domain, so the command
    // cannot signal it (`kill -9 $PPID` would leave what it started running, with no one to
    // end it) where the kernel scopes signals (Landlock ABI 6).
    let mut launch = if request.confine {
        let Ok(me) = std::env::current_exe() else {
            eprintln!("splice sandbox: the command was not run: cannot find the splice binary");
            return CANNOT_RUN;
        };
        let mut launch = std::process::Command::new(me);
        launch.args([sandbox::SANDBOX_ARG, "--inner"]);
        for path in &request.writable {
            launch.arg("--write").arg(path);
        }
        for path in &request.hidden {
            launch.arg("--hide").arg(path);
        }
        for path in &request.readable {
            launch.arg(super::reads::READ_ARG).arg(path);
        }
        for path in &request.own.dirs {
            launch.arg(OWN_DIR_ARG).arg(path);
        }
        for path in &request.own.files {
            launch.arg(OWN_FILE_ARG).arg(path);
        }
        if request.allow_unix_sockets {
            launch.arg(sandbox::ALLOW_UNIX_SOCKETS_ARG);
        }
        if let Some(proxy) = &request.proxy {
            launch.arg(super::netns::PROXY_ARG).arg(proxy);
        }
        launch.arg("--").arg(first).args(others);
        launch
    } else {
        let mut launch = std::process::Command::new(first);
        launch.args(others);
        launch
    };
    let shell = match launch.process_group(0).spawn() {
        Ok(child) => child.id(),
        Err(error) => {
            eprintln!(
                "splice supervisor: cannot run {}: {error}",
                first.to_string_lossy()
            );
            return CANNOT_RUN;
        }
    };
    let shell = i32::try_from(shell).unwrap_or(0);
    group.store(shell, Ordering::SeqCst);
    if signalled.load(Ordering::SeqCst) != 0 {
        kill_group(shell);
    }
    let status = wait_for(shell);
    end_descendants(shell);
    match (signalled.load(Ordering::SeqCst), status) {
        (0, Some(Ok(code))) => code,
        (0, Some(Err(_))) => {
            // The shell died of a signal: so does the supervisor, for Splice to see.
            let _ = kill_process(getpid(), Signal::KILL);
            128 + 9
        }
        (signal, _) if signal > 0 => 128 + signal,
        _ => CANNOT_RUN,
    }
}

/// The confined command's first process: confine itself, then become the program (same pid,
/// same process group). Refuses (126) to run anything it could not confine.
fn inner(request: &Request) -> i32 {
    let Some((first, others)) = request.program.split_first() else {
        eprintln!("splice supervisor: no command given");
        return CANNOT_RUN;
    };
    // A network of its own whose only way out is Splice's proxy; first, so the relay it starts
    // is in none of the namespaces and rules that follow.
    let proxy_env = match super::netns::isolate(request.proxy.as_deref()) {
        Ok(env) => env,
        Err(error) => {
            eprintln!("splice sandbox: the command was not run: {error}");
            return CANNOT_RUN;
        }
    };
    // Splice's own places and hidden files where the command may write are kept read-only and
    // masked in a mount namespace; Landlock keeps the rest.
    let hidden =
        match super::mask::protect_writable(&request.own, &request.hidden, &request.writable) {
            Ok(rest) => rest,
            Err(error) => {
                eprintln!("splice sandbox: the command was not run: {error}");
                return CANNOT_RUN;
            }
        };
    if let Err(error) = sandbox::confine_self(&request.writable, &hidden, &request.readable) {
        eprintln!("splice sandbox: the command was not run: {error}");
        return CANNOT_RUN;
    }
    // Last before the exec: Landlock does not govern connecting to Unix sockets.
    if let Err(error) = super::seccomp::install(
        request.allow_unix_sockets,
        super::seccomp::pretend_unavailable(),
    ) {
        eprintln!("splice sandbox: the command was not run: {error}");
        return CANNOT_RUN;
    }
    // Only its standard streams: a socket Splice inherited needs no `socket()` call.
    if let Err(error) = super::descriptors::close_on_exec_from(3) {
        eprintln!("splice sandbox: the command was not run: {error}");
        return CANNOT_RUN;
    }
    let mut program = std::process::Command::new(first);
    program.args(others);
    for (name, value) in proxy_env {
        match value {
            Some(value) => program.env(name, value),
            None => program.env_remove(name),
        };
    }
    let error = program.exec();
    eprintln!(
        "splice supervisor: cannot run {}: {error}",
        first.to_string_lossy()
    );
    CANNOT_RUN
}

/// Reap children until the shell exits; `Ok(code)` or `Err(signal)`, `None` if it was lost.
fn wait_for(shell: i32) -> Option<Result<i32, i32>> {
    loop {
        match wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get() == shell => {
                return match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => Some(Ok(code)),
                    (None, Some(signal)) => Some(Err(signal)),
                    (None, None) => Some(Err(0)),
                };
            }
            // An orphan that ended on its own: reaped, keep waiting.
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// Kill the shell's process group and every process still below the supervisor, until none
/// is left. Killed children's own children are reparented here, so each round finds the next
/// generation; a process forked mid-round is found in the next one. Whatever has ended is
/// reaped before `/proc` is scanned, so a command that left nothing behind (the usual case)
/// costs no scan at all.
fn end_descendants(shell: i32) {
    kill_group(shell);
    loop {
        match wait(WaitOptions::NOHANG) {
            Ok(Some(_)) | Err(Errno::INTR) => continue,
            // Children remain that have not ended yet: kill them, then look again.
            Ok(None) => {}
            // ECHILD: nothing is left below us.
            Err(_) => return,
        }
        for child in children() {
            if let Some(pid) = Pid::from_raw(child) {
                let _ = kill_process(pid, Signal::KILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn kill_group(group: i32) {
    signal_group(group, Signal::KILL);
}

fn signal_group(group: i32, signal: Signal) {
    if let Some(group) = Pid::from_raw(group) {
        let _ = kill_process_group(group, signal);
    }
}

/// This process's children, from `/proc/*/stat` (the parent is the field after the state).
fn children() -> Vec<i32> {
    let me = getpid().as_raw_nonzero().get();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .collect()
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last `)`.
    let fields = &stat[stat.rfind(')')? + 1..];
    fields.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_launch_line() {
        let args: Vec<OsString> = [
            "--parent",
            "42",
            "--confine",
            "--allow-unix-sockets",
            "--write",
            "/a",
            "--write",
            "/b",
            "--own-dir",
            "/c",
            "--own-file",
            "/d.json",
            "--",
            "sh",
            "-c",
            "--write x",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let request = parse(&args);
        assert_eq!(request.parent, Some(42));
        assert!(request.confine);
        assert!(request.allow_unix_sockets);
        assert_eq!(request.writable, [PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(request.own.dirs, [PathBuf::from("/c")]);
        assert_eq!(request.own.files, [PathBuf::from("/d.json")]);
        assert_eq!(request.program, ["sh", "-c", "--write x"]);
    }

    #[test]
    fn parses_the_helper_launch_line() {
        let args: Vec<OsString> = ["--parent", "7", "--no-caps", "--forward-term", "--", "srv"]
            .iter()
            .map(OsString::from)
            .collect();
        let request = parse(&args);
        assert!(request.no_caps && request.forward_term && !request.confine);
        assert_eq!(request.program, ["srv"]);
    }

    #[test]
    fn finds_its_own_children_in_proc() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn");
        let pid = i32::try_from(child.id()).expect("convert");
        assert!(children().contains(&pid));
        assert_eq!(parent_of(pid), Some(getpid().as_raw_nonzero().get()));
        let _ = child.kill();
        let _ = child.wait();
    }
}
