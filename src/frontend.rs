//! `splice [PROMPT]` without a subcommand: the terminal UI when stdout is a terminal, else a
//! headless run exactly as `splice exec --output-format stream-json` would make.

use std::io::Write;

use splice_core::cli::{Cli, ExecArgs, InputFormat, OutputFormat};
use splice_core::commands::usage::usage_error_stream;
use splice_core::commands::{self, Io, confine_as_configured};
use splice_core::exit::Exit;
use splice_tui::{Reopen, TuiError, TuiOptions};
use thiserror::Error;

/// A failure the process could not report itself; `main` prints it on stderr.
#[derive(Debug, Error)]
pub enum Failure {
    #[error(transparent)]
    Command(#[from] commands::Error),
    /// The terminal UI could not start, or failed.
    #[error(transparent)]
    Tui(#[from] TuiError),
}

impl Failure {
    /// How the process exits after it.
    pub fn exit(&self) -> Exit {
        match self {
            Failure::Command(error) => error.exit(),
            Failure::Tui(_) => Exit::Usage,
        }
    }
}

pub async fn run(cli: &Cli, io: Io) -> Result<Exit, Failure> {
    if io.out_is_terminal {
        return tui(cli, io).await;
    }
    if cli.tui.resume.is_some() || cli.tui.continue_session {
        return Ok(reopen_without_terminal(cli, io));
    }
    // Not a terminal: behave exactly as `splice exec --output-format stream-json`.
    let exec = ExecArgs {
        run: cli.run.clone(),
        input_format: InputFormat::Text,
        output_format: OutputFormat::StreamJson,
        prompt: cli.prompt.clone(),
    };
    Ok(commands::exec::run(&exec, io).await?)
}

/// The terminal UI: settings resolved as for a headless run, theme from the flag or config.
async fn tui(cli: &Cli, mut io: Io) -> Result<Exit, Failure> {
    let settings = match cli.run.resolve(None) {
        Ok(settings) => settings,
        Err(failure) => {
            let _ = writeln!(io.err, "splice: {}", failure.message);
            return Ok(failure.exit_code);
        }
    };
    let config = confine_as_configured(&cli.run.pass_env, &cli.run.allow);
    splice_core::permissions::network::ask_about_blocked_hosts();
    let theme = cli.tui.theme.clone().or(config.theme);
    let (reopen, words) = Reopen::choose(
        cli.tui.resume.as_deref(),
        cli.tui.continue_session,
        cli.prompt.clone(),
    );
    let prompt = words.join(" ");
    let options = TuiOptions {
        settings,
        theme,
        prompt: (!prompt.trim().is_empty()).then_some(prompt),
        reopen,
    };
    Ok(splice_tui::run(options).await?)
}

/// `--resume`/`--continue` belong to the TUI: without a terminal they are refused (an unknown
/// id with this directory's sessions listed), never dropped in favour of a fresh headless run
/// of the words that follow them.
fn reopen_without_terminal(cli: &Cli, mut io: Io) -> Exit {
    let settings = match cli.run.resolve(None) {
        Ok(settings) => settings,
        Err(failure) => {
            let _ = writeln!(io.err, "splice: {}", failure.message);
            return failure.exit_code;
        }
    };
    let (reopen, _) = Reopen::choose(
        cli.tui.resume.as_deref(),
        cli.tui.continue_session,
        cli.prompt.clone(),
    );
    let message = match splice_tui::find(reopen.as_ref(), &settings.layout, &settings.cwd) {
        Err(error) => error.to_string(),
        Ok(_) => "--resume and --continue reopen a session in the terminal UI, and stdout is \
                      not a terminal (`splice exec` runs a request headless)"
            .to_string(),
    };
    let _ = writeln!(io.err, "splice: {message}");
    usage_error_stream(&cli.run, message, io);
    Exit::Usage
}
