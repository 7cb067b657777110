//! `splice logout [--registry URL]`: revoke the token at the registry, remove the saved login.

use super::{Error, Io};
use crate::cli::RegistryFlag;
use crate::exit::Exit;

pub async fn run(args: &RegistryFlag, mut io: Io) -> Result<Exit, Error> {
    Ok(crate::registry_client::command::logout(
        args.registry.as_deref(),
        &mut *io.out,
        &mut *io.err,
    )
    .await)
}
