//! `splice restore RUN_ID [--to N] [--force]`: put back the files a run changed, from its
//! checkpoints, reported as a stream about that run.

use super::exec::output_sink;
use super::{Error, Io};
use crate::bus::Bus;
use crate::checkpoint::{self, CheckpointError};
use crate::cli::{OutputFormat, RestoreArgs, RunArgs};
use crate::exit::Exit;
use crate::ids::new_session_id;
use crate::layout::Layout;
use crate::protocol::{ErrorCode, Event, WarningCode};

pub fn run(args: &RestoreArgs, io: Io) -> Result<Exit, Error> {
    let format = args.output_format.unwrap_or(if io.out_is_terminal {
        OutputFormat::Text
    } else {
        OutputFormat::StreamJson
    });
    // The stream is about the run being restored, so its lines carry that run's id; it starts
    // and ends like every stream-json stream.
    let bus = Bus::new(args.run_id.clone(), vec![output_sink(format, io)]);
    bus.emit(RunArgs::default().fallback_start(&new_session_id()));
    let layout = Layout::process();
    if let Err(message) = check_args(layout, args) {
        bus.emit(Event::error(ErrorCode::UsageError, message));
        bus.emit(Event::run_end(Exit::Usage));
        return Ok(Exit::Usage);
    }
    let exit = match checkpoint::restore(layout, &args.run_id, args.to, args.force) {
        // Already restored (or never written): the files are as the run found them. Said, and
        // a success, so a script that restores twice does not stop there.
        Ok(reports) if reports.is_empty() => {
            bus.emit(Event::text(format!(
                "nothing to restore: run {} has no checkpoints left (already restored, or it changed no files)\n",
                args.run_id
            )));
            Exit::Success
        }
        Ok(reports) => {
            let left_alone = checkpoint::left_alone(&reports);
            for report in reports {
                bus.emit(Event::Restore { checkpoint: report });
            }
            match left_alone {
                Some(why) => {
                    bus.emit(Event::warning(WarningCode::RestoreSkipped, why));
                    Exit::Failed
                }
                None => Exit::Success,
            }
        }
        Err(error) => {
            let exit = match error {
                CheckpointError::UnknownRun(_) => Exit::Usage,
                _ => Exit::Failed,
            };
            bus.emit(Event::error(ErrorCode::RestoreFailed, error.to_string()));
            exit
        }
    };
    bus.emit(Event::run_end(exit));
    Ok(exit)
}

/// A run id of the right shape, and a `--to` that names one of its checkpoints.
fn check_args(layout: &Layout, args: &RestoreArgs) -> Result<(), String> {
    if !crate::ids::is_run_id(&args.run_id) {
        return Err(format!(
            "`{}` is not a run id (run ids look like run_20261129_abc123)",
            args.run_id
        ));
    }
    if args.to == 0 {
        return Err("--to counts checkpoints from 1 (1: before the run)".into());
    }
    // An unknown run is reported by the restore itself.
    let Ok(highest) = checkpoint::highest_sequence(layout, &args.run_id) else {
        return Ok(());
    };
    let highest = highest.unwrap_or(1);
    if args.to > highest {
        return Err(format!(
            "--to {}: run {} has no checkpoint past {highest}",
            args.to, args.run_id
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(run_id: &str, to: u32) -> RestoreArgs {
        RestoreArgs {
            run_id: run_id.into(),
            to,
            force: false,
            output_format: None,
        }
    }

    /// Lines of stream-json output, as JSON.
    fn lines(out: &str) -> Vec<serde_json::Value> {
        out.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    #[test]
    fn a_bad_run_id_is_a_usage_error_in_a_whole_stream_on_its_io() {
        let (io, captured) = Io::captured();
        let exit = run(&args("not-a-run", 1), io).expect("run");
        assert_eq!(exit, Exit::Usage);
        let lines = lines(&captured.out());
        let types: Vec<&str> = lines.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(types, ["run_start", "error", "run_end"]);
        assert_eq!(lines[1]["code"], "usage_error");
        assert_eq!(lines[2]["exitCode"], 2);
        assert_eq!(lines[2]["runId"], "not-a-run");
        assert!(captured.err().is_empty());
    }
}
