//! Splice: a terminal coding agent. The library holds the core; `main.rs` is the binary edge.

pub mod agent;
pub mod blocking;
pub mod bus;
pub mod checkpoint;
pub mod cli;
pub mod config;
pub mod conversation;
pub mod exit;
pub mod git;
pub mod headless;
pub mod ids;
pub mod instructions;
pub mod packages;
pub mod permissions;
pub mod pipeline;
pub mod protocol;
pub mod provider;
pub mod registry;
pub mod registry_client;
pub mod run;
pub mod sanitize;
pub mod settings;
pub mod tools;
pub mod tui;
pub mod usage;
pub mod worktree;
