//! The contract with every consumer of Splice: output events, stream-json input, stage markers,
//! codes, exit codes, the final-result documents, tool identities, ids and the redaction every
//! sink applies. No I/O and no async here, and no other crate of Splice's: every other crate
//! builds on this one.

pub mod codes;
pub mod events;
pub mod exit;
pub mod ids;
pub mod input;
pub mod marker;
pub mod rechunk;
pub mod redact;
pub mod result;
pub mod stage;
pub mod terminal;
pub mod tier;
pub mod tool;

pub use codes::{ErrorCode, WarningCode};
pub use events::{Event, PermissionAction, SideEffect, ToolStatus, WarningDetail};
pub use tier::Tier;
pub use tool::{Builtin, ToolIdentity};
