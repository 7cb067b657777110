//! The sandbox for commands Splice runs on its own authority (`auto` mode, and the analyzers and
//! test command a pipeline stage chooses): Linux Landlock lets them read everywhere but write
//! only inside the working root, the temporary directories, `/dev` and the build tools' caches.
//!
//! Landlock confines the calling process and its children, so a confined command is started
//! through Splice itself: `splice __sandbox-exec --write DIR… -- sh -c COMMAND` confines that
//! process and then `exec`s the shell. No `unsafe` `pre_exec` hook is needed.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    path_beneath_rules,
};

/// The hidden first argument of the confining launcher.
pub const SANDBOX_ARG: &str = "__sandbox-exec";
/// The newest Landlock ABI this code was written and tested against.
const ABI_VERSION: ABI = ABI::V5;

static LAUNCHER: OnceLock<PathBuf> = OnceLock::new();

/// Record the executable that can confine commands (the `splice` binary itself). Without it,
/// as when the library is embedded elsewhere, commands run unconfined.
pub fn set_launcher(path: PathBuf) {
    let _ = LAUNCHER.set(path);
}

/// Where a confined command in `root` may write, with `extra` places the run vouches for (a
/// worktree's git directory, which Splice knows from its own records).
pub fn writable_paths(root: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths = vec![
        root.to_path_buf(),
        PathBuf::from("/tmp"),
        std::env::temp_dir(),
        PathBuf::from("/dev"),
    ];
    // Build tools keep caches and locks in the home directory.
    paths.extend(dirs::cache_dir());
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".cargo")));
    paths.extend(cargo_home);
    paths.extend(dirs::home_dir().map(|h| h.join(".npm")));
    paths.extend(extra.iter().cloned());
    paths.sort();
    paths.dedup();
    paths
}

/// `sh -c command` in `root`, confined when a launcher is known; the flag says which.
pub fn shell_command(
    root: &Path,
    extra: &[PathBuf],
    command: &str,
    confine: bool,
) -> (tokio::process::Command, bool) {
    match LAUNCHER.get().filter(|_| confine) {
        Some(launcher) => {
            let mut process = tokio::process::Command::new(launcher);
            process.arg(SANDBOX_ARG);
            for path in writable_paths(root, extra) {
                process.arg("--write").arg(path);
            }
            process.args(["--", "sh", "-c", command]);
            (process, true)
        }
        None => {
            let mut process = tokio::process::Command::new("sh");
            process.arg("-c").arg(command);
            (process, false)
        }
    }
}

/// The `__sandbox-exec` entry point: confine this process, then replace it with the command.
/// Returns only on failure, with the exit code to use (126, as a shell does for "cannot run").
pub fn exec_confined(args: &[OsString]) -> i32 {
    let mut writable = Vec::new();
    let mut rest = args.iter();
    let mut program: Vec<OsString> = Vec::new();
    while let Some(arg) = rest.next() {
        if arg == "--write" {
            writable.extend(rest.next().map(PathBuf::from));
        } else if arg == "--" {
            program = rest.by_ref().cloned().collect();
        }
    }
    let Some((first, others)) = program.split_first() else {
        eprintln!("splice sandbox: no command given");
        return 126;
    };
    match confine(&writable) {
        Ok(RulesetStatus::NotEnforced) => {
            eprintln!(
                "splice: Landlock is not available on this kernel; the command runs unconfined"
            );
        }
        Ok(_) => {}
        Err(error) => {
            eprintln!("splice sandbox: cannot confine the command: {error}");
            return 126;
        }
    }
    let error = std::process::Command::new(first).args(others).exec();
    eprintln!(
        "splice sandbox: cannot run {}: {error}",
        first.to_string_lossy()
    );
    126
}

fn confine(writable: &[PathBuf]) -> Result<RulesetStatus, landlock::RulesetError> {
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_VERSION))?
        .create()?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_VERSION)))?
        .add_rules(path_beneath_rules(
            writable,
            AccessFs::from_all(ABI_VERSION),
        ))?
        .restrict_self()?;
    Ok(status.ruleset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_file_in_the_root_widens_nothing() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("wt");
        std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        // A command in the run could write this file: it must not open up `/`.
        std::fs::write(root.join(".git"), "gitdir: /x/y\n").unwrap_or_else(|e| panic!("{e}"));
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

    #[test]
    fn without_a_launcher_the_shell_runs_directly() {
        let (command, confined) = shell_command(Path::new("/"), &[], "true", true);
        assert!(!confined);
        assert_eq!(command.as_std().get_program(), "sh");
    }
}
