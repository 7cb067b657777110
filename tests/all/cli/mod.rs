//! The command line: flags, closed-list values, `--help` and the config file.

mod config;
mod flags;
