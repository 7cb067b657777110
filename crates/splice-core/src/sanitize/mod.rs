//! What every sink does to text before it leaves the process: redaction of secrets, the
//! re-chunking of streamed deltas that keeps a secret from straddling two events, and (for a
//! terminal) the removal of escape sequences. The headless writers, the TUI and its session
//! log all use these; none of them owns them.

pub use splice_protocol::{rechunk, redact, terminal};
