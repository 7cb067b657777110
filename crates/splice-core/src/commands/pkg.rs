//! `splice pkg new|validate|pack|test|run|install|list|remove|info|search|yank`.

use std::io::Write;

use super::exec::read_stdin;
use super::{Error, Io, confine_as_configured};
use crate::cli::{PkgAction, PkgArgs};
use crate::exit::Exit;
use crate::packages::{command, store_command};
use crate::permissions::sandbox;
use crate::registry_client;

pub async fn run(args: &PkgArgs, mut io: Io) -> Result<Exit, Error> {
    let action = &args.action;
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
        confine_as_configured(pass_env, &[]);
        let input = match input.as_deref() {
            Some("-") => match read_stdin().await {
                Ok(text) => Some(text),
                Err(failure) => {
                    let _ = writeln!(io.err, "splice: {}", failure.message);
                    return Ok(Exit::Usage);
                }
            },
            other => other.map(str::to_string),
        };
        let args = crate::packages::run::RunArgs {
            package,
            tool,
            input,
            json: *json,
            cwd: cwd.as_deref(),
        };
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = crate::packages::run::run(args, &mut out, &mut err).await;
        write_buffered(&mut io, &out, &err);
        return Ok(exit);
    }
    if let PkgAction::Test { dir } = action {
        let config = crate::settings::load_config().unwrap_or_default();
        sandbox::set_unix_sockets_allowed(config.sandbox.allow_all_unix_sockets);
        super::allow_reads_as_configured(&config);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = crate::packages::testing::test(dir, &mut out, &mut err).await;
        write_buffered(&mut io, &out, &err);
        return Ok(exit);
    }
    let (out, err) = (&mut *io.out, &mut *io.err);
    let layout = crate::layout::Layout::process();
    let exit = match action {
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
            registry_client::command::install(layout, text, flag, *force, *json, out, err).await
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
        } => store_command::install(layout, source, *force, *json, out, err),
        PkgAction::List { json } => store_command::list(layout, *json, out),
        PkgAction::Remove { spec, json } => store_command::remove(layout, spec, *json, out, err),
        PkgAction::Run { .. } | PkgAction::Test { .. } => Exit::Usage,
    };
    Ok(exit)
}

/// Write what a command buffered (a package tool's run, `pkg test`), each stream in one piece.
fn write_buffered(io: &mut Io, out: &[u8], err: &[u8]) {
    let _ = io.out.write_all(out);
    let _ = io.out.flush();
    let _ = io.err.write_all(err);
}
