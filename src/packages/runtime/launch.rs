//! The launcher a tool's Node process starts through: `splice __pkg-launch --parent PID
//! [--network] -- NODE ARGS…`, the splice binary itself, single-threaded, so it can do what a
//! multi-threaded Splice cannot without `unsafe`: leave the network (a fresh network namespace,
//! in a user namespace of its own when not root), ask for SIGKILL when Splice dies, and set up
//! the result channel (fd 3 is the pipe it got as stdout; stdout becomes stderr, so what the tool
//! prints is a log). Then it becomes Node (same pid, same process group).
//!
//! When it cannot make the namespace it refuses: it writes a `PERMISSION_DENIED` result on the
//! result channel and never starts Node with the network it was not given.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;

use rustix::io::{FdFlags, fcntl_dupfd_cloexec, fcntl_setfd};
use rustix::process::{Signal, getppid, set_parent_process_death_signal};
use rustix::thread::UnshareFlags;

/// The hidden first argument of the launcher.
pub const LAUNCH_ARG: &str = "__pkg-launch";
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
        } else if arg == "--parent" {
            request.parent = rest.next().and_then(|p| p.to_str()?.parse().ok());
        } else if arg == "--" {
            request.program = rest.by_ref().cloned().collect();
        }
    }
    request
}

/// The `__pkg-launch` entry point: returns only when Node could not be started.
pub fn main(args: &[OsString]) -> i32 {
    let request = parse(args);
    let Some((node, node_args)) = request.program.split_first() else {
        return refuse("the launcher was given no program");
    };
    // Splice's death ends the tool. Set before the check, so a parent that died in between is
    // caught by one or the other.
    if set_parent_process_death_signal(Some(Signal::KILL)).is_err()
        || request
            .parent
            .is_some_and(|p| getppid().map(|pid| pid.as_raw_nonzero().get()) != Some(p))
    {
        return NOT_STARTED;
    }
    if !request.network
        && let Err(why) = leave_network(request.no_netns)
    {
        return refuse(&format!(
            "the tool declares no network and none could be taken from it: {why}"
        ));
    }
    // fd 3: the pipe given as stdout (the result channel); Node inherits it (no CLOEXEC).
    let result = match fcntl_dupfd_cloexec(std::io::stdout().as_fd(), RESULT_FD) {
        Ok(fd) if fd.as_raw_fd() == RESULT_FD => fd,
        Ok(_) => return refuse("fd 3 is taken"),
        Err(e) => return refuse(&format!("cannot set up the result channel: {e}")),
    };
    if let Err(e) = fcntl_setfd(&result, FdFlags::empty()) {
        return refuse(&format!("cannot set up the result channel: {e}"));
    }
    let logs = match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(e) => return refuse(&format!("cannot set up the logs: {e}")),
    };
    let error = std::process::Command::new(node)
        .args(node_args)
        .stdout(logs)
        .exec();
    drop(result);
    let _ = writeln!(
        std::io::stderr(),
        "splice: cannot run {}: {error}",
        node.to_string_lossy()
    );
    NOT_STARTED
}

/// A network namespace of its own (only a down loopback), inside a user namespace when not
/// root (which an unprivileged user may create where the kernel allows it).
#[allow(deprecated)] // `unshare` is deprecated for CLONE_FILES, which is not used here.
fn leave_network(pretend_refused: bool) -> Result<(), String> {
    if pretend_refused {
        return Err(format!(
            "network namespaces are refused ({NO_NETNS_ENV} is set)"
        ));
    }
    let root = rustix::process::geteuid().is_root();
    if root {
        return rustix::thread::unshare(UnshareFlags::NEWNET)
            .map_err(|e| format!("cannot make a network namespace: {e}"));
    }
    let (uid, gid) = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    rustix::thread::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET)
        .map_err(|e| format!("cannot make a user and network namespace: {e}"))?;
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
    fn parses_the_launch_line() {
        let args: Vec<OsString> = ["--parent", "7", "--network", "--", "node", "--network"]
            .iter()
            .map(OsString::from)
            .collect();
        let request = parse(&args);
        assert_eq!(request.parent, Some(7));
        assert!(request.network);
        assert!(!request.no_netns);
        assert_eq!(request.program, ["node", "--network"]);
    }
}
