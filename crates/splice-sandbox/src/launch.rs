//! The launcher a tool's Node process starts through: `splice __pkg-launch --parent PID
//! [--network] [--write DIR…] [--hide FILE…] [--read PATH…] -- NODE ARGS…`, the splice binary itself, single-threaded, so it
//! can do what a multi-threaded Splice cannot without `unsafe`:
//!
//! - the outer stage asks for SIGKILL when Splice dies, makes a PID namespace (the tool can
//!   signal nothing of yours: `process.kill` is not covered by Node's permission model) and,
//!   unless the tool declares network, a network namespace (only a down loopback), inside a
//!   user namespace when not root; it sets up the result channel (fd 3 is the pipe it got as
//!   stdout; stdout becomes stderr, so what the tool prints is a log) and starts the inner stage;
//! - the inner stage, PID 1 of the new namespace (when it dies the kernel kills everything left
//!   in it), asks for SIGKILL when the outer stage dies, confines its writes and reads with
//!   Landlock where the kernel has it (a second layer under Node's permission model: no
//!   terminal or other device but the sinks and sources, no credential store, `--hide` and
//!   `--read` as for confined commands), gives up every capability, and becomes Node.
//!
//! The outer stage installs the seccomp filter that refuses Unix sockets and the other socket
//! families that reach programs outside (`seccomp.rs`; `--allow-unix-sockets`, the
//! config file's `sandbox.allowAllUnixSockets`, lifts the Unix part only) before it starts the
//! inner stage, which, with Node, inherits it. The inner stage leaves Node fds 0 to 3 only: a
//! socket Splice inherited needs no `socket()` call (see `descriptors.rs`).
//!
//! When a namespace or the filter cannot be set up it refuses: it writes a `PERMISSION_DENIED`
//! result on the result channel and never starts Node.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    Scope, path_beneath_rules,
};
use rustix::process::{Signal, getpid, getppid, set_parent_process_death_signal};
use rustix::thread::UnshareFlags;

use crate::sandbox::ALLOW_UNIX_SOCKETS_ARG;
use crate::{descriptors, reads, seccomp};

/// The hidden first argument of the launcher.
pub const LAUNCH_ARG: &str = "__pkg-launch";
/// The launcher's own binary, installed beside `splice`.
pub const LAUNCHER_BIN: &str = "splice-pkg-launch";
/// Test hook: set (non-empty) to make the launcher behave as on a kernel that refuses network
/// namespaces. It can only make Splice stricter.
pub const NO_NETNS_ENV: &str = "SPLICE_TEST_NO_NETNS";
/// The fd Node writes its result on.
pub const RESULT_FD: i32 = 3;
/// Exit code when Node was not started.
pub const NOT_STARTED: i32 = 125;

#[derive(Debug, Default, PartialEq)]
struct Request {
    parent: Option<i32>,
    network: bool,
    no_netns: bool,
    /// The inner stage.
    inner: bool,
    /// The person let package tools use Unix sockets (`sandbox.allowAllUnixSockets`).
    allow_unix_sockets: bool,
    /// The test hook: act as if the filter refusing them could not be installed.
    no_seccomp: bool,
    writable: Vec<PathBuf>,
    /// Files no tool may read (Splice's saved logins, the credential stores), and paths the
    /// person lets it read anyway (`reads.rs`).
    hidden: Vec<PathBuf>,
    readable: Vec<PathBuf>,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Request {
    let mut request = Request::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--network" {
            request.network = true;
        } else if arg == "--no-netns" {
            request.no_netns = true;
        } else if arg == "--inner" {
            request.inner = true;
        } else if arg == ALLOW_UNIX_SOCKETS_ARG {
            request.allow_unix_sockets = true;
        } else if arg == seccomp::NO_SECCOMP_ARG {
            request.no_seccomp = true;
        } else if arg == "--write" {
            request.writable.extend(rest.next().map(PathBuf::from));
        } else if arg == "--hide" {
            request.hidden.extend(rest.next().map(PathBuf::from));
        } else if arg == reads::READ_ARG {
            request.readable.extend(rest.next().map(PathBuf::from));
        } else if arg == "--parent" {
            request.parent = rest.next().and_then(|p| p.to_str()?.parse().ok());
        } else if arg == "--" {
            request.program = rest.by_ref().cloned().collect();
        }
    }
    request
}

/// The launcher to start: the small binary beside `splice` when it is there (it loads in a
/// fraction of the time), else `splice` itself, which takes the same arguments.
pub fn launcher_beside(splice: &Path) -> PathBuf {
    let own = splice.with_file_name(LAUNCHER_BIN);
    if own.is_file() {
        own
    } else {
        splice.to_path_buf()
    }
}

/// The `__pkg-launch` entry point: the exit code of Node, or [`NOT_STARTED`].
pub fn main(args: &[OsString]) -> i32 {
    let request = parse(args);
    if request.program.is_empty() {
        return refuse("the launcher was given no program");
    }
    // Splice's death (or the outer stage's) ends the tool. Set before the check, so a parent
    // that died in between is caught by one or the other.
    if set_parent_process_death_signal(Some(Signal::KILL)).is_err()
        || request.parent.is_some_and(|p| real_parent() != Some(p))
    {
        return NOT_STARTED;
    }
    if request.inner {
        inner(&request)
    } else {
        outer(&request)
    }
}

fn outer(request: &Request) -> i32 {
    if let Err(why) = isolate(request.network, request.no_netns) {
        return refuse(&why);
    }
    // fd 3: the pipe given as stdout (the result channel); the inner stage and Node inherit it.
    // It takes the place of whatever Splice inherited on fd 3, which must not reach Node anyway.
    match nix::unistd::dup2(std::io::stdout().as_raw_fd(), RESULT_FD) {
        Ok(RESULT_FD) => {}
        Ok(_) => return refuse("fd 3 is taken"),
        Err(e) => return refuse(&format!("cannot set up the result channel: {e}")),
    }
    // No Unix sockets for the inner stage and Node (Node's permission model does not check
    // connecting to one): installed here, where a failure can still be reported as the result.
    if let Err(why) = seccomp::install(request.allow_unix_sockets, request.no_seccomp) {
        return refuse(&why.to_string());
    }
    let logs = match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(e) => return refuse(&format!("cannot set up the logs: {e}")),
    };
    let Ok(me) = std::env::current_exe() else {
        return refuse("cannot find the splice binary for the inner stage");
    };
    let mut inner = std::process::Command::new(me);
    inner
        .args([LAUNCH_ARG, "--inner", "--parent"])
        .arg(getpid().as_raw_nonzero().get().to_string());
    for path in &request.writable {
        inner.arg("--write").arg(path);
    }
    for path in &request.hidden {
        inner.arg("--hide").arg(path);
    }
    for path in &request.readable {
        inner.arg(reads::READ_ARG).arg(path);
    }
    inner.arg("--").args(&request.program).stdout(logs);
    let status = inner.status();
    match status {
        Ok(status) => status
            .code()
            .or_else(|| {
                use std::os::unix::process::ExitStatusExt;
                status.signal().map(|s| 128 + s)
            })
            .unwrap_or(NOT_STARTED),
        Err(e) => refuse(&format!("cannot start the inner stage: {e}")),
    }
}

fn inner(request: &Request) -> i32 {
    let Some((node, node_args)) = request.program.split_first() else {
        return NOT_STARTED;
    };
    // Node gets its standard streams and the result channel only: a socket Splice inherited
    // needs no `socket()` call, and Node wraps any descriptor number it is given.
    if let Err(why) = descriptors::close_on_exec_from(RESULT_FD + 1) {
        let _ = writeln!(std::io::stderr(), "splice: {why}");
        return NOT_STARTED;
    }
    if let Err(why) = confine(request) {
        let _ = writeln!(std::io::stderr(), "splice: {why}");
        return NOT_STARTED;
    }
    // As root, Node would otherwise read Splice's environment and memory through /proc (the
    // PID namespace does not hide the host's procfs).
    if let Err(why) = crate::sandbox::drop_capabilities() {
        let _ = writeln!(std::io::stderr(), "splice: {why}");
        return NOT_STARTED;
    }
    let error = std::process::Command::new(node).args(node_args).exec();
    let _ = writeln!(
        std::io::stderr(),
        "splice: cannot run {}: {error}",
        node.to_string_lossy()
    );
    NOT_STARTED
}

/// The parent as the kernel knows it: `/proc/self/stat` reads in the namespace procfs was
/// mounted for (Splice's), so it holds inside a new PID namespace too, where `getppid` is 0.
fn real_parent() -> Option<i32> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok();
    let from_proc = stat.as_deref().and_then(|stat| {
        let fields = &stat[stat.rfind(')')? + 1..];
        fields.split_whitespace().nth(1)?.parse().ok()
    });
    from_proc.or_else(|| getppid().map(|pid| pid.as_raw_nonzero().get()))
}

/// Writes only beneath the declared directories (and `/dev/null`), reads nowhere in `/dev` but
/// the sinks and sources, nor the hidden files (Splice's saved logins, the credential stores:
/// `reads.rs`), and no signals or abstract sockets out of the domain, where the
/// kernel has Landlock: a second layer under Node's permission model, which some Node APIs have
/// been found to bypass. Best effort: the permission model and the namespaces hold without it.
/// A hidden file inside a declared write grant cannot be kept from the tool: refused.
fn confine(request: &Request) -> Result<(), String> {
    let abi = ABI::V5;
    let mut allowed: Vec<PathBuf> = request
        .writable
        .iter()
        .filter(|p| p.exists())
        .cloned()
        .collect();
    allowed.push(PathBuf::from("/dev/null"));
    let readable = reads::readable_roots(&request.hidden, &allowed, &request.readable)
        .map_err(|e| format!("cannot confine the tool's reads: {e}"))?;
    Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::ReadDir)))
        .and_then(|r| r.add_rules(path_beneath_rules(readable, AccessFs::from_read(abi))))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                crate::sandbox::DEVICES,
                AccessFs::from_read(abi),
            ))
        })
        .and_then(|r| r.add_rules(path_beneath_rules(allowed, AccessFs::from_all(abi))))
        .and_then(|r| r.restrict_self())
        .map(drop)
        .map_err(|e| format!("cannot confine the tool: {e}"))
}

/// A PID namespace, and a network namespace unless the tool declares network, inside a user
/// namespace when not root (which an unprivileged user may create where the kernel allows it).
#[allow(deprecated)] // `unshare` is deprecated for CLONE_FILES, which is not used here.
fn isolate(network: bool, pretend_refused: bool) -> Result<(), String> {
    if pretend_refused && !network {
        return Err(format!(
            "the tool declares no network and no network namespace could be made ({NO_NETNS_ENV} is set)"
        ));
    }
    let mut flags = UnshareFlags::NEWPID;
    if !network {
        flags |= UnshareFlags::NEWNET;
    }
    let root = rustix::process::geteuid().is_root();
    let (uid, gid) = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    if !root {
        flags |= UnshareFlags::NEWUSER;
    }
    rustix::thread::unshare(flags).map_err(|e| {
        let what = if network {
            "a PID namespace"
        } else {
            "a PID and network namespace (the tool declares no network)"
        };
        format!("cannot make {what}: {e}")
    })?;
    if root {
        return Ok(());
    }
    // The same ids inside as outside, so files keep their owners in Node's eyes.
    std::fs::write("/proc/self/setgroups", "deny")
        .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
        .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")))
        .map_err(|e| format!("cannot map ids in the user namespace: {e}"))
}

/// Write a `PERMISSION_DENIED` result on the result channel (still stdout here).
fn refuse(why: &str) -> i32 {
    let line = serde_json::json!({"ok": false, "code": "PERMISSION_DENIED", "message": why});
    let _ = writeln!(std::io::stdout(), "{line}");
    NOT_STARTED
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launcher_binary_beside_splice_is_preferred_and_splice_serves_without_it() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let splice = dir.path().join("splice");
        std::fs::write(&splice, "").expect("write splice");
        assert_eq!(launcher_beside(&splice), splice);
        let own = dir.path().join(LAUNCHER_BIN);
        std::fs::write(&own, "").expect("write own");
        assert_eq!(launcher_beside(&splice), own);
    }

    #[test]
    fn parses_the_launch_line() {
        let args: Vec<OsString> = [
            "--parent",
            "7",
            "--network",
            "--write",
            "/w",
            "--",
            "node",
            "--network",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let request = parse(&args);
        assert_eq!(request.parent, Some(7));
        assert!(request.network);
        assert!(!request.no_netns);
        assert!(!request.inner);
        assert_eq!(request.writable, [PathBuf::from("/w")]);
        assert_eq!(request.program, ["node", "--network"]);
    }
}
