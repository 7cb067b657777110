//! The process group of a child Splice started: one guard that ends the child and whatever it
//! started when asked and when dropped, so no path leaves a descendant running. The child is
//! either the leader of its own group (`process_group(0)`), ended with SIGKILL to the group, or
//! Splice's supervisor (`splice __sandbox-exec --forward-term`, see `supervisor.rs`),
//! which owns every descendant, even those that left the group: it is asked with SIGHUP, and
//! never killed itself (what it supervises would outlive it).

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

/// Ends the child's processes when dropped, unless [`GroupGuard::disarm`] said they are gone.
#[derive(Debug)]
pub struct GroupGuard {
    pid: Option<Pid>,
    supervisor: bool,
}

impl GroupGuard {
    /// The group led by this child (started with `process_group(0)`); an empty guard when the
    /// child has no pid (already reaped).
    pub fn of(child: &tokio::process::Child) -> GroupGuard {
        GroupGuard::new(child, false)
    }

    /// The child is Splice's supervisor, started with `--forward-term`.
    pub fn supervisor(child: &tokio::process::Child) -> GroupGuard {
        GroupGuard::new(child, true)
    }

    fn new(child: &tokio::process::Child, supervisor: bool) -> GroupGuard {
        GroupGuard {
            pid: child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
            supervisor,
        }
    }

    /// Ask for a graceful end: SIGTERM to the group (a supervisor passes it on to its
    /// program's group). Harmless when it is already gone (ESRCH).
    pub fn terminate(&self) {
        match (self.pid, self.supervisor) {
            (Some(pid), true) => {
                let _ = kill_process(pid, Signal::TERM);
            }
            (Some(pid), false) => {
                let _ = kill_process_group(pid, Signal::TERM);
            }
            (None, _) => {}
        }
    }

    /// End everything now: SIGKILL to the group, or SIGHUP to the supervisor (which kills every
    /// descendant, reaps them and exits).
    pub fn kill(&self) {
        match (self.pid, self.supervisor) {
            (Some(pid), true) => {
                let _ = kill_process(pid, Signal::HUP);
            }
            (Some(pid), false) => {
                let _ = kill_process_group(pid, Signal::KILL);
            }
            (None, _) => {}
        }
    }

    /// The child was reaped. A supervisor exits only once every descendant is gone, and its pid
    /// may be reused now: never signal it again. A plain group may still hold what the child
    /// started: killed.
    pub fn reaped(&mut self) {
        if self.supervisor {
            self.disarm();
        } else {
            self.kill();
        }
    }

    /// The group was killed and its leader reaped: its id may be reused, so never signal it again.
    pub fn disarm(&mut self) {
        self.pid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
