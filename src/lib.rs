//! The `splice` package: the binaries' edge. The core lives in `crates/splice-core`; this
//! library re-exports it under the paths the binaries, tests and benches use.

pub use splice_core::*;

pub mod commands_acp;
