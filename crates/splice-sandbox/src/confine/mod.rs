//! File access confined to a working root, below every feature that reads or writes the tree:
//! the tools, checkpoints, project instructions, MCP project config and package permissions.

pub mod beneath;
pub mod change;
