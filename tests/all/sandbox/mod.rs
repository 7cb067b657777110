//! The sandbox around confined commands and package tools: Unix sockets, Splice's own directories,
//! saved logins, credential stores and keyrings, the environment, Landlock and the processes Splice starts.

mod credentials;
mod detached_processes;
mod environment;
mod landlock;
// Its test server serves the terminal UI's network prompt test too.
pub(crate) mod network;
mod own_dirs;
mod process_isolation;
mod saved_logins;
mod terminal;
mod unix_sockets;
