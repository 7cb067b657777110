//! Headless front ends: the stream-json writer and the text printer.

pub mod stream_json;
pub mod text;

use std::io::Write;
use std::sync::Arc;

use tokio::sync::Notify;

/// Write and flush one piece of output. A closed pipe must not crash the run; when the reader
/// went away, `gone` (if any) is told, so the run can stop instead of working for nobody.
pub(crate) fn write_or_notice(out: &mut impl Write, bytes: &[u8], gone: Option<&Arc<Notify>>) {
    let written = out.write_all(bytes).and_then(|()| out.flush());
    if let (Err(error), Some(gone)) = (written, gone)
        && error.kind() == std::io::ErrorKind::BrokenPipe
    {
        gone.notify_one();
    }
}
