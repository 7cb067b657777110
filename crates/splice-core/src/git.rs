//! Every git process Splice starts itself (the pipeline's diff, worktrees, merges) comes from
//! here, hardened against repository configuration that runs programs.
//!
//! A sandboxed command may write the repository's git dir (it is inside the root; a worktree's
//! own repository is made writable on purpose), so its config is the model's to choose, and
//! Splice runs git unconfined. What can make git run a program, and how each is neutralised:
//!
//! - hooks (`.git/hooks/*`, `core.hooksPath`): `core.hooksPath=/dev/null` (no hook is found).
//! - `core.fsmonitor` (a hook run on every index refresh): `false`.
//! - `diff.external`, `diff.<driver>.command`, `diff.<driver>.textconv`: `--no-ext-diff
//!   --no-textconv` on every diff ([`DIFF_FLAGS`]); no other command Splice runs uses them.
//! - `filter.<driver>.clean|smudge|process` (named by `.gitattributes` or `info/attributes`): a
//!   driver the repository's own config defines is emptied for reads (git then passes content
//!   through), and refused for writes ([`Access::Write`]): committing content a clean filter
//!   did not clean (git-crypt, LFS) would be wrong, so Splice stops instead.
//! - `merge.<driver>.driver`: emptied, so the driver fails and the file counts as conflicted.
//! - `core.pager`, `pager.*`: `--no-pager`. `core.editor`, `sequence.editor`, `GIT_EDITOR`: `:`,
//!   which git never runs. `core.askPass`, `credential.helper`: emptied; `GIT_TERMINAL_PROMPT=0`.
//! - `core.sshCommand`, `core.gitProxy`, `remote.*.uploadpack|receivepack`, `protocol.ext`,
//!   remote helpers: only transports run them, and every protocol is `never` (Splice fetches
//!   and pushes nothing).
//! - `gpg.program`, `gpg.*.program`, `gpg.ssh.defaultKeyCommand`: only signing and verifying run
//!   them; `commit.gpgSign`, `tag.gpgSign`, `merge.verifySignatures`, `log.showSignature` off.
//! - `gc.auto`, `maintenance.auto`: off (an automatic gc after a commit is a process we did not
//!   ask for). `submodule.recurse`: off (a submodule's config is a second repository's).
//! - `alias.*`: git never lets an alias shadow a built-in, and Splice only runs built-ins.
//! - Not reached by the commands Splice runs (`rev-parse`, `config`, `diff`, `ls-files`,
//!   `status`, `worktree`, `add`, `commit`, `merge-tree`, `merge`, `rev-list`, `branch`, `init`,
//!   `reset`, `update-ref`, `cat-file`, `pack-objects`, `index-pack`; no transport):
//!   `core.alternateRefsCommand`, `credential.<url>.helper`, `url.*.insteadOf` (transports),
//!   `submodule.<name>.update=!cmd`, `interactive.diffFilter`, `imap.tunnel`, `sendemail.*`,
//!   `difftool.*`/`mergetool.*`/`guitool.*`/`man.*`/`browser.*`/`instaweb.*`, `help.autoCorrect`
//!   (Splice spells every subcommand right). `trace2.*`, `safe.directory` and
//!   `uploadpack.packObjectsHook` are never read from a repository's config.
//! - `hook.*` (config-defined hooks in newer git): refused outright, whatever git's version.
//! - The system config (`GIT_CONFIG_NOSYSTEM=1`) is skipped; the user's global config is kept
//!   (it is theirs, out of the sandbox's reach, and holds the identity a commit needs).
//!
//! The overrides travel as `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, which beat every config file
//! and reach the git processes git starts itself; unlike `-c`, a driver name holding `=` cannot
//! split them. Not covered: `core.worktree` pointing the work tree elsewhere.

pub mod snapshot;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Io(String),
    #[error("{0}")]
    Unsafe(String),
}

/// Flags every `git diff` of Splice's takes: no external diff program, no textconv filter.
pub const DIFF_FLAGS: [&str; 2] = ["--no-ext-diff", "--no-textconv"];

/// Whether the git command writes files or commits (filters then refuse instead of passing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Overrides for every git process, whatever the repository says.
const FIXED: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.askPass", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("protocol.git.allow", "never"),
    ("protocol.http.allow", "never"),
    ("protocol.https.allow", "never"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("merge.verifySignatures", "false"),
    ("log.showSignature", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("submodule.recurse", "false"),
];

/// Variables of the user's environment that would name a program or another repository.
const UNSET: &[&str] = &[
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_CONFIG",
];

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Fix which `git` binary Splice runs, before any command of the run could put another one
/// first on `PATH` (the sandbox may write `~/.cargo/bin`). Call once at startup.
pub fn pin_program() {
    PROGRAM.get_or_init(find_program);
}

fn find_program() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("git"))
        .find(|candidate| is_executable(candidate))
        .unwrap_or_else(|| PathBuf::from("git"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn base(dir: &Path, overrides: &[(String, String)]) -> Command {
    let mut command = Command::new(PROGRAM.get_or_init(find_program));
    command.arg("--no-pager").arg("-C").arg(dir);
    for name in UNSET {
        command.env_remove(name);
    }
    // Git needs no provider key, and a process's environment is readable by others of the same
    // user (an MCP server's) while it runs.
    for (name, _) in std::env::vars_os() {
        if name
            .to_str()
            .is_some_and(crate::sanitize::redact::is_secret_name)
        {
            command.env_remove(&name);
        }
    }
    command
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_EDITOR", ":")
        .env("GIT_SEQUENCE_EDITOR", ":");
    let all: Vec<(&str, &str)> = FIXED
        .iter()
        .copied()
        .chain(overrides.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .collect();
    command.env("GIT_CONFIG_COUNT", all.len().to_string());
    for (index, (key, value)) in all.iter().enumerate() {
        command
            .env(format!("GIT_CONFIG_KEY_{index}"), key)
            .env(format!("GIT_CONFIG_VALUE_{index}"), value);
    }
    command
}

/// `git -C dir`, hardened; the caller adds the subcommand and its arguments.
pub fn command(dir: &Path, access: Access) -> Result<Command, GitError> {
    vetted(dir, None, access)
}

/// `git` for the repository whose git dir and work tree are named outright (`GIT_DIR`,
/// `GIT_WORK_TREE`), never found through a `.git` file or `core.worktree` a command could have
/// rewritten; its config is vetted as [`command`]'s, with the same two variables set.
pub fn command_for(git_dir: &Path, work_tree: &Path, access: Access) -> Result<Command, GitError> {
    vetted(work_tree, Some((git_dir, work_tree)), access)
}

fn vetted(
    dir: &Path,
    repository: Option<(&Path, &Path)>,
    access: Access,
) -> Result<Command, GitError> {
    let named = |mut command: Command| {
        if let Some((git_dir, work_tree)) = repository {
            command
                .env("GIT_DIR", git_dir)
                .env("GIT_WORK_TREE", work_tree)
                .env_remove("GIT_COMMON_DIR")
                .env_remove("GIT_OBJECT_DIRECTORY")
                .env_remove("GIT_ALTERNATE_OBJECT_DIRECTORIES");
        }
        command
    };
    let listing = named(base(dir, &[]))
        .args(["config", "--null", "--list", "--show-scope"])
        .output()
        .map_err(|e| GitError::Io(e.to_string()))?;
    // Outside a repository `git config --list` still succeeds; a config git cannot parse is
    // one Splice cannot vet.
    if !listing.status.success() {
        return Err(GitError::Unsafe(format!(
            "cannot read the repository's git config: {}",
            String::from_utf8_lossy(&listing.stderr).trim()
        )));
    }
    let overrides = neutralise(&repository_keys(&listing.stdout), access)?;
    Ok(named(base(dir, &overrides)))
}

/// The (common) git dir of the repository `dir` is in, if it is in one.
pub fn common_dir(dir: &Path) -> Option<PathBuf> {
    if !may_find_repository(dir) {
        return None;
    }
    let output = base(dir, &[])
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let path = text.trim_end_matches('\n');
    (output.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// Whether git could find a repository from `dir`: `GIT_DIR` is set, or `dir` or a parent
/// holds a `.git` or a `HEAD` (a bare repository), or that cannot be told. Only `false` is
/// certain; it spares a git process (a millisecond or two) where there is plainly no repository.
fn may_find_repository(dir: &Path) -> bool {
    if ["GIT_DIR", "GIT_COMMON_DIR"]
        .iter()
        .any(|name| std::env::var_os(name).is_some())
    {
        return true;
    }
    // Parents as git sees them: of the real path, not of the path as written.
    let Ok(dir) = dir.canonicalize() else {
        return true;
    };
    dir.ancestors().any(|place| {
        [".git", "HEAD"]
            .iter()
            .any(|name| match std::fs::symlink_metadata(place.join(name)) {
                Ok(_) => true,
                Err(error) => error.kind() != std::io::ErrorKind::NotFound,
            })
    })
}

/// The keys set by the repository's own config files (scopes `local` and `worktree`, includes
/// they pull in too), from `git config --null --list --show-scope`.
fn repository_keys(listing: &[u8]) -> Vec<String> {
    let mut tokens = listing.split(|b| *b == 0);
    let mut keys = Vec::new();
    while let (Some(scope), Some(entry)) = (tokens.next(), tokens.next()) {
        if scope != b"local" && scope != b"worktree" {
            continue;
        }
        let key = entry.split(|b| *b == b'\n').next().unwrap_or_default();
        keys.push(String::from_utf8_lossy(key).into_owned());
    }
    keys
}

/// `section.subsection.name` split at its first and last dot (subsections may hold dots).
fn split_key(key: &str) -> Option<(&str, &str, &str)> {
    let (section, rest) = key.split_once('.')?;
    let (subsection, name) = rest.rsplit_once('.')?;
    Some((section, subsection, name))
}

/// The overrides that disarm what the repository's keys define, or why the call is refused.
fn neutralise(keys: &[String], access: Access) -> Result<Vec<(String, String)>, GitError> {
    let mut overrides: Vec<(String, String)> = Vec::new();
    let mut filters: Vec<&str> = Vec::new();
    for key in keys {
        let lower = key.to_ascii_lowercase();
        if lower.starts_with("hook.") {
            return Err(GitError::Unsafe(format!(
                "the repository's git config defines a hook (`{key}`), which Splice does not run"
            )));
        }
        let Some((section, driver, _)) = split_key(key) else {
            continue;
        };
        match section.to_ascii_lowercase().as_str() {
            "filter" if !filters.contains(&driver) => filters.push(driver),
            "merge" => overrides.push((format!("merge.{driver}.driver"), String::new())),
            "protocol" => overrides.push((format!("protocol.{driver}.allow"), "never".into())),
            _ => {}
        }
    }
    if access == Access::Write && !filters.is_empty() {
        return Err(GitError::Unsafe(format!(
            "the repository's git config defines filter driver(s) {}, which Splice does not run \
             and cannot commit without",
            filters.join(", ")
        )));
    }
    for driver in filters {
        for name in ["clean", "smudge", "process"] {
            overrides.push((format!("filter.{driver}.{name}"), String::new()));
        }
        overrides.push((format!("filter.{driver}.required"), "false".into()));
    }
    Ok(overrides)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No git process where there is plainly no repository; a `.git` or a `HEAD` (a bare
    /// repository) in the directory or a parent, or a link that may lead to one, asks git.
    #[test]
    fn git_is_asked_wherever_a_repository_could_be() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let plain = dir.path().join("plain/deep");
        std::fs::create_dir_all(&plain).expect("create plain");
        if !may_find_repository(&plain) {
            assert_eq!(common_dir(&plain), None);
        }
        let below = |marker: &str| {
            let top = dir.path().join(marker.replace(['/', '.'], "_"));
            let inner = top.join("a/b");
            std::fs::create_dir_all(&inner).expect("create inner");
            std::fs::write(top.join(marker), "").expect("write marker");
            inner
        };
        assert!(may_find_repository(&below(".git")));
        assert!(may_find_repository(&below("HEAD")));
        // A dangling `.git` link is still something git would look at.
        let linked = dir.path().join("linked");
        std::fs::create_dir_all(&linked).expect("create linked");
        std::os::unix::fs::symlink("/nonexistent", linked.join(".git")).expect("link .git");
        assert!(may_find_repository(&linked));
        // Parents are those of the real path: a link into a repository finds it.
        let via = dir.path().join("via");
        std::os::unix::fs::symlink(below(".git"), &via).expect("link via");
        assert!(may_find_repository(&via));
    }

    #[test]
    fn reads_only_the_repository_scopes() {
        let listing = b"global\0filter.lfs.clean\ngit-lfs clean\0local\0filter.a=b.c.smudge\nx\0local\0core.bare\nfalse\0worktree\0merge.m.driver\nevil\0command\0filter.c.clean\nx\0";
        assert_eq!(
            repository_keys(listing),
            ["filter.a=b.c.smudge", "core.bare", "merge.m.driver"]
        );
    }

    #[test]
    fn disarms_drivers_for_reads_and_refuses_filters_for_writes() {
        let keys = vec![
            "filter.a=b.c.smudge".to_string(),
            "merge.m.driver".to_string(),
            "protocol.file.allow".to_string(),
            "core.bare".to_string(),
        ];
        let read = neutralise(&keys, Access::Read).expect("neutralise keys");
        let has = |k: &str, v: &str| read.iter().any(|(a, b)| a == k && b == v);
        assert!(has("filter.a=b.c.clean", ""));
        assert!(has("filter.a=b.c.process", ""));
        assert!(has("filter.a=b.c.required", "false"));
        assert!(has("merge.m.driver", ""));
        assert!(has("protocol.file.allow", "never"));
        assert!(matches!(
            neutralise(&keys, Access::Write),
            Err(GitError::Unsafe(m)) if m.contains("a=b.c")
        ));
        let hook = vec!["hook.x.command".to_string()];
        assert!(neutralise(&hook, Access::Read).is_err());
    }
}
