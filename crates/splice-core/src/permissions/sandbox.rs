//! The sandbox's settings for this process, as the command line and the config file set them
//! when Splice starts, and the launches that pass them to the sandbox (`splice_sandbox`, which
//! holds none of them itself): the launcher beside `splice`, the secret-looking variables passed
//! on, whether Unix sockets are allowed, the paths the person lets confined commands read, and
//! Splice's saved logins, which they may never read.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use splice_sandbox::sandbox::{
    ALLOW_UNIX_SOCKETS_ARG, DEVICES, NO_LANDLOCK_ENV, SANDBOX_ARG, SHELL, SandboxError, Settings,
    available, drop_capabilities, writable_paths,
};

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();
static PASSED_ENV: OnceLock<Vec<String>> = OnceLock::new();
static UNIX_SOCKETS: OnceLock<bool> = OnceLock::new();
static ALLOWED_READS: OnceLock<Vec<PathBuf>> = OnceLock::new();

/// Record the executable that supervises commands (see [`Settings::launcher`]).
pub fn set_launcher(path: PathBuf) {
    let _ = LAUNCHER.set(path);
}

/// The executable that supervises commands, when known.
pub fn launcher() -> Option<&'static Path> {
    LAUNCHER.get().map(PathBuf::as_path)
}

/// The secret-looking variables the user lets commands and package tools see.
pub fn passed_env() -> &'static [String] {
    PASSED_ENV.get().map(Vec::as_slice).unwrap_or_default()
}

/// Record the secret-looking variables the user lets commands see (`--pass-env`, `passEnv`).
pub fn set_passed_env(names: Vec<String>) {
    let _ = PASSED_ENV.set(names);
}

/// Record whether confined commands and package tools may connect to Unix sockets (the config
/// file's `sandbox.allowAllUnixSockets`); unless set, they may not.
pub fn set_unix_sockets_allowed(allowed: bool) {
    let _ = UNIX_SOCKETS.set(allowed);
}

/// Whether the person lifted the block on Unix sockets.
pub fn unix_sockets_allowed() -> bool {
    UNIX_SOCKETS.get().copied().unwrap_or(false)
}

/// Record the paths the person lets confined commands and package tools read anyway (the
/// config file's `sandbox.allowRead`, expanded by `reads::expand`).
pub fn set_allowed_reads(paths: Vec<PathBuf>) {
    let _ = ALLOWED_READS.set(paths);
}

/// The paths the person lets them read anyway.
pub fn allowed_reads() -> &'static [PathBuf] {
    ALLOWED_READS.get().map(Vec::as_slice).unwrap_or_default()
}

/// Files no confined command may read: Splice's saved registry logins, whose token would let a
/// command publish as you.
pub fn hidden_files() -> Vec<PathBuf> {
    crate::registry_client::credentials::path()
        .into_iter()
        .collect()
}

/// Every file a confined command may not read (see `splice_sandbox::reads`).
pub fn hidden_paths() -> Vec<PathBuf> {
    settings().hidden_paths()
}

/// The settings in force, for one launch.
pub fn settings() -> Settings {
    Settings {
        launcher: LAUNCHER.get().cloned(),
        passed_env: passed_env().to_vec(),
        secret_name: crate::sanitize::redact::is_secret_name,
        unix_sockets: unix_sockets_allowed(),
        allowed_reads: allowed_reads().to_vec(),
        never_read: hidden_files(),
    }
}

/// `sh -c command` in `root` under the supervisor, confined when `confine` is set (see
/// `splice_sandbox::sandbox::shell_command`): kept from Splice's own places and what approved
/// hooks run, its network through Splice's proxy.
pub fn shell_command(
    root: &Path,
    extra: &[PathBuf],
    command: &str,
    confine: bool,
) -> Result<(tokio::process::Command, bool), SandboxError> {
    let settings = settings();
    // The proxy starts with the first command that will be confined, not before.
    let proxy = if confine && settings.launcher.is_some() && available().is_ok() {
        crate::net_proxy::socket()
    } else {
        Err("the command is not confined")
    };
    splice_sandbox::sandbox::shell_command(
        &settings,
        super::own::protected(),
        proxy,
        root,
        extra,
        command,
        confine,
    )
}
