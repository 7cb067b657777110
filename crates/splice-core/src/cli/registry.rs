//! `splice registry serve|user add|approve|deny`: the arguments, parsed by `splice` (its
//! `--help` and usage errors) before it becomes `splice-registry`, which parses them again as
//! its own (`splice_registry::cli::ServerCli`). Clap types only: the client links none of the
//! server's crates.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};

#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    #[command(subcommand)]
    pub action: RegistryAction,
}

#[derive(Debug, Clone, Args)]
pub struct Store {
    /// The registry's directory: the SQLite index (registry.db) and the archives (blobs/).
    #[arg(long)]
    pub data: PathBuf,
    /// The index's database instead of DATA/registry.db: a postgres://USER:PASSWORD@HOST/DB URL.
    #[arg(long, env = "SPLICE_REGISTRY_DATABASE")]
    pub database: Option<String>,
}

#[derive(Debug, Clone, Subcommand)]
pub enum RegistryAction {
    /// Serve the registry; the first line on stdout is its URL. SIGTERM or SIGINT stops it.
    Serve {
        #[command(flatten)]
        store: Store,
        /// HOST:PORT to listen on (port 0: a free port).
        #[arg(long, default_value = "127.0.0.1:7878")]
        addr: SocketAddr,
        /// Keep the archives in S3-compatible object storage, s3://BUCKET[/PREFIX], instead
        /// of DATA/blobs. Configured by the standard AWS environment: AWS_ACCESS_KEY_ID,
        /// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL (a non-AWS or local store) and
        /// AWS_ALLOW_HTTP=true (a plain-HTTP endpoint). The bucket must exist; it is checked
        /// at start.
        #[arg(
            long,
            env = "SPLICE_REGISTRY_BLOBS",
            value_name = "s3://BUCKET[/PREFIX]"
        )]
        blobs: Option<String>,
        /// Seconds a device login waits between polls.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(i64).range(1..=3600))]
        device_interval: i64,
        /// Seconds a device login's code stays valid.
        #[arg(long, default_value_t = 900, value_parser = clap::value_parser!(i64).range(1..=86400))]
        device_expiry: i64,
    },
    /// Accounts.
    User {
        #[command(subcommand)]
        action: UserAction,
    },
    /// Approve a pending device login as USER (from the server's shell).
    Approve {
        user_code: String,
        #[arg(long)]
        user: String,
        #[command(flatten)]
        store: Store,
    },
    /// Deny a pending device login.
    Deny {
        user_code: String,
        #[command(flatten)]
        store: Store,
    },
}

#[derive(Debug, Clone, Subcommand)]
pub enum UserAction {
    /// Add a user owning NAMESPACE (an existing user gains NAMESPACE; its password stays).
    /// Without a terminal and without --password-stdin, the user has no web password: its
    /// device logins are approved with `splice registry approve CODE --user NAME`.
    Add {
        name: String,
        #[arg(long)]
        namespace: String,
        /// Read the password from the first line of stdin (else it is prompted for on a
        /// terminal).
        #[arg(long, conflicts_with = "no_password")]
        password_stdin: bool,
        /// No web password (the sign-in page refuses the user): approve its logins with
        /// `splice registry approve`. The default without a terminal.
        #[arg(long)]
        no_password: bool,
        #[command(flatten)]
        store: Store,
    },
}
