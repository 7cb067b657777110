//! The TUI in a pseudo-terminal (tmux): approvals, the permission prompt, `/compact`, `/login`,
//! `/mcp` and interrupts.

mod compact;
mod daily_use;
mod login;
mod mcp;
mod network_prompt;
mod permission_prompt;
mod scribiz_login;
mod slash_approval;
mod tool_interrupt;
mod write_approval;
