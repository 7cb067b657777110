//! Who may do what: permission modes, rules, command risk, and the sandbox for commands nobody
//! approved.

pub(crate) mod descriptors;
pub(crate) mod helper;
pub(crate) mod hidden;
pub(crate) mod mask;
pub(crate) mod netns;
pub mod network;
pub(crate) mod own;
pub(crate) mod pinned;
pub(crate) mod policy;
pub(crate) mod reads;
pub(crate) mod risk;
pub mod sandbox;
pub(crate) mod seccomp;
pub(crate) mod shell;
pub mod supervisor;

pub use pinned::Pinned;
pub use policy::{Effect, Origin, PermissionMode, Policy, Rule, Verdict};
pub use shell::quote_word;
