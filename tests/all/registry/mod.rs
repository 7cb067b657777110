//! The package registry: the server, the client against it, S3 archive storage and version rules.

mod build_metadata;
pub mod client;
mod s3;
pub mod server;
