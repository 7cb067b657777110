//! Skill packages: the format, installing and using them, the runtime, and what a hostile package
//! cannot do.

mod format;
mod model;
mod runtime;
mod secrets_and_escapes;
