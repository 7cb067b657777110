//! Splice as a host of the Scribiz CLI (docs/scribiz.md): the protocol's lines,
//! where the CLI is and what environment it gets, one owned job per run (a typed stream of
//! lines, a cancel, media requests answered by the host), the device-code login as events, and
//! `splice scribiz login`.

pub(crate) mod command;
pub mod error;
pub mod job;
pub mod launch;
pub mod login;
pub mod media;
pub(crate) mod progress;
pub mod protocol;

pub use error::{Failure, FailureKind, ScribizError};
pub use job::{Canceller, Ended, Job, JobOptions, Outcome};
pub use launch::{Env, Limits};
pub use media::{HostMedia, MediaFailure, NoHostMedia};
