//! `splice registry ARGS`: become `splice-registry ARGS` from beside this binary (the server
//! is a binary of its own, so `splice` links none of its crates).

use std::ffi::OsString;
use std::io::Write;

use super::{Error, Io};
use crate::exit::Exit;
use crate::registry::launch::{self, LaunchError};

/// Exec the server with the arguments after `registry` (the raw ones: clap checked them);
/// returns only when that fails (not installed: how to install it).
pub fn run(args: &[OsString], mut io: Io) -> Result<Exit, Error> {
    // Clap refuses top-level flags beside a subcommand: `registry` is the first argument.
    let at = args.iter().position(|a| a == "registry").unwrap_or(1);
    let rest = args.get(at + 1..).unwrap_or_default();
    let error = match std::env::current_exe() {
        Ok(splice) => launch::exec_server(&splice, rest),
        Err(source) => LaunchError::Exec {
            path: launch::SERVER_BIN.to_string(),
            source,
        },
    };
    let _ = writeln!(io.err, "splice registry: {error}");
    Ok(Exit::Failed)
}
