//! Who may do what: permission modes, rules, command risk, and the sandbox for commands nobody
//! approved (the mechanism is `splice_sandbox`; what it keeps and allows is decided here).

pub(crate) use splice_sandbox::seccomp;
pub mod network;
pub(crate) mod own;
pub(crate) mod pinned;
pub(crate) mod policy;
pub(crate) mod risk;
pub mod sandbox;
pub(crate) mod shell;
pub use splice_sandbox::supervisor;

pub use pinned::Pinned;
pub use policy::{Effect, Origin, PermissionMode, Policy, Rule, Verdict};

/// What confined commands and package tools may not read (`splice_sandbox::reads`), with the
/// paths the person lets them read from this process's settings.
pub(crate) mod reads {
    pub(crate) use super::sandbox::{allowed_reads, hidden_paths, set_allowed_reads};
    pub(crate) use splice_sandbox::reads::{READ_ARG, expand};
}

/// Starting a program Splice talks to but does not confine (`splice_sandbox::helper`), under
/// this process's launcher.
pub(crate) mod helper {
    use std::ffi::{OsStr, OsString};
    use std::path::Path;

    pub(crate) use splice_sandbox::helper::Helper;

    /// `program args` with exactly `env`, under the supervisor when there is a launcher.
    pub(crate) fn helper(
        program: &OsStr,
        args: &[impl AsRef<OsStr>],
        env: &[(OsString, OsString)],
        cwd: &Path,
    ) -> std::io::Result<Helper> {
        splice_sandbox::helper::helper(super::sandbox::launcher(), program, args, env, cwd)
    }
}

pub use shell::quote_word;
