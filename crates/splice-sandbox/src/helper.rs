//! Starting a program Splice talks to but does not confine (an MCP stdio server, the Scribiz
//! CLI): under the supervisor, like commands, so it runs without capabilities (as root it could
//! otherwise read Splice's environment and memory, provider keys included) and nothing it
//! starts outlives it, even a process that left its group (`setsid`, a daemon). Without a
//! launcher (the library embedded elsewhere) it runs directly in a process group of its own.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::process_group::GroupGuard;
use crate::sandbox::SANDBOX_ARG;

/// A program ready to start, with only the environment it was given; the caller sets its
/// pipes and directory.
pub struct Helper {
    pub command: tokio::process::Command,
    supervised: bool,
}

impl Helper {
    /// The guard that ends the started child and all it started (see [`GroupGuard`]).
    pub fn guard(&self, child: &tokio::process::Child) -> GroupGuard {
        if self.supervised {
            GroupGuard::supervisor(child)
        } else {
            GroupGuard::of(child)
        }
    }
}

/// `program args` with exactly `env`, found as `exec` would find it (on the PATH of `env`, or
/// relative to `cwd`), so a missing program fails here with the system's error rather than
/// later in the supervisor (`launcher`, see `sandbox::Settings`).
pub fn helper(
    launcher: Option<&Path>,
    program: &OsStr,
    args: &[impl AsRef<OsStr>],
    env: &[(OsString, OsString)],
    cwd: &Path,
) -> std::io::Result<Helper> {
    let Some(launcher) = launcher else {
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .env_clear()
            .envs(env.iter().cloned())
            .process_group(0)
            .kill_on_drop(true);
        return Ok(Helper {
            command,
            supervised: false,
        });
    };
    let path = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| v);
    let found = find(program, path.map(OsString::as_os_str), cwd)?;
    let mut command = tokio::process::Command::new(launcher);
    command
        .arg(SANDBOX_ARG)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .args(["--no-caps", "--forward-term", "--"])
        .arg(found)
        .args(args)
        .env_clear()
        .envs(env.iter().cloned())
        // Never SIGKILL the supervisor: what it supervises would outlive it. Its guard asks.
        .kill_on_drop(false);
    Ok(Helper {
        command,
        supervised: true,
    })
}

/// The executable `program` names: a path (with a `/`) relative to `cwd`, else the first
/// executable file of that name in an absolute directory of `path`.
fn find(program: &OsStr, path: Option<&OsStr>, cwd: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &Path| {
        std::fs::metadata(candidate).and_then(|m| {
            if m.is_file() && m.permissions().mode() & 0o111 != 0 {
                Ok(())
            } else {
                Err(std::io::Error::from_raw_os_error(
                    rustix::io::Errno::ACCESS.raw_os_error(),
                ))
            }
        })
    };
    if program.as_encoded_bytes().contains(&b'/') {
        let candidate = cwd.join(program);
        executable(&candidate)?;
        return Ok(candidate);
    }
    std::env::split_paths(path.unwrap_or_default())
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate).is_ok())
        .ok_or_else(|| std::io::Error::from_raw_os_error(rustix::io::Errno::NOENT.raw_os_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_programs_as_exec_would() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let tool = dir.path().join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").expect("write tool");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755))
            .expect("set the permissions of tool");
        let path = std::env::join_paths(["relative", &dir.path().display().to_string()])
            .expect("join paths");
        let found = find(OsStr::new("tool"), Some(&path), Path::new("/"));
        assert_eq!(found.ok(), Some(tool.clone()));
        assert_eq!(
            find(OsStr::new("./tool"), None, dir.path()).ok(),
            Some(dir.path().join("./tool"))
        );
        let missing = find(OsStr::new("/nonexistent/server"), None, Path::new("/"));
        assert!(missing.is_err_and(|e| e.to_string().contains("No such file")));
        assert!(find(OsStr::new("tool"), None, dir.path()).is_err());
    }
}
