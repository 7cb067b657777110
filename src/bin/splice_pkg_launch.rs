//! The package tool launcher as a binary of its own: the same code as `splice __pkg-launch`,
//! without the rest of Splice, so each tool call's two launcher stages start in a fraction of
//! the time the whole `splice` binary takes to load. Splice uses it when it sits beside the
//! `splice` binary (as `cargo install` puts it), and starts itself as the launcher otherwise.

use std::ffi::OsString;
use std::process::ExitCode;

use splice::packages::runtime::{LAUNCH_ARG, launcher_main};

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // Called exactly as `splice` would be, so either binary serves as the launcher.
    let args = match args.split_first() {
        Some((first, rest)) if first == LAUNCH_ARG => rest,
        _ => &args[..],
    };
    ExitCode::from(u8::try_from(launcher_main(args)).unwrap_or(1))
}
