//! Descriptors a sandboxed program must not inherit.
//!
//! Splice passes on whatever its own parent left open without close-on-exec (an IDE, a
//! terminal, a script): a connected Unix socket among them needs no `socket()` call, so the
//! seccomp filter cannot see it, and a confined command or package tool writing to it reaches
//! the program at the other end. The last stage before the program marks every descriptor
//! above the ones it is meant to have close-on-exec, so the program starts with those only.

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, fcntl};
use thiserror::Error;

/// Why the inherited descriptors could not all be marked; the program must not run.
#[derive(Debug, Error)]
pub enum DescriptorError {
    #[error("cannot list the inherited descriptors: {0}")]
    List(std::io::Error),
    #[error("cannot close inherited descriptor {fd}: {errno}")]
    Mark { fd: i32, errno: Errno },
}

/// Mark every open descriptor from `first` up close-on-exec; the program this process becomes
/// keeps `0..first`. The error says why not; the caller then must not run the program.
pub fn close_on_exec_from(first: i32) -> Result<(), DescriptorError> {
    let open: Vec<i32> = std::fs::read_dir("/proc/self/fd")
        .map_err(DescriptorError::List)?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd >= first)
        .collect();
    for fd in open {
        match fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)) {
            // The listing's own descriptor, closed since.
            Ok(_) | Err(Errno::EBADF) => {}
            Err(errno) => return Err(DescriptorError::Mark { fd, errno }),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a thread of the test process's own: a descriptor without close-on-exec gets it.
    #[test]
    fn an_inheritable_descriptor_becomes_close_on_exec() {
        use rustix::io::{FdFlags, fcntl_getfd, fcntl_setfd};
        let (a, _b) = std::os::unix::net::UnixStream::pair().expect("pair");
        fcntl_setfd(&a, FdFlags::empty()).expect("fcntl setfd a");
        let fd = std::os::fd::AsRawFd::as_raw_fd(&a);
        close_on_exec_from(fd).expect("close on exec from fd");
        let flags = fcntl_getfd(&a).expect("fcntl getfd a");
        assert!(flags.contains(FdFlags::CLOEXEC));
    }
}
