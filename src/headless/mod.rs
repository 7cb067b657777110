//! Headless front ends: the stream-json writer and the text printer.

pub mod rechunk;
pub mod redact;
pub mod stream_json;
pub mod text;
