//! Integration tests: one binary (one link of the dependency tree) with a module per feature.

// The whole crate is test code: `clippy.toml`'s allow-expect-in-tests covers `#[test]`
// functions only, and the helpers here fail the test the same way.
#![allow(clippy::expect_used)]

mod support;

mod acp;
mod binaries;
mod checkpoints;
mod cli;
mod git;
mod headless;
mod hooks;
mod logs;
mod mcp;
mod packages;
mod permissions;
mod pipeline;
mod providers;
mod registry;
mod sandbox;
mod scribiz;
mod session;
mod slash_commands;
mod subagents;
mod tools;
mod tui;
