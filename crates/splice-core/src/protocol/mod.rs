//! The contract with every consumer of Splice: output events, stream-json input, stage markers
//! and the final-result documents. No I/O and no async here.

pub(crate) mod codes;
pub mod events;
pub mod input;
pub mod marker;
pub(crate) mod result;
pub(crate) mod stage;
pub(crate) mod tier;
pub mod tool;

pub use codes::{ErrorCode, WarningCode};
pub use events::{Event, PermissionAction, SideEffect, ToolStatus, WarningDetail};
pub use tier::Tier;
pub use tool::{Builtin, ToolIdentity};
