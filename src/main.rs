//! The binary edge: parse arguments, pick the front end (TUI or headless) and exit with the
//! run's exit code.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use splice::bus::{Bus, Sink};
use splice::cli::{
    Cli, Command, ExecArgs, InputFormat, OutputFormat, PkgAction, RestoreArgs, RunArgs,
    ScribizAction, WorktreeAction, WorktreeArgs, args_request_stream_json,
};
use splice::exit;
use splice::headless::stream_json::StreamJsonSink;
use splice::headless::text::TextSink;
use splice::ids::{new_run_id, new_session_id};
use splice::permissions::{sandbox, supervisor};
use splice::protocol::input::{Prompt, parse_input};
use splice::protocol::{ErrorCode, Event, WarningCode};
use splice::registry_client;
use splice::run::RunFailure;
use splice::sanitize::redact::Redactor;
use splice::session::{Frontend, Input, Op, Session};
use splice::tui::{Reopen, TuiOptions};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The command supervisor (confined or not) runs the command and ends what it leaves:
    // no runtime, no parsing.
    if args.get(1).is_some_and(|a| a == sandbox::SANDBOX_ARG) {
        let code = supervisor::main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(supervisor::CANNOT_RUN as u8));
    }
    // A package tool's launcher: leaves the network, then becomes Node.
    if args
        .get(1)
        .is_some_and(|a| a == splice::packages::runtime::LAUNCH_ARG)
    {
        let code = splice::packages::runtime::launcher_main(&args[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // Commands run as the same user: without this, one could read the provider keys that
    // their own environment lacks from /proc/<splice>/environ (or attach a debugger).
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    // Commands start through the small launcher binary beside `splice` when it is there (it
    // loads in a fraction of the time), else through `splice` itself.
    if let Ok(exe) = std::env::current_exe() {
        sandbox::set_launcher(splice::packages::runtime::launcher_beside(&exe));
    }
    // Before any command of a run could put another `git` first on PATH.
    splice::git::pin_program();
    let raw: Vec<String> = std::env::args().collect();
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(error) => return exit::process_code(parse_failure(&raw, error)),
    };
    // The registry server is a binary of its own: become it, the arguments checked above.
    if matches!(cli.command, Some(Command::Registry(_))) {
        return exit::process_code(registry_server(&args));
    }
    let stdout_is_tty = std::io::stdout().is_terminal();
    // The TUI's run is a task of its own beside the loop that reads keys and draws, so what
    // it blocks on (git, file planning, checkpoints) never holds that loop up: worker threads.
    // A headless run has only its interrupt to keep prompt, which its blocking work does not
    // hold up either (git is an async process, the rest runs on the blocking pool or completes
    // first by design), so it skips starting them.
    let tui = cli.command.is_none() && stdout_is_tty;
    splice::logging::init(!tui);
    let mut builder = if tui {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let code = match builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
    {
        Ok(runtime) => {
            let code = runtime.block_on(real_main(cli, stdout_is_tty));
            // Dropping the runtime would wait for blocking tasks; one stuck in a system call
            // (a read that never returns) must not keep the process alive after `run_end`.
            runtime.shutdown_background();
            code
        }
        Err(error) => {
            eprintln!("splice: {error:#}");
            exit::FAILED
        }
    };
    splice::logging::exit(code);
    exit::process_code(code)
}

/// `splice registry ARGS`: exec `splice-registry ARGS` from beside this binary; returns only
/// when that fails (not installed: how to install it).
fn registry_server(args: &[std::ffi::OsString]) -> i32 {
    // Clap refuses top-level flags beside a subcommand: `registry` is the first argument.
    let at = args.iter().position(|a| a == "registry").unwrap_or(1);
    let rest = args.get(at + 1..).unwrap_or_default();
    let error = match std::env::current_exe() {
        Ok(splice) => splice::registry::launch::exec_server(&splice, rest),
        Err(source) => splice::registry::launch::LaunchError::Exec {
            path: splice::registry::launch::SERVER_BIN.to_string(),
            source,
        },
    };
    eprintln!("splice registry: {error}");
    exit::FAILED
}

async fn real_main(cli: Cli, stdout_is_tty: bool) -> i32 {
    match cli.command {
        Some(Command::Exec(exec)) => headless(&exec).await,
        Some(Command::Restore(args)) => restore(&args, stdout_is_tty),
        Some(Command::Worktree(args)) => worktree(&args),
        Some(Command::Pkg(args)) => pkg(&args.action).await,
        Some(Command::Login(args)) => {
            let (out, err) = (&mut std::io::stdout().lock(), &mut std::io::stderr().lock());
            let registry = args.registry.registry.as_deref();
            registry_client::command::login(registry, args.default, args.json, out, err).await
        }
        Some(Command::Logout(args)) => {
            let (out, err) = (&mut std::io::stdout().lock(), &mut std::io::stderr().lock());
            registry_client::command::logout(args.registry.as_deref(), out, err).await
        }
        Some(Command::Publish(args)) => {
            let (out, err) = (&mut std::io::stdout().lock(), &mut std::io::stderr().lock());
            registry_client::command::publish(
                &args.dir,
                args.registry.registry.as_deref(),
                args.dry_run,
                args.json,
                out,
                err,
            )
            .await
        }
        // Handled before the runtime starts.
        Some(Command::Registry(_)) => exit::FAILED,
        Some(Command::Scribiz(args)) => match args.action {
            ScribizAction::Login { json } => {
                let (out, err) = (&mut std::io::stdout().lock(), &mut std::io::stderr().lock());
                let env = splice::scribiz::launch::own_env();
                splice::scribiz::command::login(env, json, out, err, shutdown_signal()).await
            }
        },
        Some(Command::Mcp(args)) => {
            let (out, err) = (&mut std::io::stdout().lock(), &mut std::io::stderr().lock());
            splice::mcp::command::run(&args.action, out, err).await
        }
        None if stdout_is_tty => tui(&cli).await,
        None if cli.tui.resume.is_some() || cli.tui.continue_session => {
            reopen_without_terminal(&cli)
        }
        None => {
            // Not a terminal: behave exactly as `splice exec --output-format stream-json`.
            let exec = ExecArgs {
                run: cli.run.clone(),
                input_format: InputFormat::Text,
                output_format: OutputFormat::StreamJson,
                prompt: cli.prompt.clone(),
            };
            headless(&exec).await
        }
    }
}

/// The terminal UI: settings resolved as for a headless run, theme from the flag or config.
async fn tui(cli: &Cli) -> i32 {
    let settings = match cli.run.resolve(None) {
        Ok(settings) => settings,
        Err(failure) => {
            eprintln!("splice: {}", failure.message);
            return failure.exit_code;
        }
    };
    let config = confine_as_configured(&cli.run.pass_env);
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
    match splice::tui::run(options).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("splice: {error}");
            exit::USAGE
        }
    }
}

/// `--resume`/`--continue` belong to the TUI: without a terminal they are refused (an unknown
/// id with this directory's sessions listed), never dropped in favour of a fresh headless run
/// of the words that follow them.
fn reopen_without_terminal(cli: &Cli) -> i32 {
    let settings = match cli.run.resolve(None) {
        Ok(settings) => settings,
        Err(failure) => {
            eprintln!("splice: {}", failure.message);
            return failure.exit_code;
        }
    };
    let (reopen, _) = Reopen::choose(
        cli.tui.resume.as_deref(),
        cli.tui.continue_session,
        cli.prompt.clone(),
    );
    let message = match splice::tui::find(reopen.as_ref(), &settings.data_dir, &settings.cwd) {
        Err(error) => error.to_string(),
        Ok(_) => "--resume and --continue reopen a session in the terminal UI, and stdout is not \
                  a terminal (`splice exec` runs a request headless)"
            .to_string(),
    };
    eprintln!("splice: {message}");
    usage_error_stream(&cli.run, message);
    exit::USAGE
}

/// A usage error as a well-formed stream-json stream of its own, for a reader of stdout.
fn usage_error_stream(args: &RunArgs, message: String) {
    let bus = Bus::new(new_run_id(), vec![output_sink(OutputFormat::StreamJson)]);
    bus.emit(args.fallback_start(&new_session_id()));
    bus.emit(Event::error(ErrorCode::UsageError, message));
    bus.emit(Event::run_end(exit::USAGE));
}

/// Bad flags: clap's message on stderr, and for a stream-json consumer a well-formed stream.
fn parse_failure(raw: &[String], error: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = error.print();
        return exit::SUCCESS;
    }
    let _ = error.print();
    let wants_json = args_request_stream_json(raw)
        || (!std::io::stdout().is_terminal()
            && !raw.iter().skip(1).any(|a| {
                [
                    "exec", "restore", "worktree", "pkg", "login", "logout", "publish", "registry",
                    "scribiz", "mcp",
                ]
                .contains(&a.as_str())
            }));
    if wants_json {
        usage_error_stream(
            &start_args(raw),
            format!("{} (see splice --help)", clap_message(&error)),
        );
    }
    exit::USAGE
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
        provider: flag("--provider").and_then(|p| splice::provider::ProviderKind::parse(&p)),
        model: flag("--model"),
        cwd: flag("--cwd").map(std::path::PathBuf::from),
        ..RunArgs::default()
    }
}

fn output_sink(format: OutputFormat) -> Arc<dyn Sink> {
    output_sink_watched(format, Arc::new(Notify::new()), false)
}

/// The output sink; `gone` is signalled when the reader closes stdout. `name_run`: text output
/// ends with the run's id (a run's, which `splice restore` takes).
fn output_sink_watched(format: OutputFormat, gone: Arc<Notify>, name_run: bool) -> Arc<dyn Sink> {
    let redactor = Redactor::from_env();
    match format {
        OutputFormat::StreamJson => {
            Arc::new(StreamJsonSink::new(std::io::stdout(), redactor).notify_when_reader_gone(gone))
        }
        OutputFormat::Text => {
            let sink = TextSink::new(std::io::stdout(), std::io::stderr(), redactor)
                .notify_when_reader_gone(gone);
            Arc::new(if name_run {
                sink.naming_the_run()
            } else {
                sink
            })
        }
    }
}

/// Clap's message without its `error:` label and the usage block: the part up to the first
/// blank line, on one line (`the following required arguments were not provided: --worktree`).
fn clap_message(error: &clap::Error) -> String {
    let rendered = error.to_string();
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    if message.is_empty() {
        "invalid arguments".to_string()
    } else {
        message.to_string()
    }
}

async fn headless(exec: &ExecArgs) -> i32 {
    let run_args = &exec.run;
    let reader_gone = Arc::new(Notify::new());
    let bus_sinks = vec![output_sink_watched(
        exec.output_format,
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
            return failure.exit_code;
        }
    };
    confine_as_configured(&run_args.pass_env);
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
        code = &mut ended => return code,
        () = shutdown_signal() => {}
        () = reader_gone.notified() => {}
    }
    handle.submit(Op::Interrupt);
    drop(handle);
    ended.await
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

async fn read_stdin() -> Result<String, RunFailure> {
    String::from_utf8(read_stdin_bytes().await?)
        .map_err(|_| RunFailure::usage("standard input is not UTF-8"))
}

/// Completes on SIGINT, SIGTERM or SIGHUP.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = hup.recv() => {}
        _ = int.recv() => {}
    }
}

fn worktree(args: &WorktreeArgs) -> i32 {
    use splice::worktree::Action;
    let (action, run_id) = match &args.action {
        WorktreeAction::List => (Action::List, None),
        WorktreeAction::Recover { run_id } => (Action::Recover, run_id.as_deref()),
        WorktreeAction::Clean { run_id } => (Action::Clean, run_id.as_deref()),
    };
    let data_dir = splice::config::data_dir();
    splice::worktree::command(
        &data_dir,
        action,
        run_id,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
}

/// The config file for what confined commands and package tools may reach; one that cannot be
/// read allows nothing extra (resolving the run's settings reports why).
fn load_config() -> splice::config::ConfigFile {
    splice::config::ConfigFile::load_user().unwrap_or_default()
}

/// Read the config file once for a run's confinement: the Unix-socket switch, and the
/// secret-named variables commands may see (the file's `passEnv` and the `--pass-env` flags).
/// Returns the config for the caller's other settings.
fn confine_as_configured(pass_env: &[String]) -> splice::config::ConfigFile {
    let config = load_config();
    sandbox::set_unix_sockets_allowed(config.sandbox.allow_all_unix_sockets);
    let mut names = config.pass_env.clone();
    names.extend(pass_env.iter().cloned());
    sandbox::set_passed_env(names);
    config
}

async fn pkg(action: &PkgAction) -> i32 {
    use splice::config;
    use splice::packages::{command, store_command};
    if let PkgAction::Run {
        package,
        tool,
        input,
        json,
        cwd,
        pass_env,
    } = action
    {
        // As for commands: the config file's `passEnv` and the flags.
        confine_as_configured(pass_env);
        let input = match input.as_deref() {
            Some("-") => match read_stdin().await {
                Ok(text) => Some(text),
                Err(failure) => {
                    eprintln!("splice: {}", failure.message);
                    return exit::USAGE;
                }
            },
            other => other.map(str::to_string),
        };
        let args = splice::packages::run::RunArgs {
            package,
            tool,
            input,
            json: *json,
            cwd: cwd.as_deref(),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = splice::packages::run::run(args, &mut out, &mut err).await;
        use std::io::Write;
        let _ = std::io::stdout().lock().write_all(&out);
        let _ = std::io::stderr().lock().write_all(&err);
        return code;
    }
    if let PkgAction::Test { dir } = action {
        sandbox::set_unix_sockets_allowed(load_config().sandbox.allow_all_unix_sockets);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = splice::packages::testing::test(dir, &mut out, &mut err).await;
        use std::io::Write;
        let _ = std::io::stdout().lock().write_all(&out);
        let _ = std::io::stderr().lock().write_all(&err);
        return code;
    }
    let (out, err) = (&mut std::io::stdout().lock(), &mut std::io::stderr().lock());
    let data_dir = config::data_dir();
    match action {
        PkgAction::Install {
            source,
            registry,
            force,
            json,
        } if !source.exists()
            && source
                .to_str()
                .is_some_and(registry_client::install::looks_like_spec) =>
        {
            let text = source.to_str().unwrap_or_default();
            let flag = registry.registry.as_deref();
            registry_client::command::install(&data_dir, text, flag, *force, *json, out, err).await
        }
        PkgAction::Info {
            spec,
            registry,
            json,
        } => {
            registry_client::command::info(spec, registry.registry.as_deref(), *json, out, err)
                .await
        }
        PkgAction::Search {
            text,
            registry,
            json,
        } => {
            registry_client::command::search(text, registry.registry.as_deref(), *json, out, err)
                .await
        }
        PkgAction::Yank { spec, registry } => {
            registry_client::command::yank(spec, registry.registry.as_deref(), out, err).await
        }
        PkgAction::Validate { dir, json } => command::validate(dir, *json, out, err),
        PkgAction::Pack {
            dir,
            out: file,
            json,
        } => command::pack(dir, file.as_deref(), *json, out, err),
        PkgAction::New {
            dir,
            namespace,
            name,
        } => command::new(dir, namespace, name.as_deref(), out, err),
        PkgAction::Install {
            source,
            force,
            json,
            ..
        } => store_command::install(&data_dir, source, *force, *json, out, err),
        PkgAction::List { json } => store_command::list(&config::data_dir(), *json, out),
        PkgAction::Remove { spec, json } => {
            store_command::remove(&config::data_dir(), spec, *json, out, err)
        }
        PkgAction::Run { .. } | PkgAction::Test { .. } => exit::USAGE,
    }
}

/// A run id of the right shape, and a `--to` that names one of its checkpoints.
fn check_restore_args(data_dir: &std::path::Path, args: &RestoreArgs) -> Result<(), String> {
    if !splice::ids::is_run_id(&args.run_id) {
        return Err(format!(
            "`{}` is not a run id (run ids look like run_20261129_abc123)",
            args.run_id
        ));
    }
    if args.to == 0 {
        return Err("--to counts checkpoints from 1 (1: before the run)".into());
    }
    // An unknown run is reported by the restore itself.
    let Ok(highest) = splice::checkpoint::highest_sequence(data_dir, &args.run_id) else {
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

fn restore(args: &RestoreArgs, stdout_is_tty: bool) -> i32 {
    let format = args.output_format.unwrap_or(if stdout_is_tty {
        OutputFormat::Text
    } else {
        OutputFormat::StreamJson
    });
    // The stream is about the run being restored, so its lines carry that run's id; it starts
    // and ends like every stream-json stream.
    let bus = Bus::new(args.run_id.clone(), vec![output_sink(format)]);
    bus.emit(RunArgs::default().fallback_start(&new_session_id()));
    let data_dir = splice::config::data_dir();
    if let Err(message) = check_restore_args(&data_dir, args) {
        bus.emit(Event::error(ErrorCode::UsageError, message));
        bus.emit(Event::run_end(exit::USAGE));
        return exit::USAGE;
    }
    let code = match splice::checkpoint::restore(&data_dir, &args.run_id, args.to, args.force) {
        // Already restored (or never written): the files are as the run found them. Said, and
        // a success, so a script that restores twice does not stop there.
        Ok(reports) if reports.is_empty() => {
            bus.emit(Event::text(format!(
                "nothing to restore: run {} has no checkpoints left (already restored, or it changed no files)\n",
                args.run_id
            )));
            exit::SUCCESS
        }
        Ok(reports) => {
            let skipped = reports.iter().any(|r| !r.skipped.is_empty());
            let escaped: Vec<String> = reports.iter().flat_map(|r| r.escaped.clone()).collect();
            let changed: Vec<String> = reports
                .iter()
                .flat_map(|r| r.skipped.iter().filter(|f| !r.escaped.contains(f)).cloned())
                .collect();
            for report in reports {
                bus.emit(Event::Restore { checkpoint: report });
            }
            if skipped {
                let mut why = Vec::new();
                if !escaped.is_empty() {
                    why.push(format!(
                        "{} now lead(s) outside the working root or into .git (a link was swapped in, or the file has other hard links) and were left alone, even with --force",
                        escaped.join(", ")
                    ));
                }
                if !changed.is_empty() {
                    why.push(format!(
                        "{} changed after Splice wrote them and were left alone; use --force to restore them too",
                        changed.join(", ")
                    ));
                }
                bus.emit(Event::warning(WarningCode::RestoreSkipped, why.join("; ")));
                exit::FAILED
            } else {
                exit::SUCCESS
            }
        }
        Err(error) => {
            let code = match error {
                splice::checkpoint::CheckpointError::UnknownRun(_) => exit::USAGE,
                _ => exit::FAILED,
            };
            bus.emit(Event::error(ErrorCode::RestoreFailed, error.to_string()));
            code
        }
    };
    bus.emit(Event::run_end(code));
    code
}
