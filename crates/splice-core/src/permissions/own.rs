//! Splice's own places: what governs the next run (rules, MCP servers and their approvals,
//! installed packages, sessions, checkpoints, saved logins, prices) and its log. Which they are
//! is worked out here, from Splice's layout; the sandbox (`splice_sandbox::places`) keeps them,
//! and what approved hooks run, from every confined command, package tool and file tool.

use std::path::{Path, PathBuf};

pub use splice_sandbox::places::{OwnPlaces, Protected, absolute, resolved};

/// What the sandbox keeps from confined commands, package tools and the file tools for this
/// process: Splice's own places for its environment, worked out once (the environment does not
/// change while Splice runs, and every confined command and file tool call asks), and what the
/// project's approved hooks and MCP servers run, added as they are approved.
pub fn protected() -> &'static Protected {
    static PROTECTED: std::sync::OnceLock<Protected> = std::sync::OnceLock::new();
    PROTECTED.get_or_init(|| Protected::new(compute()))
}

fn compute() -> OwnPlaces {
    let mut places = OwnPlaces::default();
    let layout = crate::layout::Layout::process();
    places
        .dirs
        .extend(layout.config_home().map(Path::to_path_buf));
    places.dirs.push(layout.data().to_path_buf());
    // The log: what it says of past runs is read when something went wrong, so nothing the
    // model runs may write it.
    places.dirs.push(crate::logging::log_dir());
    if layout.config_named() {
        places
            .files
            .extend(layout.config_file().map(Path::to_path_buf));
        // The user's agent definitions beside it run without approval: a definition planted
        // there would give the next run's subagents any tools and mode.
        places
            .dirs
            .extend(crate::subagents::definition::user_agents_dir());
        places
            .files
            .extend(crate::registry_client::credentials::path());
    }
    if layout.pricing_named() {
        places
            .files
            .extend(layout.pricing_file().map(Path::to_path_buf));
    }
    places.dirs = places.dirs.iter().map(|p| absolute(p)).collect();
    places.files = places.files.iter().map(|p| absolute(p)).collect();
    places.dirs.dedup();
    places.files.dedup();
    places
}

/// Keep `files` (resolved; existing or not) from the file tools and, those that are regular
/// files, from confined commands, from now on.
pub fn protect_hook_files(files: &[PathBuf]) {
    protected().protect_hook_files(files);
}

/// Keep `dirs` (resolved) and everything beneath them from the file tools and confined
/// commands, from now on.
pub fn protect_hook_dirs(dirs: &[PathBuf]) {
    protected().protect_hook_dirs(dirs);
}
