//! `splice exec [PROMPT]` (and `splice` when stdout is not a terminal): one headless run of a
//! core session, its events written as text or stream-json.

use std::io::IsTerminal;
use std::sync::Arc;

use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use super::{Error, Io, confine_as_configured, shutdown_signal};
use crate::bus::{Bus, Sink};
use crate::cli::{ExecArgs, InputFormat, OutputFormat};
use crate::exit::Exit;
use crate::headless::stream_json::StreamJsonSink;
use crate::headless::text::TextSink;
use crate::ids::{new_run_id, new_session_id};
use crate::protocol::Event;
use crate::protocol::input::{Prompt, parse_input};
use crate::run::RunFailure;
use crate::sanitize::redact::Redactor;
use crate::session::{Frontend, Input, Op, Session};

/// The headless run: settings resolved, the prompt read, one turn of a session, its exit.
pub async fn run(exec: &ExecArgs, io: Io) -> Result<Exit, Error> {
    let run_args = &exec.run;
    let reader_gone = Arc::new(Notify::new());
    let bus_sinks = vec![output_sink_watched(
        exec.output_format,
        io,
        reader_gone.clone(),
        true,
    )];
    let bus = Bus::new(new_run_id(), bus_sinks.clone());
    let settings = match run_args.resolve(None) {
        Ok(settings) => settings,
        Err(failure) => {
            bus.emit(run_args.fallback_start(&new_session_id()));
            bus.emit(Event::error(failure.code, failure.message));
            bus.emit(Event::run_end(failure.exit_code));
            return Ok(failure.exit_code);
        }
    };
    confine_as_configured(&run_args.pass_env, &run_args.allow);
    // The bus above reports what fails before the session starts; the session's runs report
    // to the same output.
    let session = Session::spawn(settings, Frontend::headless(bus_sinks));
    session.submit(Op::UserTurn(Input::Reading(Box::pin(read_prompt(
        exec.clone(),
    )))));
    session.submit(Op::Shutdown);
    let handle = session.handle();
    let ended = session.ended();
    tokio::pin!(ended);
    // A reader that closed its end is an interrupt too: nobody would see the rest.
    tokio::select! {
        exit = &mut ended => return Ok(exit),
        () = shutdown_signal() => {}
        () = reader_gone.notified() => {}
    }
    handle.submit(Op::Interrupt);
    drop(handle);
    Ok(ended.await)
}

/// The output sink on `io`.
pub(crate) fn output_sink(format: OutputFormat, io: Io) -> Arc<dyn Sink> {
    output_sink_watched(format, io, Arc::new(Notify::new()), false)
}

/// The output sink; `gone` is signalled when the reader closes stdout. `name_run`: text output
/// ends with the run's id (a run's, which `splice restore` takes).
fn output_sink_watched(
    format: OutputFormat,
    io: Io,
    gone: Arc<Notify>,
    name_run: bool,
) -> Arc<dyn Sink> {
    let redactor = Redactor::from_env();
    match format {
        OutputFormat::StreamJson => {
            Arc::new(StreamJsonSink::new(io.out, redactor).notify_when_reader_gone(gone))
        }
        OutputFormat::Text => {
            let sink = TextSink::new(io.out, io.err, redactor).notify_when_reader_gone(gone);
            Arc::new(if name_run {
                sink.naming_the_run()
            } else {
                sink
            })
        }
    }
}

async fn read_prompt(exec: ExecArgs) -> Result<Prompt, RunFailure> {
    let from_args = exec.prompt.join(" ");
    match exec.input_format {
        InputFormat::StreamJson => {
            if !from_args.trim().is_empty() {
                return Err(RunFailure::usage(
                    "a prompt argument cannot be combined with --input-format stream-json",
                ));
            }
            let input = read_stdin_bytes().await?;
            parse_input(&input).map_err(|e| RunFailure::protocol(e.to_string()))
        }
        InputFormat::Text => {
            let text = if from_args.trim().is_empty() {
                if std::io::stdin().is_terminal() {
                    String::new()
                } else {
                    read_stdin().await?
                }
            } else {
                from_args
            };
            if text.trim().is_empty() {
                return Err(RunFailure::usage(
                    "no prompt: pass it as an argument or on standard input",
                ));
            }
            Ok(Prompt::from_text(text.trim()))
        }
    }
}

async fn read_stdin_bytes() -> Result<Vec<u8>, RunFailure> {
    let mut bytes = Vec::new();
    tokio::io::stdin()
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| RunFailure::usage(format!("cannot read standard input: {e}")))?;
    Ok(bytes)
}

/// Standard input, whole, as UTF-8.
pub(crate) async fn read_stdin() -> Result<String, RunFailure> {
    String::from_utf8(read_stdin_bytes().await?)
        .map_err(|_| RunFailure::usage("standard input is not UTF-8"))
}
