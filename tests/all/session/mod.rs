//! Sessions: operations on the core session, the conversation, `--resume`/`--continue` and project
//! instructions.

pub mod conversation;
mod instructions;
mod operations;
mod resume;
