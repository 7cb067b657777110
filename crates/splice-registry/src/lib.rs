//! The package registry server (`splice-registry serve`, also `splice registry serve`): its
//! index (SQLite or PostgreSQL through sqlx), its content-addressed archive store (a directory
//! or S3-compatible object storage), accounts, tokens and the device-code login. A crate of its
//! own so that `splice` links none of these crates; it shares the HTTP API's types, the command
//! line and package validation with the client (docs/registry.md).

pub(crate) mod accounts;
pub mod cli;
pub mod command;
pub mod db;
pub(crate) mod device;
pub(crate) mod error;
pub(crate) mod html;
pub(crate) mod publish;
pub(crate) mod s3;
pub(crate) mod server;
pub(crate) mod storage;
pub(crate) mod throttle;
pub(crate) mod time;
pub(crate) mod trace;

/// Archives larger than this are refused with 413 before they are read whole.
pub(crate) const MAX_UPLOAD: usize = 64 * 1024 * 1024;
