//! The package registry server (`splice registry serve`, run by the `splice-registry` binary),
//! its index (SQLite or PostgreSQL through sqlx), its content-addressed archive store, accounts,
//! tokens and the device-code login. Only `launch` and the API's types (`api`) are compiled
//! without the `registry-server` feature: `splice` parses the arguments (`cli::registry`) and
//! starts `splice-registry`, and the client (`registry_client`) speaks the HTTP API through the
//! same types as the server, as docs/registry.md describes.

pub mod api;
pub(crate) mod launch;

#[cfg(feature = "registry-server")]
pub(crate) mod accounts;
#[cfg(feature = "registry-server")]
pub mod command;
#[cfg(feature = "registry-server")]
pub mod db;
#[cfg(feature = "registry-server")]
pub(crate) mod device;
#[cfg(feature = "registry-server")]
pub(crate) mod error;
#[cfg(feature = "registry-server")]
pub(crate) mod html;
#[cfg(feature = "registry-server")]
pub(crate) mod publish;
#[cfg(feature = "registry-server")]
pub(crate) mod s3;
#[cfg(feature = "registry-server")]
pub(crate) mod server;
#[cfg(feature = "registry-server")]
pub(crate) mod storage;
#[cfg(feature = "registry-server")]
pub(crate) mod throttle;
#[cfg(feature = "registry-server")]
pub(crate) mod time;

/// Archives larger than this are refused with 413 before they are read whole.
#[cfg(feature = "registry-server")]
pub const MAX_UPLOAD: usize = 64 * 1024 * 1024;
