//! Splice: a terminal coding agent. The library holds the core; `main.rs` is the binary edge.

pub mod bus;
pub mod checkpoint;
pub mod headless;
pub mod permissions;
pub mod protocol;
pub mod provider;
pub mod tools;
