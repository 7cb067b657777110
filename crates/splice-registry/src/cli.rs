//! `splice-registry ARGS`: the server binary's own command line. Its subcommands and flags
//! are `splice registry`'s (`splice_core::cli::registry`), which the client parses too (its
//! `--help` and usage errors) before it becomes this binary.

use clap::Parser;
use splice_core::cli::registry::RegistryArgs;

#[derive(Debug, Parser)]
#[command(
    name = "splice-registry",
    version,
    about = "The Splice package registry: serve it, add users, approve or deny device logins \
             (also `splice registry`)."
)]
pub struct ServerCli {
    #[command(flatten)]
    pub registry: RegistryArgs,
}

impl ServerCli {
    /// The process's arguments; clap prints help or a usage error and exits on its own.
    pub fn from_env() -> ServerCli {
        ServerCli::parse()
    }
}
