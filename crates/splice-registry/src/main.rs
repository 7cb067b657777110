//! The package registry server as a binary of its own, so `splice` links none of its crates
//! (axum, sqlx with SQLite's C code, the PostgreSQL driver, object_store, argon2).
//! `splice registry ARGS` parses ARGS and becomes `splice-registry ARGS` from beside `splice`
//! (see `splice_core::registry::launch`), so either is the same command.

use std::process::ExitCode;

use splice_core::exit::Exit;
use splice_registry::cli::ServerCli;

fn main() -> ExitCode {
    // As `splice` itself: no other process of the user reads its environment (database URL,
    // object-store keys) through /proc or a debugger.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let cli = ServerCli::from_env();
    // Its requests and failures on stderr (`SPLICE_LOG` picks what), as servers do.
    splice_core::logging::init_stderr();
    // The server answers many clients at once: worker threads.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("splice registry: cannot start the async runtime: {error}");
            return Exit::Failed.process();
        }
    };
    let code = runtime.block_on(splice_registry::command::run(&cli.registry));
    // A blocking task stuck in a system call must not keep the process alive after the server
    // stopped.
    runtime.shutdown_background();
    code.process()
}
