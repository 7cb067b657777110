//! The pipeline: stages, iterations, how it stops, and the panel drawn from its markers.

pub mod code_writer;
mod jobs;
mod panel;
mod runs;
mod stops;
mod tiers;
