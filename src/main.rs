//! The binary edge: parse arguments, dispatch to the subcommand (`splice::commands`) and exit
//! with its exit code.

use std::process::ExitCode;

use anyhow::Context;

use splice::cli::{Cli, Command};
use splice::commands::{self, Io};
use splice::exit::Exit;
use splice::frontend::Failure;
use splice::permissions::{sandbox, supervisor};

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The command supervisor (confined or not) runs the command and ends what it leaves:
    // no runtime, no parsing. Its status is the command's own, not one Splice chooses.
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
    let io = Io::std();
    let cli = match Cli::parse_args(&raw) {
        Ok(cli) => cli,
        Err(failure) => return commands::usage::parse_failure(&raw, &failure, io).process(),
    };
    // The registry server is a binary of its own: become it, the arguments checked above.
    if matches!(cli.command, Some(Command::Registry(_))) {
        return finish(commands::registry::run(&args, io).map_err(Failure::from));
    }
    // The TUI's run is a task of its own beside the loop that reads keys and draws, so what
    // it blocks on (git, file planning, checkpoints) never holds that loop up: worker threads.
    // A headless run has only its interrupt to keep prompt, which its blocking work does not
    // hold up either (git is an async process, the rest runs on the blocking pool or completes
    // first by design), so it skips starting them.
    let tui = cli.command.is_none() && io.out_is_terminal;
    splice::logging::init(!tui);
    // An ACP agent serves several sessions at once, each with its own turns.
    let acp = matches!(cli.command, Some(Command::Acp(_)));
    let mut builder = if tui || acp {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    match builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
    {
        Ok(runtime) => {
            let done = runtime.block_on(dispatch(cli, io));
            // Dropping the runtime would wait for blocking tasks; one stuck in a system call
            // (a read that never returns) must not keep the process alive after `run_end`.
            runtime.shutdown_background();
            finish(done)
        }
        Err(error) => {
            eprintln!("splice: {error:#}");
            Exit::Failed.process()
        }
    }
}

/// The subcommand's module runs it.
async fn dispatch(cli: Cli, io: Io) -> Result<Exit, Failure> {
    let done = match &cli.command {
        Some(Command::Exec(exec)) => commands::exec::run(exec, io).await,
        Some(Command::Restore(args)) => commands::restore::run(args, io),
        Some(Command::Worktree(args)) => commands::worktree::run(args, io),
        Some(Command::Pkg(args)) => commands::pkg::run(args, io).await,
        Some(Command::Login(args)) => commands::login::run(args, io).await,
        Some(Command::Logout(args)) => commands::logout::run(args, io).await,
        Some(Command::Publish(args)) => commands::publish::run(args, io).await,
        // Handled before the runtime starts.
        Some(Command::Registry(_)) => Ok(Exit::Failed),
        Some(Command::Scribiz(args)) => commands::scribiz::run(args, io).await,
        Some(Command::Mcp(args)) => commands::mcp::run(args, io).await,
        Some(Command::Acp(args)) => splice::commands_acp::run(args, io).await,
        None => return splice::frontend::run(&cli, io).await,
    };
    Ok(done?)
}

/// The process's exit: the command's, or after an error it could not report, that error's.
fn finish(done: Result<Exit, Failure>) -> ExitCode {
    let exit = match done {
        Ok(exit) => exit,
        Err(error) => {
            eprintln!("splice: {error}");
            tracing::error!(target: "splice", error = %error, "failed");
            error.exit()
        }
    };
    splice::logging::exit(exit.code());
    exit.process()
}
