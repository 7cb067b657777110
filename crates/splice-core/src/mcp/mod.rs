//! MCP servers as tools: the `mcpServers` config (the user's and a project's `.mcp.json`),
//! the client connections (stdio children and streamable HTTP, through `rmcp`), and the hub a
//! run's tool calls go through.
//!
//! Tools are named `mcp__<server>__<tool>` on the wire, in events and in permission rules.

pub mod approval;
mod client;
pub(crate) mod config;
mod connect;
pub mod content;
pub(crate) mod hub;
mod listing;
pub(crate) mod run;
mod secrets;
mod stdio;
mod supervise;
pub(crate) mod tool;

pub use config::{
    McpConfigError, PROJECT_FILE, ServerConfig, ServerEntry, Source, load_project, valid_name,
};
pub use hub::{
    CallError, HubNotice, HubOptions, McpHub, McpOutput, Progress, ServerState, ServerStatus,
};
pub use stdio::DEFAULT_PASSTHROUGH;
pub use tool::{Annotations, McpTool};
