//! Splice's own places: what governs the next run (rules, MCP servers and their approvals,
//! installed packages, sessions, checkpoints, saved logins, prices) and its log. No confined command or
//! package tool may write any of them, wherever they lie (see `mask.rs` for places a command
//! may otherwise write, as with HOME under `/tmp`). With HOME inside a place confined commands
//! may write, HOME itself is kept read-only for them too ([`exposed_home`]).

use std::path::{Path, PathBuf};

/// Splice's own directories and files, as absolute paths (not resolved: a link on the way is
/// judged where it lies).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct OwnPlaces {
    /// Directories kept whole: the default config directory (`~/.config/splice`, which also
    /// holds the price table and the saved logins) and the data directory (approvals,
    /// packages, sessions, checkpoints, worktree records, caches).
    pub dirs: Vec<PathBuf>,
    /// Files named on their own: `SPLICE_CONFIG`'s target and the saved logins beside it (and
    /// the `agents/` folder beside it, among `dirs`), and
    /// `SPLICE_PRICING_FILE`'s target. Their directories may be anything (the project, `/tmp`).
    pub files: Vec<PathBuf>,
}

impl OwnPlaces {
    /// Every path, directories first.
    pub fn all(&self) -> impl Iterator<Item = &PathBuf> {
        self.dirs.iter().chain(&self.files)
    }
}

/// Splice's own places for this process's environment, worked out once: the environment does
/// not change while Splice runs, and every confined command and file tool call asks.
pub fn own_places() -> &'static OwnPlaces {
    static PLACES: std::sync::OnceLock<OwnPlaces> = std::sync::OnceLock::new();
    PLACES.get_or_init(compute)
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

/// The files the project's approved hooks and MCP servers run (`permissions::pinned`),
/// resolved: they run as the person, so while those may run the model must not change them.
/// Only ever added to (a session's hooks and servers stay approved for its life).
static HOOK_FILES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Keep `files` (resolved; existing or not) from the file tools and, those that are regular
/// files, from confined commands, from now on.
pub fn protect_hook_files(files: &[PathBuf]) {
    let mut kept = HOOK_FILES.lock().unwrap_or_else(|e| e.into_inner());
    for file in files {
        if !kept.contains(file) {
            kept.push(file.clone());
        }
    }
}

/// The files [`protect_hook_files`] keeps.
pub fn hook_files() -> Vec<PathBuf> {
    HOOK_FILES.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The directories approved hooks and MCP servers run from, pinned whole (a project hook
/// directory whose scripts source their siblings): kept as [`HOOK_FILES`] are, with
/// everything beneath them.
static HOOK_DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Keep `dirs` (resolved) and everything beneath them from the file tools and confined
/// commands, from now on.
pub fn protect_hook_dirs(dirs: &[PathBuf]) {
    let mut kept = HOOK_DIRS.lock().unwrap_or_else(|e| e.into_inner());
    for dir in dirs {
        if !kept.contains(dir) {
            kept.push(dir.clone());
        }
    }
}

/// The directories [`protect_hook_dirs`] keeps.
pub fn hook_dirs() -> Vec<PathBuf> {
    HOOK_DIRS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Splice's own places and, when a confined command could otherwise write all of it, HOME
/// ([`exposed_home`]): what a command given `writable` must see read-only. The files the
/// project's approved hooks run are among them, and the directories they run from (those that
/// exist: one that is missing would be created to be covered, and an empty script is no script).
pub fn command_places(writable: &[PathBuf]) -> OwnPlaces {
    let mut places = own_places().clone();
    places.files.extend(
        hook_files()
            .into_iter()
            .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.is_file())),
    );
    // Those that exist: a missing one would be created to be covered.
    places.dirs.extend(
        hook_dirs()
            .into_iter()
            .filter(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir())),
    );
    if let Some(home) = exposed_home(writable) {
        places.dirs.insert(0, home);
    }
    places
}

/// HOME when it lies strictly inside one of `writable` (HOME under `/tmp`, in containers and
/// on CI) and is not itself one (the working root as HOME: granted on purpose, Landlock
/// decides). There a command could plant shell startup files (`~/.bashrc`, `~/.profile`) or
/// programs on PATH (`~/.local/bin`, `~/.cargo/bin`, `~/.npm/_npx`) that run later outside
/// the sandbox, so it sees HOME read-only but for the writable places inside (`mask.rs`).
pub fn exposed_home(writable: &[PathBuf]) -> Option<PathBuf> {
    exposed(absolute(&dirs::home_dir()?), writable)
}

fn exposed(home: PathBuf, writable: &[PathBuf]) -> Option<PathBuf> {
    let real = resolved(&home);
    let places: Vec<PathBuf> = writable.iter().map(|w| resolved(w)).collect();
    let inside = places.iter().any(|p| *p != real && real.starts_with(p));
    (inside && !places.contains(&real)).then_some(home)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `path` with its links resolved: the real file when it exists, else the deepest existing
/// ancestor (resolved) joined with the rest of the names (which a later file would take).
pub fn resolved(path: &Path) -> PathBuf {
    let absolute = absolute(path);
    let mut below = Vec::new();
    let mut at = absolute.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return below.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                below.push(name.to_os_string());
                at = parent;
            }
            _ => return absolute,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_exposed_only_strictly_inside_a_writable_place() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        let home = base.join("home");
        let inside = [base.clone(), home.join("project")];
        assert_eq!(exposed(home.clone(), &inside), Some(home.clone()));
        // The working root as HOME, or the temp dir as HOME: granted on purpose.
        assert_eq!(exposed(home.clone(), &[base.clone(), home.clone()]), None);
        assert_eq!(exposed(home.clone(), &[home.join("project")]), None);
    }

    #[test]
    fn a_missing_path_resolves_through_its_existing_ancestors() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let real = dir.path().canonicalize().expect("canonicalize dir");
        std::fs::create_dir(real.join("target")).expect("create target");
        std::os::unix::fs::symlink(real.join("target"), real.join("link")).expect("link link");
        assert_eq!(
            resolved(&real.join("link/a/b")),
            real.join("target").join("a").join("b")
        );
        assert_eq!(resolved(&real.join("link")), real.join("target"));
    }
}
