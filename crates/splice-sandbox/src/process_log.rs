//! A child process in the log: started (program, pid) and how it ended (exit code or signal,
//! duration). Held beside the child's own handle; dropped without an exit, it logs the child
//! as ended by Splice (interrupted, timed out, or its run cancelled).

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Instant;

pub struct ProcessLog {
    program: String,
    pid: Option<u32>,
    started: Instant,
    ended: bool,
}

impl ProcessLog {
    /// `program` is what to call it (never its arguments, where secrets may ride).
    pub fn started(program: &str, pid: Option<u32>) -> ProcessLog {
        tracing::info!(target: "splice::process", program, pid, "process started");
        ProcessLog {
            program: program.to_string(),
            pid,
            started: Instant::now(),
            ended: false,
        }
    }

    /// The child exited with `status` (reaped).
    pub fn exited(&mut self, status: &ExitStatus) {
        self.ended = true;
        let (program, pid, ms) = (&self.program, self.pid, self.started.elapsed().as_millis());
        match (status.code(), status.signal()) {
            (Some(0), _) => {
                tracing::info!(target: "splice::process", program, pid, code = 0, ms, "process exited")
            }
            (Some(code), _) => {
                tracing::warn!(target: "splice::process", program, pid, code, ms, "process exited")
            }
            (None, signal) => {
                tracing::warn!(target: "splice::process", program, pid, signal, ms, "process killed")
            }
        }
    }
}

impl Drop for ProcessLog {
    fn drop(&mut self) {
        if !self.ended {
            let ms = self.started.elapsed().as_millis();
            tracing::warn!(target: "splice::process", program = self.program, pid = self.pid, ms, "process ended by Splice");
        }
    }
}
