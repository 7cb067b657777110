//! The sandbox for commands Splice runs on its own authority (`auto` mode, and the analyzers and
//! test command a pipeline stage chooses): Linux Landlock lets them read everywhere but
//! Splice's saved registry logins, the devices and the credential stores in HOME (`reads.rs`),
//! and write only inside the working root, the temporary
//! directories, a few devices (never a terminal) and the build tools' caches, and never in
//! Splice's own config and data directories, wherever they lie, nor elsewhere in HOME when HOME
//! lies in one of those places (`places.rs`, `mask.rs`).
//!
//! Every command, confined or not, is started through Splice's launcher (`splice-pkg-launch`
//! beside `splice`, else `splice` itself): `__sandbox-exec` is the supervisor (see
//! `supervisor.rs`) that confines itself when asked, runs `sh -c`, and ends whatever the
//! command left behind. No `unsafe` `pre_exec` hook is needed.
//!
//! Commands get Splice's environment without the variables redaction treats as secret (provider
//! keys and the like), except those the user passes on with `--pass-env` / `passEnv`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::places::Protected;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

use thiserror::Error;

/// The hidden first argument of the supervisor.
pub const SANDBOX_ARG: &str = "__sandbox-exec";
/// The newest Landlock ABI this code was written and tested against.
const ABI_VERSION: ABI = ABI::V5;
/// The oldest ABI that governs every way to change a file: ABI 3 (Linux 6.2) adds truncation,
/// without which a confined command could empty any file it can read.
const MINIMUM_ABI: ABI = ABI::V3;
/// Test hook: set (non-empty) to make Splice behave as on a kernel without Landlock. It can
/// only make Splice stricter.
pub const NO_LANDLOCK_ENV: &str = "SPLICE_TEST_NO_LANDLOCK";

/// The supervisor's and the package launcher's flag that lifts the block on Unix sockets.
pub const ALLOW_UNIX_SOCKETS_ARG: &str = "--allow-unix-sockets";

/// How commands are started and what the person loosened, as the core worked it out from the
/// command line and the config file. Passed to every launch; the sandbox keeps none of it.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The executable that supervises commands: the small launcher binary beside `splice`
    /// when it is installed, else the `splice` binary itself (both take `__sandbox-exec` and
    /// `__pkg-launch`). Without it, as when the library is embedded elsewhere, commands run
    /// directly and none can be confined.
    pub launcher: Option<PathBuf>,
    /// The secret-looking variables the user lets commands and package tools see
    /// (`--pass-env`, `passEnv`).
    pub passed_env: Vec<String>,
    /// Whether names a variable as secret (commands do not inherit those but `passed_env`).
    pub secret_name: fn(&str) -> bool,
    /// Confined commands and package tools may connect to Unix sockets (the config file's
    /// `sandbox.allowAllUnixSockets`); unless set, they may not (see `seccomp.rs`).
    pub unix_sockets: bool,
    /// Paths the person lets them read anyway (`sandbox.allowRead`, expanded).
    pub allowed_reads: Vec<PathBuf>,
    /// Files no confined command may read, whatever `allowed_reads` says: Splice's saved
    /// registry logins (`hidden.rs`).
    pub never_read: Vec<PathBuf>,
}

impl Settings {
    /// No launcher, nothing loosened, and every variable `secret_name` names kept back.
    pub fn new(secret_name: fn(&str) -> bool) -> Settings {
        Settings {
            launcher: None,
            passed_env: Vec::new(),
            secret_name,
            unix_sockets: false,
            allowed_reads: Vec::new(),
            never_read: Vec::new(),
        }
    }

    /// Every file a confined command may not read (see `reads.rs`).
    pub fn hidden_paths(&self) -> Vec<PathBuf> {
        super::reads::hidden_paths(&self.never_read, &self.allowed_reads)
    }

    /// Remove from `process` every variable of this process's environment that looks secret,
    /// but those passed on.
    pub fn remove_secrets(&self, process: &mut tokio::process::Command) {
        for (name, _) in std::env::vars_os() {
            let Some(text) = name.to_str() else { continue };
            if (self.secret_name)(text) && !self.passed_env.iter().any(|p| p == text) {
                process.env_remove(&name);
            }
        }
    }
}

/// Why a command cannot be confined here, or why confining it failed (then it is not run).
#[derive(Debug, Error)]
pub enum SandboxError {
    #[error("the sandbox is unavailable ({} is set)", NO_LANDLOCK_ENV)]
    TurnedOff,
    #[error("the sandbox is unavailable: this kernel lacks Landlock ABI 3 (Linux 6.2+): {0}")]
    NoLandlock(String),
    #[error("the sandbox is unavailable: no launcher")]
    NoLauncher,
    /// A file to hide cannot be (see `hidden.rs`).
    #[error(transparent)]
    Hidden(#[from] super::hidden::HiddenError),
    #[error("cannot confine the command: {0}")]
    Confine(String),
    #[error("Landlock did not enforce the rules")]
    NotEnforced,
    #[error("cannot set no_new_privs: {0}")]
    NoNewPrivs(rustix::io::Errno),
    #[error("cannot read capabilities: {0}")]
    ReadCapabilities(rustix::io::Errno),
    #[error("cannot empty the bounding set: {0}")]
    BoundingSet(rustix::io::Errno),
    #[error("cannot drop capabilities: {0}")]
    DropCapabilities(rustix::io::Errno),
    #[error("capabilities remain after dropping them")]
    CapabilitiesRemain,
}

/// Whether a command can be confined here; the error says why not. Checked before a command
/// that would run confined, so one that cannot be is asked about instead (fail closed).
pub fn available() -> Result<(), SandboxError> {
    if std::env::var_os(NO_LANDLOCK_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(SandboxError::TurnedOff);
    }
    // Why this kernel cannot confine, probed once.
    static MISSING: OnceLock<Option<String>> = OnceLock::new();
    let missing = MISSING.get_or_init(|| {
        // Creating (not enforcing) a ruleset that requires the minimum ABI's rights tells
        // whether this kernel can enforce them, without confining Splice itself.
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(MINIMUM_ABI))
            .and_then(|ruleset| ruleset.create())
            .err()
            .map(|error| error.to_string())
    });
    match missing {
        Some(why) => Err(SandboxError::NoLandlock(why.clone())),
        None => Ok(()),
    }
}

/// The shell commands run in, by its absolute path: a command may write directories on PATH
/// (`node_modules/.bin`, a venv), and a planted `sh` there must not run the next command.
pub const SHELL: &str = "/bin/sh";

/// The devices a command may write (and the only ones it may read, `reads.rs`): sinks, sources
/// and shared memory. Not `/dev` as a whole:
/// terminals (`/dev/pts/*`, `/dev/tty*`) are the user's screen, and a command that found
/// Splice's (`ps -o tty=`) could draw over the TUI or send escape sequences to the terminal.
/// `/dev/stdout`, `/dev/stderr` and `/dev/fd/*` still work: they reopen the command's own pipes.
pub const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/shm",
];

/// Cargo's download caches under `CARGO_HOME` (not `bin/`, which is on PATH).
const CARGO_CACHES: [&str; 2] = ["registry", "git"];
/// Build tools' caches under the cache directory (`~/.cache`).
const TOOL_CACHES: [&str; 8] = [
    "pip", "go-build", "ruff", "uv", "pypoetry", "yarn", "node-gyp", "mypy",
];
/// npm's content cache and logs under `~/.npm` (not `_npx`, whose packages `npx` runs).
const NPM_CACHES: [&str; 2] = ["_cacache", "_logs"];

/// Where a confined command in `root` may write, with `extra` places the run vouches for (a
/// worktree's git directory, which Splice knows from its own records).
pub fn writable_paths(root: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = vec![
        root.to_path_buf(),
        PathBuf::from("/tmp"),
        std::env::temp_dir(),
    ];
    paths.extend(DEVICES.iter().map(PathBuf::from));
    // Build tools keep caches and locks in the home directory: their download caches only,
    // never a place programs are later run from (`~/.cargo/bin` is on PATH; `~/.cache` also
    // holds pre-commit's hook checkouts, which `git commit` runs).
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".cargo")));
    if let Some(cargo_home) = cargo_home {
        paths.extend(CARGO_CACHES.iter().map(|dir| cargo_home.join(dir)));
    }
    if let Some(cache) = dirs::cache_dir() {
        paths.extend(TOOL_CACHES.iter().map(|dir| cache.join(dir)));
    }
    if let Some(home) = dirs::home_dir() {
        paths.extend(NPM_CACHES.iter().map(|dir| home.join(".npm").join(dir)));
        paths.push(home.join("go").join("pkg").join("mod"));
    }
    paths.extend(extra.iter().cloned());
    paths.sort();
    paths.dedup();
    paths
}

/// `sh -c command` in `root` under the supervisor, confined when `confine` is set: it may not
/// write what `protected` keeps, and reaches the network through `proxy` only (none at all
/// when that is the reason there is no proxy). Refuses (with the reason) to build a command
/// that should be confined but cannot be. The flag says whether the supervisor runs it (it
/// does whenever a launcher is known).
pub fn shell_command(
    settings: &Settings,
    protected: &Protected,
    proxy: Result<&Path, &str>,
    root: &Path,
    extra: &[PathBuf],
    command: &str,
    confine: bool,
) -> Result<(tokio::process::Command, bool), SandboxError> {
    if confine {
        available()?;
    }
    let mut process = match &settings.launcher {
        Some(launcher) => {
            let mut process = tokio::process::Command::new(launcher);
            process
                .arg(SANDBOX_ARG)
                .arg("--parent")
                .arg(std::process::id().to_string());
            if confine {
                process.arg("--confine");
                if settings.unix_sockets {
                    process.arg(ALLOW_UNIX_SOCKETS_ARG);
                }
                // Without the proxy the command still gets a network of its own: none at all.
                match proxy {
                    Ok(proxy) => {
                        process.arg(super::netns::PROXY_ARG).arg(proxy);
                    }
                    Err(why) => tracing::warn!("confined commands get no network: {why}"),
                }
                let writable = writable_paths(root, extra);
                for path in &writable {
                    process.arg("--write").arg(path);
                }
                for path in settings.hidden_paths() {
                    process.arg("--hide").arg(path);
                }
                for path in &settings.allowed_reads {
                    process.arg(super::reads::READ_ARG).arg(path);
                }
                let own = protected.command_places(&writable);
                for path in &own.dirs {
                    process.arg(super::supervisor::OWN_DIR_ARG).arg(path);
                }
                for path in &own.files {
                    process.arg(super::supervisor::OWN_FILE_ARG).arg(path);
                }
            }
            process.args(["--", SHELL, "-c", command]);
            process
        }
        None if confine => return Err(SandboxError::NoLauncher),
        None => {
            let mut process = tokio::process::Command::new(SHELL);
            process.arg("-c").arg(command);
            process
        }
    };
    settings.remove_secrets(&mut process);
    Ok((process, settings.launcher.is_some()))
}

/// Confine this process (the supervisor, before it starts the shell): it reads files
/// everywhere but in `hidden` and `/dev` (see `reads.rs`) and in `allowed`, lists every
/// directory, and writes only in `writable`. Fails unless the kernel enforces the rules: a
/// command that was to be confined never runs unconfined.
pub fn confine_self(
    writable: &[PathBuf],
    hidden: &[PathBuf],
    allowed: &[PathBuf],
) -> Result<(), SandboxError> {
    available()?;
    let readable = super::reads::readable_roots(hidden, writable, allowed)?;
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_VERSION))
        // No signal to a process outside the domain (the supervisor, Splice, your other
        // processes); kernels before Landlock ABI 6 (Linux 6.12) lack it and skip it.
        .and_then(|r| r.scope(Scope::Signal))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::ReadDir)))
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                &readable,
                AccessFs::from_read(ABI_VERSION),
            ))
        })
        .and_then(|r| {
            r.add_rules(path_beneath_rules(
                writable,
                AccessFs::from_all(ABI_VERSION),
            ))
        })
        .and_then(|r| r.restrict_self())
        .map_err(|error| SandboxError::Confine(error.to_string()))?;
    // Partly enforced means rights newer than the kernel's ABI (at least 3, checked above) are
    // missing: writes, removals and truncation are still governed.
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(SandboxError::NotEnforced),
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => drop_capabilities(),
    }
}

/// Give up every capability: effective, permitted, inheritable, ambient and (when it may) the
/// bounding set, with `no_new_privs`, so no later `exec` (a set-user-ID or file-capability
/// program, or root's own) gets any back. Landlock leaves root's in force, and with them a
/// process run as root reads any process's environment and memory: Splice's own (its provider
/// keys, though it is not dumpable) and the shell's that started it. Without them root is an
/// ordinary user to those checks (and, under Landlock, its ptrace rule applies). A user without
/// capabilities has nothing to drop.
pub fn drop_capabilities() -> Result<(), SandboxError> {
    use rustix::thread::{
        CapabilitySet, CapabilitySets, capabilities, capability_is_in_bounding_set,
        clear_ambient_capability_set, remove_capability_from_bounding_set, set_capabilities,
        set_no_new_privs,
    };
    let none = || CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    set_no_new_privs(true).map_err(SandboxError::NoNewPrivs)?;
    let held = capabilities(None).map_err(SandboxError::ReadCapabilities)?;
    if held == none() {
        return Ok(());
    }
    // Emptying the bounding set takes CAP_SETPCAP, so it comes first; without it,
    // `no_new_privs` alone keeps an `exec` from raising what is permitted.
    if held.effective.contains(CapabilitySet::SETPCAP) {
        // Every capability the kernel knows, including those newer than this code: reading
        // one past the last fails.
        for bit in 0..64 {
            let capability = CapabilitySet::from_bits_retain(1 << bit);
            match capability_is_in_bounding_set(capability) {
                Ok(true) => remove_capability_from_bounding_set(capability)
                    .map_err(SandboxError::BoundingSet)?,
                Ok(false) => {}
                Err(_) => break,
            }
        }
    }
    clear_ambient_capability_set()
        .and_then(|()| set_capabilities(None, none()))
        .map_err(SandboxError::DropCapabilities)?;
    match capabilities(None) {
        Ok(left) if left == none() => Ok(()),
        _ => Err(SandboxError::CapabilitiesRemain),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_file_in_the_root_widens_nothing() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("wt");
        std::fs::create_dir_all(&root).expect("create root");
        // A command in the run could write this file: it must not open up `/`.
        std::fs::write(root.join(".git"), "gitdir: /x/y\n").expect("write .git");
        let paths = writable_paths(&root, &[]);
        assert!(paths.contains(&root));
        assert!(
            !paths
                .iter()
                .any(|p| p == Path::new("/") || p.starts_with("/x"))
        );
        let vouched = writable_paths(&root, &[PathBuf::from("/repo/.git")]);
        assert!(vouched.contains(&PathBuf::from("/repo/.git")));
    }

    /// The errors read as the strings they replaced.
    #[test]
    fn sandbox_errors_keep_their_words() {
        assert_eq!(
            SandboxError::TurnedOff.to_string(),
            "the sandbox is unavailable (SPLICE_TEST_NO_LANDLOCK is set)"
        );
        assert_eq!(
            SandboxError::NoLauncher.to_string(),
            "the sandbox is unavailable: no launcher"
        );
        assert_eq!(
            SandboxError::NoNewPrivs(rustix::io::Errno::PERM).to_string(),
            format!("cannot set no_new_privs: {}", rustix::io::Errno::PERM)
        );
    }

    #[test]
    fn without_a_launcher_the_shell_runs_directly_and_nothing_is_confined() {
        let settings = Settings::new(|_| false);
        let protected = Protected::default();
        let shell = |confine| {
            shell_command(
                &settings,
                &protected,
                Err("none"),
                Path::new("/"),
                &[],
                "true",
                confine,
            )
        };
        let (command, supervised) = shell(false).expect("shell command");
        assert!(!supervised);
        assert_eq!(command.as_std().get_program(), SHELL);
        assert!(shell(true).is_err());
    }
}
