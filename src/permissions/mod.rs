//! Who may do what: permission modes, rules, and command risk.

pub mod policy;
pub mod risk;

pub use policy::{Effect, PermissionMode, Policy, Rule, Verdict};
