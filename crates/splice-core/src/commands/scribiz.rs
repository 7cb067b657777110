//! `splice scribiz login [--json]`: the Scribiz CLI's device login, hosted.

use super::{Error, Io, shutdown_signal};
use crate::cli::{ScribizAction, ScribizArgs};
use crate::exit::Exit;

pub async fn run(args: &ScribizArgs, mut io: Io) -> Result<Exit, Error> {
    match args.action {
        ScribizAction::Login { json } => {
            let env = crate::scribiz::launch::own_env();
            Ok(crate::scribiz::command::login(
                env,
                json,
                &mut *io.out,
                &mut *io.err,
                shutdown_signal(),
            )
            .await)
        }
    }
}
