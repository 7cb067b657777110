//! The log: `tracing` events from the core written to a file in Splice's state directory, never
//! to stdout (the protocol's) nor over the TUI. `SPLICE_LOG` picks what is written, in
//! `RUST_LOG`'s syntax (`debug`, `splice::provider=trace`, `off`); by default Splice's own
//! events at `info` and other crates' at `warn`.
//!
//! The file is `$SPLICE_DATA_DIR/log/splice.log` when that variable relocates Splice's data,
//! else `$XDG_STATE_HOME/splice/log/splice.log` (`~/.local/state/splice/log/splice.log`). It is
//! opened on the first event (a run that logs nothing creates nothing), with mode 0600: prompts
//! and paths may be in it. Past [`MAX_BYTES`] it moves to `splice.log.1` (replacing the one
//! before) and a new file starts, so the log never takes more than twice that. Every line
//! passes through the redactor on its way out: call sites never log keys, headers or tokens,
//! and a secret value of the environment that slipped into a message is still replaced.

pub mod events;
pub use splice_sandbox::process_log as process;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::layer::SubscriberExt;

use crate::sanitize::redact::Redactor;

/// The variable that sets the filter.
pub const ENV: &str = "SPLICE_LOG";
/// What is written when `SPLICE_LOG` is unset or blank.
pub const DEFAULT_FILTER: &str = "warn,splice=info";
/// The file's size past which it is rotated.
pub const MAX_BYTES: u64 = 10 * 1024 * 1024;
const FILE_NAME: &str = "splice.log";

/// Where the log lives (see [`crate::layout::Layout::log_dir`]).
pub fn log_dir() -> PathBuf {
    crate::layout::Layout::process().log_dir()
}

pub fn log_path() -> PathBuf {
    log_dir().join(FILE_NAME)
}

/// Installs the file log for this process. `stderr_free` says whether a warning may go to
/// stderr (headless and subcommands; never the TUI, which draws there). A log that cannot be
/// opened, or a `SPLICE_LOG` that does not parse, never fails the run.
pub fn init(stderr_free: bool) {
    let filter = filter(stderr_free, DEFAULT_FILTER);
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_timer(TimeAndPid(std::process::id()))
        .with_writer(LogFile::new(log_path(), stderr_free));
    let subscriber = tracing_subscriber::registry().with(filter).with(layer);
    let _ = tracing::subscriber::set_global_default(subscriber);
    let tui = !stderr_free;
    tracing::info!(target: "splice", version = env!("CARGO_PKG_VERSION"), tui, "splice started");
}

/// The process's exit code, at the binary's edge: a failure says so at `warn`.
pub fn exit(code: i32) {
    if code == 0 {
        tracing::info!(target: "splice", code, "splice exited");
    } else {
        tracing::warn!(target: "splice", code, "splice exited");
    }
}

/// What the registry server writes when `SPLICE_LOG` is unset: its requests besides.
pub const SERVER_FILTER: &str = "warn,splice=info,tower_http=info";

/// Installs a log on stderr: for the registry server, whose stderr is its operator's console
/// (or its service manager's journal), as is usual for a server.
pub fn init_stderr() {
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(std::io::stderr);
    let subscriber = tracing_subscriber::registry()
        .with(filter(true, SERVER_FILTER))
        .with(layer);
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// `SPLICE_LOG`'s filter, else `default`.
fn filter(stderr_free: bool, default: &str) -> EnvFilter {
    let spec = crate::config::env_value(ENV).map(|spec| with_core_paths(&spec));
    match EnvFilter::try_new(spec.as_deref().unwrap_or(default)) {
        Ok(filter) => filter,
        Err(error) => {
            if stderr_free {
                eprintln!("splice: ignoring {ENV} ({error}); logging at {default}");
            }
            EnvFilter::new(default)
        }
    }
}

/// `SPLICE_LOG` names modules as `splice::session`, as it did before the core became a crate of
/// its own: each such directive also selects the same module of `splice_core`.
fn with_core_paths(spec: &str) -> String {
    spec.split(',')
        .flat_map(|directive| {
            let core = directive
                .trim()
                .strip_prefix("splice::")
                .map(|rest| format!("splice_core::{rest}"));
            std::iter::once(directive.to_string()).chain(core)
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The time as `fmt` writes it, then the process id: runs started side by side share the file.
struct TimeAndPid(u32);

impl FormatTime for TimeAndPid {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        SystemTime.format_time(w)?;
        write!(w, " [{}]", self.0)
    }
}

/// The log file, opened on first write.
struct LogFile {
    path: PathBuf,
    stderr_free: bool,
    redactor: Redactor,
    state: Mutex<State>,
}

enum State {
    Unopened,
    Open {
        file: File,
        size: u64,
    },
    /// It could not be opened (warned once); events are dropped.
    Failed,
}

impl LogFile {
    fn new(path: PathBuf, stderr_free: bool) -> LogFile {
        LogFile {
            path,
            stderr_free,
            redactor: Redactor::from_env(),
            state: Mutex::new(State::Unopened),
        }
    }

    /// Appends one formatted event, redacted.
    fn append(&self, line: &[u8]) {
        let text = String::from_utf8_lossy(line);
        let text = match self.redactor.redact_str(&text) {
            Some(clean) => clean,
            None => text.into_owned(),
        };
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let State::Open { size, .. } = &*state
            && *size + text.len() as u64 > MAX_BYTES
        {
            // Rotate: a failed rename leaves the file to grow, which is better than no log.
            let _ = std::fs::rename(&self.path, self.path.with_extension("log.1"));
            *state = State::Unopened;
        }
        if matches!(*state, State::Unopened) {
            *state = match open(&self.path) {
                Ok((file, size)) => State::Open { file, size },
                Err(error) => {
                    if self.stderr_free {
                        eprintln!(
                            "splice: cannot open the log {}: {error}; running without it",
                            self.path.display()
                        );
                    }
                    State::Failed
                }
            };
        }
        if let State::Open { file, size } = &mut *state
            && file.write_all(text.as_bytes()).is_ok()
        {
            *size += text.len() as u64;
        }
    }
}

/// Opens (creating) the log for appending, owner-only whatever mode it had; gives its size.
fn open(path: &Path) -> std::io::Result<(File, u64)> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        // A link planted in its place must not send the log (or its 0600) elsewhere.
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    let size = file.metadata()?.len();
    Ok((file, size))
}

/// One event's bytes, appended whole when `fmt` is done with it.
struct Line<'a> {
    log: &'a LogFile,
    buf: Vec<u8>,
}

impl Write for Line<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line<'_> {
    fn drop(&mut self) {
        if !self.buf.is_empty() {
            self.log.append(&self.buf);
        }
    }
}

impl<'a> MakeWriter<'a> for LogFile {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Line<'a> {
        Line {
            log: self,
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_directives_also_select_the_core_crates_modules() {
        assert_eq!(
            with_core_paths("warn,splice::session=debug, splice::provider=trace"),
            "warn,splice::session=debug,splice_core::session=debug, \
             splice::provider=trace,splice_core::provider=trace"
        );
        assert_eq!(with_core_paths("debug"), "debug");
        let filter = EnvFilter::try_new(with_core_paths("splice::session=debug"));
        assert!(filter.is_ok());
    }

    #[test]
    fn the_file_is_owner_only_redacted_and_rotated() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let path = dir.path().join("log").join("splice.log");
        let mut log = LogFile::new(path.clone(), false);
        log.redactor = Redactor::from_vars([("X_API_KEY".into(), "very-secret-value".into())]);
        log.append(b"request with very-secret-value\n");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(text, "request with [REDACTED]\n");
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600));
        if let Ok(mut state) = log.state.lock()
            && let State::Open { size, .. } = &mut *state
        {
            *size = MAX_BYTES;
        }
        log.append(b"after\n");
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some("after\n")
        );
        let old = std::fs::read_to_string(dir.path().join("log").join("splice.log.1"));
        assert_eq!(old.ok().as_deref(), Some("request with [REDACTED]\n"));
    }

    #[test]
    fn a_log_that_cannot_open_drops_events() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").expect("write blocker");
        let log = LogFile::new(blocker.join("splice.log"), false);
        log.append(b"line\n");
        assert!(matches!(log.state.lock().as_deref(), Ok(State::Failed)));
    }

    #[test]
    fn a_link_in_the_logs_place_is_not_followed() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::write(&elsewhere, "").expect("write elsewhere");
        let path = dir.path().join("splice.log");
        std::os::unix::fs::symlink(&elsewhere, &path).expect("link path");
        LogFile::new(path, false).append(b"line\n");
        assert_eq!(
            std::fs::read_to_string(&elsewhere).ok().as_deref(),
            Some("")
        );
    }
}
