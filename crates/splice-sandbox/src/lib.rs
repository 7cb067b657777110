//! The sandbox for what Splice runs on nobody's approval, and the file access below every tool:
//! opening files beneath a working root (`confine`), Landlock, seccomp, the network and mount
//! namespaces and the credential masks, the supervisor every command runs under, the package
//! tools' launcher, process groups, and the proxy that is confined commands' only network.
//!
//! It is the mechanism only. What it keeps from the commands and tools it confines (Splice's own
//! places, what approved hooks run: [`places::Protected`]), how it starts them and what the
//! person loosened ([`sandbox::Settings`]), and which hosts they may reach ([`net_proxy::Gate`])
//! come in as values from the core; the sandbox holds no policy in a static.

pub mod capture;
pub mod confine;
pub mod descriptors;
pub mod helper;
pub mod hidden;
pub mod launch;
pub mod mask;
pub mod net_proxy;
pub mod netns;
pub mod places;
pub mod process_group;
pub mod process_log;
pub mod reads;
pub mod sandbox;
pub mod seccomp;
pub mod supervisor;
