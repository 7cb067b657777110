//! The one handle for processes the tests start (the splice binary, the registry server,
//! moto, node, python helpers): a `Running` ends its process (its whole process group when
//! started with `start_group`) and reaps it when dropped, so a failed assertion or an early
//! return leaves nothing running. Commands run to completion with `.output()`/`.status()`
//! need no handle: those wait. tmux's server is not a child of the test; `Tmux` ends it.

use std::io;
use std::ops::{Deref, DerefMut};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output};

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
