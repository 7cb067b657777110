//! Scribiz: Splice as a host of the Scribiz CLI and the `transcribe` tool.

mod host;
mod transcribe;
mod transcribe_race;
