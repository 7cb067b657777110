//! MCP servers as tools: the hub, headless runs with MCP tools, and hostile servers.

mod approved_files;
mod headless_run;
mod hostile_servers;
mod servers;
