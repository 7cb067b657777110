//! The small launcher binary: the package tool launcher (`splice __pkg-launch`) and the command
//! supervisor (`splice __sandbox-exec`), without the rest of Splice (it uses the sandbox crate
//! only), so each tool call's two launcher stages and each command's supervisor start in a
//! fraction of the time the whole `splice` binary takes to load. Splice uses it when it sits
//! beside the `splice` binary (as `cargo install` puts it), and starts itself in its place
//! otherwise.

use std::ffi::OsString;
use std::process::ExitCode;

use splice_sandbox::launch::{self, LAUNCH_ARG};
use splice_sandbox::{sandbox, supervisor};

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // Called exactly as `splice` would be, so either binary serves.
    match args.split_first() {
        Some((first, rest)) if first == sandbox::SANDBOX_ARG => {
            let code = supervisor::main(rest);
            ExitCode::from(u8::try_from(code).unwrap_or(supervisor::CANNOT_RUN as u8))
        }
        Some((first, rest)) if first == LAUNCH_ARG => {
            ExitCode::from(u8::try_from(launch::main(rest)).unwrap_or(1))
        }
        _ => ExitCode::from(u8::try_from(launch::main(&args)).unwrap_or(1)),
    }
}
