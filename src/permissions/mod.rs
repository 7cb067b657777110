//! Who may do what: permission modes, rules, command risk, and the sandbox for commands nobody
//! approved.

pub mod descriptors;
pub mod helper;
pub mod hidden;
pub mod mask;
pub mod own;
pub mod policy;
pub mod risk;
pub mod sandbox;
pub mod seccomp;
pub mod shell;
pub mod supervisor;

pub use policy::{Effect, Origin, PermissionMode, Policy, Rule, Verdict};
