//! The subcommands, one module each with one `run(args, io)`: `main.rs` parses the arguments
//! and dispatches here. Each reports its own failures (on stderr, or as stream-json on stdout)
//! and returns how the process exits; an [`Error`] is what it could not report itself.

pub mod exec;
pub mod login;
pub mod logout;
pub mod mcp;
pub mod pkg;
pub mod publish;
pub mod registry;
pub mod restore;
pub mod scribiz;
pub mod usage;
pub mod worktree;

use std::io::{IsTerminal, Write};

use thiserror::Error;

use crate::exit::Exit;
use crate::permissions::sandbox;

/// Where a command writes: standard output (protocol and results only) and standard error.
pub struct Io {
    pub out: Box<dyn Write + Send>,
    pub err: Box<dyn Write + Send>,
    /// Standard output is a terminal (output formats and the front end follow it).
    pub out_is_terminal: bool,
}

impl Io {
    /// The process's own standard output and error.
    pub fn std() -> Io {
        Io {
            out: Box::new(std::io::stdout()),
            err: Box::new(std::io::stderr()),
            out_is_terminal: std::io::stdout().is_terminal(),
        }
    }
}

/// What a command wrote to an [`Io`] made by [`Io::captured`].
#[cfg(test)]
#[derive(Clone, Default)]
pub(crate) struct Captured {
    out: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    err: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

#[cfg(test)]
impl Captured {
    pub(crate) fn out(&self) -> String {
        self.out
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    pub(crate) fn err(&self) -> String {
        self.err
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }
}

#[cfg(test)]
struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

#[cfg(test)]
impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut buffer) = self.0.lock() {
            buffer.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
impl Io {
    /// Writers a test reads back, standard output not a terminal.
    pub(crate) fn captured() -> (Io, Captured) {
        let captured = Captured::default();
        let io = Io {
            out: Box::new(Shared(captured.out.clone())),
            err: Box::new(Shared(captured.err.clone())),
            out_is_terminal: false,
        };
        (io, captured)
    }
}

/// A failure a command could not report itself; `main` prints it on stderr. The commands here
/// report all of theirs (the terminal UI's, which has some, is the root package's).
#[derive(Debug, Error)]
pub enum Error {}

impl Error {
    /// How the process exits after it.
    pub fn exit(&self) -> Exit {
        match *self {}
    }
}

/// Read the config file once for what confined commands and package tools may reach: the
/// Unix-socket switch, and the secret-named variables commands may see (the file's `passEnv`
/// and the `--pass-env` flags). A file that cannot be read allows nothing extra (resolving the
/// run's settings reports why). Returns the config for the caller's other settings.
pub fn confine_as_configured(pass_env: &[String], allow: &[String]) -> crate::config::ConfigFile {
    let config = crate::settings::load_config().unwrap_or_default();
    sandbox::set_unix_sockets_allowed(config.sandbox.allow_all_unix_sockets);
    allow_reads_as_configured(&config);
    crate::permissions::network::set_policy(
        crate::permissions::network::NetworkPolicy::from_config(&config, allow),
    );
    let mut names = config.pass_env.clone();
    names.extend(pass_env.iter().cloned());
    sandbox::set_passed_env(names);
    config
}

/// Record the paths `sandbox.allowRead` lets confined commands and package tools read.
pub(crate) fn allow_reads_as_configured(config: &crate::config::ConfigFile) {
    let paths = config.sandbox.allow_read.iter();
    crate::permissions::reads::set_allowed_reads(
        paths
            .filter_map(|e| crate::permissions::reads::expand(e))
            .collect(),
    );
}

/// Completes on SIGINT, SIGTERM or SIGHUP.
pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = hup.recv() => {}
        _ = int.recv() => {}
    }
}
