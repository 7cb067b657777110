//! The `splice` package: the binaries' edge. The core lives in `crates/splice-core` and the
//! terminal UI in `crates/splice-tui`; this library re-exports them under the paths the
//! binaries, tests and benches use, and starts the front end (`splice [PROMPT]`).

pub mod frontend;

pub use splice_core::*;

pub mod commands_acp;
pub use splice_tui as tui;
