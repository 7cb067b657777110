//! `splice login [--registry URL] [--default] [--json]`: a device-code login to a registry.

use super::{Error, Io};
use crate::cli::LoginArgs;
use crate::exit::Exit;

pub async fn run(args: &LoginArgs, mut io: Io) -> Result<Exit, Error> {
    let registry = args.registry.registry.as_deref();
    Ok(crate::registry_client::command::login(
        registry,
        args.default,
        args.json,
        &mut *io.out,
        &mut *io.err,
    )
    .await)
}
