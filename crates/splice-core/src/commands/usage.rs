//! Usage errors found before a command runs: clap's message on stderr, and for a reader of
//! stream-json a well-formed stream of its own.

use super::Io;
use super::exec::output_sink;
use crate::bus::Bus;
use crate::cli::{OutputFormat, ParseFailure, RunArgs, args_request_stream_json};
use crate::exit::Exit;
use crate::ids::{new_run_id, new_session_id};
use crate::protocol::{ErrorCode, Event};

/// The subcommands, whose own output is not stream-json unless their flags ask for it.
const SUBCOMMANDS: [&str; 10] = [
    "exec", "restore", "worktree", "pkg", "login", "logout", "publish", "registry", "scribiz",
    "mcp",
];

/// Bad flags (or `--help`, `--version`): clap's message, and for a stream-json consumer a
/// well-formed stream.
pub fn parse_failure(raw: &[String], error: &ParseFailure, io: Io) -> Exit {
    error.print();
    if error.is_help() {
        return Exit::Success;
    }
    let wants_json = args_request_stream_json(raw)
        || (!io.out_is_terminal
            && !raw
                .iter()
                .skip(1)
                .any(|a| SUBCOMMANDS.contains(&a.as_str())));
    if wants_json {
        usage_error_stream(
            &start_args(raw),
            format!("{} (see splice --help)", error.message()),
            io,
        );
    }
    Exit::Usage
}

/// A usage error as a well-formed stream-json stream of its own, for a reader of stdout.
pub fn usage_error_stream(args: &RunArgs, message: String, io: Io) {
    let bus = Bus::new(
        new_run_id(),
        vec![output_sink(OutputFormat::StreamJson, io)],
    );
    bus.emit(args.fallback_start(&new_session_id()));
    bus.emit(Event::error(ErrorCode::UsageError, message));
    bus.emit(Event::run_end(Exit::Usage));
}

/// The flags `run_start` reports, read from arguments clap refused (a bad `--tier` next to a
/// good `--provider`), so the stream starts as it would have for a usage error found later.
fn start_args(raw: &[String]) -> RunArgs {
    let flag = |name: &str| {
        let spaced = raw
            .windows(2)
            .rev()
            .find(|w| w[0] == name)
            .map(|w| w[1].clone());
        let joined = raw
            .iter()
            .rev()
            .find_map(|a| a.strip_prefix(name)?.strip_prefix('=').map(str::to_string));
        joined.or(spaced)
    };
    RunArgs {
        provider: flag("--provider").and_then(|p| crate::provider::ProviderKind::parse(&p)),
        model: flag("--model"),
        cwd: flag("--cwd").map(std::path::PathBuf::from),
        ..RunArgs::default()
    }
}
