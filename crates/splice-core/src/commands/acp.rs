//! `splice acp`: Splice as an Agent Client Protocol agent over stdin/stdout (src/acp/).

use std::io::Write;

use super::{Error, Io, confine_as_configured};
use crate::cli::AcpArgs;
use crate::exit::Exit;

/// Flags that cannot work are refused on stderr before any protocol (exit 2); then the agent
/// serves until the editor closes its input.
pub async fn run(args: &AcpArgs, mut io: Io) -> Result<Exit, Error> {
    if let Err(failure) = args.run.resolve(None) {
        let _ = writeln!(io.err, "splice: {}", failure.message);
        return Ok(failure.exit_code);
    }
    confine_as_configured(&args.run.pass_env, &args.run.allow);
    Ok(crate::acp::serve(args.run.clone()).await)
}
