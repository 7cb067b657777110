//! The package registry server (`splice registry serve`), its index (SQLite or PostgreSQL
//! through sqlx), its content-addressed archive store, accounts, tokens and the device-code
//! login. The client side lives elsewhere; both follow the HTTP contract in the README.

pub mod accounts;
pub mod command;
pub mod db;
pub mod device;
pub mod error;
pub mod html;
pub mod publish;
pub mod s3;
pub mod server;
pub mod storage;
pub mod throttle;
pub mod time;

/// Archives larger than this are refused with 413 before they are read whole.
pub const MAX_UPLOAD: usize = 64 * 1024 * 1024;
