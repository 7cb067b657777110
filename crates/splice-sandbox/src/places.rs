//! The places the sandbox keeps from what it confines: Splice's own places (what governs the
//! next run: rules, MCP servers and their approvals, installed packages, sessions,
//! checkpoints, saved logins, prices, and its log) and what the project's approved hooks and
//! MCP servers run. No confined command, package tool or file tool may write any of them,
//! wherever they lie (see `mask.rs` for places a command may otherwise write, as with HOME
//! under `/tmp`). With HOME inside a place confined commands may write, HOME itself is kept
//! read-only for them too ([`exposed_home`]). Which places are Splice's own is the core's to
//! say; they come in as a [`Protected`] value.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

/// What no confined command, package tool or file tool may write: Splice's own places, fixed
/// when the value is built (the core works them out from its environment), and the files and
/// directories the project's approved hooks and MCP servers run, which are only ever added to
/// (a session's hooks and servers stay approved for its life). One value is built per process
/// and shared; the sandbox reads no static of its own.
#[derive(Debug, Default)]
pub struct Protected {
    own: OwnPlaces,
    hooks: Mutex<HookPlaces>,
}

/// What approved hooks and MCP servers run, resolved.
#[derive(Debug, Default, Clone)]
struct HookPlaces {
    /// Files they run: they run as the person, so while those may run the model must not
    /// change them.
    files: Vec<PathBuf>,
    /// Directories they run from, pinned whole (a project hook directory whose scripts source
    /// their siblings), with everything beneath them.
    dirs: Vec<PathBuf>,
}

impl Protected {
    /// Splice's own places as given (absolute; not resolved: a link on the way is judged
    /// where it lies), and no hook files yet.
    pub fn new(own: OwnPlaces) -> Protected {
        Protected {
            own,
            hooks: Mutex::default(),
        }
    }

    /// Splice's own places.
    pub fn own(&self) -> &OwnPlaces {
        &self.own
    }

    fn hooks(&self) -> std::sync::MutexGuard<'_, HookPlaces> {
        self.hooks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `files` (resolved; existing or not) from the file tools and, those that are
    /// regular files, from confined commands, from now on.
    pub fn protect_hook_files(&self, files: &[PathBuf]) {
        let mut hooks = self.hooks();
        for file in files {
            if !hooks.files.contains(file) {
                hooks.files.push(file.clone());
            }
        }
    }

    /// Keep `dirs` (resolved) and everything beneath them from the file tools and confined
    /// commands, from now on.
    pub fn protect_hook_dirs(&self, dirs: &[PathBuf]) {
        let mut hooks = self.hooks();
        for dir in dirs {
            if !hooks.dirs.contains(dir) {
                hooks.dirs.push(dir.clone());
            }
        }
    }

    /// The files [`Protected::protect_hook_files`] keeps.
    pub fn hook_files(&self) -> Vec<PathBuf> {
        self.hooks().files.clone()
    }

    /// The directories [`Protected::protect_hook_dirs`] keeps.
    pub fn hook_dirs(&self) -> Vec<PathBuf> {
        self.hooks().dirs.clone()
    }

    /// Splice's own places and, when a confined command could otherwise write all of it, HOME
    /// ([`exposed_home`]): what a command given `writable` must see read-only. The files the
    /// project's approved hooks run are among them, and the directories they run from (those
    /// that exist: one that is missing would be created to be covered, and an empty script is
    /// no script).
    pub fn command_places(&self, writable: &[PathBuf]) -> OwnPlaces {
        let mut places = self.own.clone();
        let hooks = self.hooks().clone();
        places.files.extend(
            hooks
                .files
                .into_iter()
                .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.is_file())),
        );
        places.dirs.extend(
            hooks
                .dirs
                .into_iter()
                .filter(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir())),
        );
        if let Some(home) = exposed_home(writable) {
            places.dirs.insert(0, home);
        }
        places
    }
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

/// `path` made absolute against the current directory, links left as they are.
pub fn absolute(path: &Path) -> PathBuf {
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

    #[test]
    fn commands_are_kept_from_own_places_and_the_hook_files_and_dirs_that_exist() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        std::fs::create_dir(base.join("hooks")).expect("create hooks");
        std::fs::write(base.join("check.sh"), "exit 0\n").expect("write check.sh");
        let own = OwnPlaces {
            dirs: vec![base.join("config")],
            files: vec![base.join("settings.json")],
        };
        let protected = Protected::new(own.clone());
        assert_eq!(protected.command_places(&[]), own);
        let (file, missing_file) = (base.join("check.sh"), base.join("gone.sh"));
        let (hooks, missing_dir) = (base.join("hooks"), base.join("gone"));
        protected.protect_hook_files(&[file.clone(), missing_file.clone(), file.clone()]);
        protected.protect_hook_dirs(&[hooks.clone(), missing_dir.clone()]);
        // Kept from the file tools whether or not they exist, and only once each.
        assert_eq!(protected.hook_files(), [file.clone(), missing_file]);
        assert_eq!(protected.hook_dirs(), [hooks.clone(), missing_dir]);
        // Kept from commands as they are: a missing one would be created to be covered.
        let places = protected.command_places(&[]);
        assert_eq!(places.files, [base.join("settings.json"), file]);
        assert_eq!(places.dirs, [base.join("config"), hooks]);
    }
}
