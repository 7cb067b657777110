//! The one handle for processes the tests start (the splice binary, the registry server,
//! moto, node, python helpers): a `Running` ends its process (its whole process group when
//! started with `start_group`) and reaps it when dropped, so a failed assertion or an early
//! return leaves nothing running. Commands run to completion with `.output()`/`.status()`
//! need no handle: those wait. tmux's server is not a child of the test; `Tmux` ends it.

use std::io::{self, Read};
use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::{Outcome, parse};

pub struct Running {
    /// `None` once `wait_with_output` took it (and reaped it).
    child: Option<Child>,
    /// Started as the leader of its own process group: drop kills the group.
    group: bool,
}

impl Running {
    /// Start `command`; the handle ends and reaps it when dropped.
    pub fn start(command: &mut Command) -> io::Result<Running> {
        Ok(Running {
            child: Some(command.spawn()?),
            group: false,
        })
    }

    /// Start `command` as the leader of a new process group; drop kills the whole group, so
    /// whatever it started goes too.
    pub fn start_group(command: &mut Command) -> io::Result<Running> {
        Ok(Running {
            child: Some(command.process_group(0).spawn()?),
            group: true,
        })
    }

    /// Wait for it to exit and collect what it wrote (as `Child::wait_with_output`).
    pub fn wait_with_output(mut self) -> io::Result<Output> {
        match self.child.take() {
            Some(child) => child.wait_with_output(),
            None => Err(io::Error::other("already waited for")),
        }
    }
}

impl Deref for Running {
    type Target = Child;
    fn deref(&self) -> &Child {
        self.child
            .as_ref()
            .expect("a Running holds its child until it is consumed")
    }
}

impl DerefMut for Running {
    fn deref_mut(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("a Running holds its child until it is consumed")
    }
}

impl Running {
    /// End it now (its group too when it leads one) and reap it; what drop does.
    pub fn end(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        // The group first, while the unreaped leader still holds its id (a group started
        // with `start_group` is not waited for by the tests themselves).
        if self.group
            && let Some(pid) = i32::try_from(child.id())
                .ok()
                .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        // A no-op for a child that already exited and was waited for.
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.end();
    }
}

/// `command.start()`: `Running::start` at the end of a builder chain, where `.spawn()` was.
pub trait Start {
    fn start(&mut self) -> io::Result<Running>;
}

impl Start for Command {
    fn start(&mut self) -> io::Result<Running> {
        Running::start(self)
    }
}

/// Longest a run in these tests may take before it counts as hung (a liveness bound, not a
/// speed check: every run here finishes in well under a second when nothing hangs).
pub const HUNG: Duration = Duration::from_secs(30);

/// Wait for `child` at most `HUNG`; a process that does not exit is killed and fails the test.
pub fn finish(mut child: Running, what: &str) -> Outcome {
    let deadline = Instant::now() + HUNG;
    // Drain stdout and stderr on threads so a full pipe cannot stall the child.
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = stdout.as_mut() {
            let _ = pipe.read_to_end(&mut text);
        }
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(pipe) = stderr.as_mut() {
            let _ = pipe.read_to_end(&mut text);
        }
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll child") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: splice did not exit");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    parse(std::process::Output {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

/// Start `command` with its output piped, for `finish`.
pub fn spawn(mut command: Command) -> Running {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command.start().expect("spawn splice")
}
