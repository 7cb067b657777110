//! The process group of a child Splice started with `process_group(0)`: one guard that kills
//! the whole group (the child and whatever it started) when asked and when dropped, so no path
//! leaves a descendant running.

use rustix::process::{Pid, Signal, kill_process_group};

/// Kills the group with SIGKILL when dropped, unless [`GroupGuard::disarm`] said it is gone.
#[derive(Debug)]
pub struct GroupGuard(Option<Pid>);

impl GroupGuard {
    /// The group led by this child (started with `process_group(0)`); an empty guard when the
    /// child has no pid (already reaped).
    pub fn of(child: &tokio::process::Child) -> GroupGuard {
        GroupGuard(
            child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
        )
    }

    pub fn pid(&self) -> Option<Pid> {
        self.0
    }

    /// Send `signal` to every process of the group; harmless when it is already empty (ESRCH).
    pub fn signal(&self, signal: Signal) {
        if let Some(pid) = self.0 {
            let _ = kill_process_group(pid, signal);
        }
    }

    pub fn kill(&self) {
        self.signal(Signal::KILL);
    }

    /// The group was killed and its leader reaped: its id may be reused, so never signal it again.
    pub fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
