//! `splice publish DIR [--dry-run] [--json]`: validate, pack and upload a package.

use super::{Error, Io};
use crate::cli::PublishArgs;
use crate::exit::Exit;

pub async fn run(args: &PublishArgs, mut io: Io) -> Result<Exit, Error> {
    Ok(crate::registry_client::command::publish(
        &args.dir,
        args.registry.registry.as_deref(),
        args.dry_run,
        args.json,
        &mut *io.out,
        &mut *io.err,
    )
    .await)
}
