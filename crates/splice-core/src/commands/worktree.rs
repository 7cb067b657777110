//! `splice worktree list|recover|clean`: the worktrees that `--worktree` runs left behind.

use super::{Error, Io};
use crate::cli::{WorktreeAction, WorktreeArgs};
use crate::exit::Exit;
use crate::worktree::Action;

pub fn run(args: &WorktreeArgs, mut io: Io) -> Result<Exit, Error> {
    let (action, run_id) = match &args.action {
        WorktreeAction::List => (Action::List, None),
        WorktreeAction::Recover { run_id } => (Action::Recover, run_id.as_deref()),
        WorktreeAction::Clean { run_id } => (Action::Clean, run_id.as_deref()),
    };
    Ok(crate::worktree::command(
        crate::layout::Layout::process(),
        action,
        run_id,
        &mut *io.out,
        &mut *io.err,
    ))
}
