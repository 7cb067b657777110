//! How `splice registry …` reaches the server: `splice` parses the arguments (so its `--help`
//! and usage errors are as documented) and then becomes `splice-registry`, installed beside it,
//! with the arguments after `registry`. An exec, not a child: the process keeps its id, so
//! SIGTERM and SIGINT reach the server itself (a graceful stop, exit 0), and its stdin, stdout
//! and exit code are the server's own.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

/// The server's binary, installed beside `splice`.
pub const SERVER_BIN: &str = "splice-registry";
/// The command that installs it (the `splice-registry` crate), from Splice's source directory.
pub const INSTALL_COMMAND: &str = "cargo install --locked --path crates/splice-registry";

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(
        "the registry server is not installed: there is no `{SERVER_BIN}` in {dir}; install it \
         from Splice's source directory with `{INSTALL_COMMAND}`"
    )]
    Missing { dir: String },
    #[error("cannot start the registry server {path}: {source}")]
    Exec {
        path: String,
        source: std::io::Error,
    },
}

/// The server binary beside `splice`.
pub fn server_beside(splice: &Path) -> PathBuf {
    splice.with_file_name(SERVER_BIN)
}

/// Become the server beside `splice` with `args` (those after `registry`). Returns only when
/// that failed.
pub fn exec_server(splice: &Path, args: &[OsString]) -> LaunchError {
    let server = server_beside(splice);
    if !server.is_file() {
        let dir = splice.parent().unwrap_or(Path::new("/"));
        return LaunchError::Missing {
            dir: dir.display().to_string(),
        };
    }
    let source = std::process::Command::new(&server).args(args).exec();
    LaunchError::Exec {
        path: server.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_server_says_where_it_was_looked_for_and_how_to_install_it() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let splice = dir.path().join("splice");
        let error = exec_server(&splice, &[]);
        assert!(matches!(error, LaunchError::Missing { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.contains(&dir.path().display().to_string()),
            "{message}"
        );
        assert!(message.contains(INSTALL_COMMAND), "{message}");
    }
}
