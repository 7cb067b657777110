//! Integration tests: one binary (one link of the dependency tree) with a module per area.

mod support;

mod binaries;
mod checkpoints;
mod cli;
mod git;
mod headless;
mod mcp;
mod packages;
mod permissions;
mod pipeline;
mod providers;
mod registry;
mod sandbox;
mod scribiz;
mod session;
mod tools;
mod tui;
