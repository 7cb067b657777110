//! `splice [PROMPT]` without a subcommand: the terminal UI when stdout is a terminal, else a
//! headless run exactly as `splice exec --output-format stream-json` would make.

use std::io::Write;

use super::usage::usage_error_stream;
use super::{Error, Io, confine_as_configured};
use crate::cli::{Cli, ExecArgs, InputFormat, OutputFormat};
use crate::exit::Exit;
use crate::tui::{Reopen, TuiOptions};

pub async fn run(cli: &Cli, io: Io) -> Result<Exit, Error> {
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
    super::exec::run(&exec, io).await
}

/// The terminal UI: settings resolved as for a headless run, theme from the flag or config.
async fn tui(cli: &Cli, mut io: Io) -> Result<Exit, Error> {
    let settings = match cli.run.resolve(None) {
        Ok(settings) => settings,
        Err(failure) => {
            let _ = writeln!(io.err, "splice: {}", failure.message);
            return Ok(failure.exit_code);
        }
    };
    let config = confine_as_configured(&cli.run.pass_env, &cli.run.allow);
    crate::permissions::network::ask_about_blocked_hosts();
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
    Ok(crate::tui::run(options).await?)
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
    let message = match crate::tui::find(reopen.as_ref(), &settings.layout, &settings.cwd) {
        Err(error) => error.to_string(),
        Ok(_) => "--resume and --continue reopen a session in the terminal UI, and stdout is \
                      not a terminal (`splice exec` runs a request headless)"
            .to_string(),
    };
    let _ = writeln!(io.err, "splice: {message}");
    usage_error_stream(&cli.run, message, io);
    Exit::Usage
}
