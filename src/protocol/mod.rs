//! The contract with every consumer of Splice: output events, stream-json input, stage markers
//! and the final-result documents. No I/O and no async here.

pub mod events;
pub mod input;
pub mod marker;
pub mod result;
pub mod tier;

pub use events::{Event, SideEffect, ToolStatus};
pub use tier::Tier;
