//! `splice acp`: Splice as an Agent Client Protocol agent over stdin/stdout
//! (crates/splice-acp). The edge turns the flags into each session's settings; the front end
//! knows only the core's.

use std::io::Write;

use splice_core::cli::AcpArgs;
use splice_core::commands::{Error, Io, confine_as_configured};
use splice_core::exit::Exit;

/// Flags that cannot work are refused on stderr before any protocol (exit 2); then the agent
/// serves until the editor closes its input.
pub async fn run(args: &AcpArgs, mut io: Io) -> Result<Exit, Error> {
    if let Err(failure) = args.run.resolve(None) {
        let _ = writeln!(io.err, "splice: {}", failure.message);
        return Ok(failure.exit_code);
    }
    confine_as_configured(&args.run.pass_env, &args.run.allow);
    let run = args.run.clone();
    // A session's settings are the flags' in the client's working directory.
    let settle: splice_acp::Settle = Box::new(move |cwd, load| {
        let mut args = run.clone();
        if let Some(cwd) = cwd {
            args.cwd = Some(cwd.to_path_buf());
        }
        args.resolve(load)
            .map_err(|failure| splice_acp::SettingsError(failure.message))
    });
    Ok(splice_acp::serve(settle).await)
}
