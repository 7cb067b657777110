//! The files a project hook or a project MCP server runs, pinned to what they held when the
//! project's config was read. Both run unsandboxed once approved, but the model can write the
//! project (its file tools, its confined commands, a subagent): an approved
//! `.splice/hooks/check.sh`, `python3 fmt.py` or `node tools/server.mjs` whose file it rewrote
//! would run its code as the person. So an approval covers each file the command names, where
//! the model could write it (beneath the root, the temporary directories), by content, or as
//! absent; before it runs, each is read again, and one whose file changed does not run (it is
//! reported instead).
//!
//! A command is read as `sh` will run it ([`reach`]): through its `cd`s, with the variables
//! Splice sets for hooks, in every directory it may run in. A project hook directory
//! (`.splice/hooks/`, `.claude/hooks/`) it reaches into is pinned whole (every name and file
//! beneath it, [`tree`]): a script there imports or sources its siblings. So is the
//! directory a glob may name files in, and both hook directories when any word is known
//! only when it runs. A program or script known only when it runs (`sh "$F"`, `cd "$(…)"`,
//! `eval "$X"`, `sh *.sh` in the root) cannot be pinned: the approval covers a refusal, and
//! the command never runs.
//!
//! Which words name files is read generously (a word that may be a path is one): pinning one
//! too many only means a spurious "changed", never a hook run with code nobody approved.

mod reach;
mod tree;

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::Digest;

/// The project's hook directories, pinned whole when a command reaches into them.
pub const HOOK_DIRS: [&str; 2] = [".splice/hooks", ".claude/hooks"];

/// The state of a pin that stands for a command that cannot be pinned; the reason follows.
const REFUSED: &str = "refused: ";

/// One file (or directory) a command names, and what it held.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pinned {
    /// Absolute, as the command names it (links are followed when it is read).
    pub path: PathBuf,
    /// `sha256:HEX` of a regular file, `absent`, `other` (a directory, a device),
    /// `tree:sha256:HEX` of a directory pinned whole (`tree:…` otherwise), or `refused: WHY`
    /// for a command that cannot be pinned.
    pub state: String,
}

/// The files `command`, run by `sh -c` in `root`, names where the model could write them,
/// with what they hold now.
pub fn pin(command: &str, root: &Path) -> Vec<Pinned> {
    let places = places(root);
    let reach = reach::reach(command, root, &places, true);
    pins_of(reach, Vec::new(), root, &places)
}

/// The files an argument vector (a server's command, its arguments, its environment's values),
/// run in `root`, names where the model could write them, with what they hold now. Each
/// element is a word as it is, and is also read as a command line (`sh -c "node x.js"`): the
/// script of a shell's `-c` strictly (what it runs must be known), others only generously.
pub fn pin_argv<'a>(argv: impl IntoIterator<Item = &'a str>, root: &Path) -> Vec<Pinned> {
    let argv: Vec<&str> = argv.into_iter().collect();
    let places = places(root);
    let script = shell_script(&argv);
    let mut reach = reach::Reach::default();
    let mut whole = Vec::new();
    for (index, arg) in argv.iter().enumerate() {
        reach.extend(reach::reach(arg, root, &places, Some(index) == script));
        if !arg.starts_with('-') && !arg.is_empty() {
            whole.push(root.join(arg));
        }
        if let Some((_, value)) = arg.split_once('=').filter(|(_, v)| !v.is_empty()) {
            whole.push(root.join(value));
        }
    }
    pins_of(reach, whole, root, &places)
}

/// Which element of `argv` a shell runs as a script (`sh -c SCRIPT`, `bash -lc SCRIPT`).
fn shell_script(argv: &[&str]) -> Option<usize> {
    let program = argv.first()?.rsplit('/').next()?;
    if !["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"].contains(&program) {
        return None;
    }
    argv.iter()
        .position(|a| {
            a.strip_prefix('-')
                .is_some_and(|f| !f.starts_with('-') && f.contains('c'))
        })
        .map(|at| at + 1)
}

/// Where, outside the root, the model may write (resolved).
fn places(root: &Path) -> Vec<PathBuf> {
    crate::permissions::sandbox::writable_paths(root, &[])
        .iter()
        .skip(1)
        .map(|p| crate::permissions::own::resolved(p))
        .collect()
}

/// What `reach` (and `whole`, words taken as they are) pins.
fn pins_of(
    reach: reach::Reach,
    whole: Vec<PathBuf>,
    root: &Path,
    places: &[PathBuf],
) -> Vec<Pinned> {
    use crate::permissions::own::resolved;
    let real_root = resolved(root);
    let writable = |path: &Path| {
        let real = resolved(path);
        real.starts_with(&real_root) || places.iter().any(|p| real.starts_with(p))
    };
    let hook_dirs: Vec<(PathBuf, PathBuf)> = HOOK_DIRS
        .iter()
        .map(|d| (root.join(d), resolved(&root.join(d))))
        .collect();
    let mut dirs = reach.dirs;
    if reach.uncertain {
        dirs.extend(hook_dirs.iter().map(|(dir, _)| dir.clone()));
    }
    let files: Vec<PathBuf> = reach.files.into_iter().chain(whole).collect();
    // A hook directory anything reaches into: whole (its scripts source their siblings).
    let reached: Vec<PathBuf> = files
        .iter()
        .chain(&reach.cwds)
        .chain(&dirs)
        .map(|p| resolved(p))
        .collect();
    for (dir, real) in &hook_dirs {
        if reached.iter().any(|p| p.starts_with(real)) {
            dirs.push(dir.clone());
        }
    }
    let mut dirs: Vec<(PathBuf, PathBuf)> = dirs
        .into_iter()
        .map(|d| {
            let real = resolved(&d);
            (d, real)
        })
        .collect();
    dirs.sort_by_key(|(_, real)| real.components().count());
    let mut kept: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (dir, real) in dirs {
        if !kept.iter().any(|(_, k)| real.starts_with(k)) {
            kept.push((dir, real));
        }
    }
    let mut pins: Vec<Pinned> = files
        .into_iter()
        .filter(|path| writable(path))
        .filter(|path| {
            let real = resolved(path);
            !kept.iter().any(|(_, k)| real.starts_with(k))
        })
        .map(|path| Pinned {
            state: state(&path),
            path,
        })
        .collect();
    for (dir, _) in kept {
        let state = tree::state(&dir);
        if state == tree::TOO_LARGE {
            pins.push(refusal(
                root,
                &format!("{} is too large to pin whole", dir.display()),
            ));
        }
        pins.push(Pinned { path: dir, state });
    }
    if let Some(reason) = reach.refused {
        pins.push(refusal(root, &reason));
    }
    pins.sort();
    pins.dedup();
    pins
}

fn refusal(root: &Path, reason: &str) -> Pinned {
    Pinned {
        path: root.to_path_buf(),
        state: format!("{REFUSED}{reason}"),
    }
}

/// Why what names `pins` cannot be pinned (so never runs), if it cannot.
pub fn refused(pins: &[Pinned]) -> Option<&str> {
    pins.iter().find_map(|p| p.state.strip_prefix(REFUSED))
}

/// The first of `pins` whose file (or directory) no longer holds what it held, if any. A
/// refusal never holds.
pub fn changed(pins: &[Pinned]) -> Option<&Path> {
    pins.iter()
        .find(|p| now(p) != p.state)
        .map(|p| p.path.as_path())
}

/// What a pin's path holds now, read as it was pinned.
fn now(pin: &Pinned) -> String {
    if pin.state.starts_with("tree:") {
        tree::state(&pin.path)
    } else {
        state(&pin.path)
    }
}

/// The paths the approval covers by content (files and directories pinned whole), for the
/// approval question.
pub fn covered(pins: &[Pinned]) -> Vec<PathBuf> {
    pins.iter()
        .filter(|p| p.state.starts_with("sha256:") || p.state.starts_with("tree:sha256:"))
        .map(|p| p.path.clone())
        .collect()
}

/// Keep the files of `pins` from the model while what names them may run (for the session):
/// the file tools refuse to write them (and to create one that was absent), confined commands
/// see the ones that exist read-only, as they see Splice's own files (`permissions::own`). A
/// directory pinned whole is kept so with everything beneath it.
pub fn protect(pins: &[Pinned]) {
    let resolved = |p: &Pinned| crate::permissions::own::resolved(&p.path);
    let files: Vec<PathBuf> = pins
        .iter()
        .filter(|p| p.state != "other" && !p.state.starts_with("tree:"))
        .filter(|p| !p.state.starts_with(REFUSED))
        .map(resolved)
        .collect();
    crate::permissions::own::protect_hook_files(&files);
    let dirs: Vec<PathBuf> = pins
        .iter()
        .filter(|p| p.state.starts_with("tree:"))
        .map(resolved)
        .collect();
    crate::permissions::own::protect_hook_dirs(&dirs);
}

/// What `path` holds now (links followed).
fn state(path: &Path) -> String {
    match std::fs::metadata(path) {
        Err(_) => "absent".into(),
        Ok(meta) if !meta.is_file() => "other".into(),
        Ok(_) => digest(path).unwrap_or_else(|| "unreadable".into()),
    }
}

fn digest(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = [0u8; 64 * 1024];
    loop {
        match file.read(&mut buffer).ok()? {
            0 => break,
            n => hasher.update(&buffer[..n]),
        }
    }
    Some(format!("sha256:{}", crate::ids::hex(&hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_a_command_names_are_pinned_and_a_change_is_seen() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize");
        std::fs::create_dir_all(root.join(".splice/hooks")).expect("create hooks dir");
        std::fs::write(root.join(".splice/hooks/check.sh"), "echo ok\n").expect("write");
        std::fs::write(root.join("fmt.py"), "print(1)\n").expect("write");
        let pins = pin(
            "\"$CLAUDE_PROJECT_DIR\"/.splice/hooks/check.sh && python3 fmt.py --out=gen.txt \
             < in.txt >/dev/null 2>> hook.log; /bin/true >out.txt",
            &root,
        );
        let paths: Vec<&Path> = pins.iter().map(|p| p.path.as_path()).collect();
        // A hook directory's script: the directory whole (its siblings are sourced).
        assert!(paths.contains(&root.join(".splice/hooks").as_path()));
        assert!(paths.contains(&root.join("fmt.py").as_path()));
        // Absent now, so pinned as absent: one the model creates is a change too.
        assert!(paths.contains(&root.join("gen.txt").as_path()));
        assert!(paths.contains(&root.join("python3").as_path()));
        assert!(paths.contains(&root.join("in.txt").as_path()));
        // What it writes is not pinned.
        assert!(!paths.contains(&root.join("hook.log").as_path()));
        assert!(!paths.contains(&root.join("out.txt").as_path()));
        // Not where the model can write.
        assert!(!paths.contains(&Path::new("/bin/true")));
        assert_eq!(changed(&pins), None);
        std::fs::write(root.join("fmt.py"), "import os\n").expect("rewrite");
        assert_eq!(changed(&pins), Some(root.join("fmt.py").as_path()));
        std::fs::write(root.join("fmt.py"), "print(1)\n").expect("put back");
        std::fs::write(root.join("python3"), "planted").expect("plant");
        assert_eq!(changed(&pins), Some(root.join("python3").as_path()));
    }

    #[test]
    fn an_argument_vector_pins_each_argument_whole_and_as_a_command_line() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize");
        std::fs::create_dir_all(root.join("tools")).expect("create dir");
        std::fs::write(root.join("tools/my server.mjs"), "x").expect("write");
        let pins = pin_argv(
            [
                "node",
                "tools/my server.mjs",
                "--config=conf.json",
                "-y",
                "sh -c 'python3 x.py'",
            ],
            &root,
        );
        let paths: Vec<&Path> = pins.iter().map(|p| p.path.as_path()).collect();
        for named in ["node", "tools/my server.mjs", "conf.json", "x.py"] {
            assert!(
                paths.contains(&root.join(named).as_path()),
                "{named}: {paths:?}"
            );
        }
        assert!(!paths.contains(&root.join("-y").as_path()));
        assert!(
            pins.iter()
                .any(|p| p.path.ends_with("my server.mjs") && p.state.starts_with("sha256:"))
        );
    }

    /// A project root with `.splice/hooks/check.sh` and `.claude/hooks/x.sh`.
    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().canonicalize().expect("canonicalize");
        for (path, text) in [
            (".splice/hooks/check.sh", "echo ok\n"),
            (".splice/hooks/lib.sh", "x=1\n"),
            (".claude/hooks/x.sh", ". ./lib.sh\n"),
            ("tools/server.mjs", "x"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dirs");
            std::fs::write(path, text).expect("write");
        }
        (dir, root)
    }

    fn whole(pins: &[Pinned], dir: &Path) -> bool {
        pins.iter()
            .any(|p| p.path == dir && p.state.starts_with("tree:sha256:"))
    }

    #[test]
    fn every_spelling_of_a_hook_script_pins_its_directory_whole() {
        let (_dir, root) = project();
        for command in [
            "cd .splice/hooks && sh ./check.sh",
            "cd .splice; cd hooks || exit 1; ./check.sh",
            "sh $PWD/.splice/hooks/check.sh",
            "sh \"${PWD}\"/.splice/hooks/check.sh",
            "\"$SPLICE_PROJECT_DIR/.splice/hooks/check.sh\"",
            "sh .splice/hooks/chec*.sh",
            "sh .splice/hooks/check.{sh,bash}",
            "bash -c 'cd .splice/hooks && exec ./check.sh'",
            "env FOO=1 nice -n 5 sh .splice/hooks/../hooks/check.sh",
            "sh < .splice/hooks/check.sh",
        ] {
            let pins = pin(command, &root);
            assert!(
                whole(&pins, &root.join(".splice/hooks")),
                "{command}: {pins:?}"
            );
            assert_eq!(refused(&pins), None, "{command}");
        }
        let pins = pin("python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/x.sh", &root);
        assert!(whole(&pins, &root.join(".claude/hooks")), "{pins:?}");
        // A sibling rewritten is a change.
        assert_eq!(changed(&pins), None);
        std::fs::write(root.join(".claude/hooks/lib.sh"), "touch pwned\n").expect("plant");
        assert_eq!(changed(&pins), Some(root.join(".claude/hooks").as_path()));
    }

    #[test]
    fn a_glob_pins_the_directory_before_it() {
        let (_dir, root) = project();
        let pins = pin("for f in tools/*.mjs; do node \"$f\"; done", &root);
        // `node "$f"` runs a file known only when it runs.
        assert!(refused(&pins).is_some(), "{pins:?}");
        let pins = pin("node tools/*.mjs", &root);
        assert!(whole(&pins, &root.join("tools")), "{pins:?}");
        assert_eq!(refused(&pins), None);
    }

    #[test]
    fn what_runs_known_only_when_it_runs_cannot_be_pinned() {
        let (_dir, root) = project();
        for command in [
            "sh \"$HOOK\"",
            "$(cat .splice/which)",
            "cd \"$(dirname \"$0\")\" && ./check.sh",
            "cd $SOMEWHERE; sh check.sh",
            "eval \"$CMD\"",
            "sh -c \"$SCRIPT\"",
            "sh *.sh",
            "CLAUDE_PROJECT_DIR=/tmp/x; sh $CLAUDE_PROJECT_DIR/check.sh",
            "sh ${CLAUDE_PROJECT_DIR:-/tmp}/check.sh",
            ". \"$X\"",
            "exec $RUNNER",
            "sh <<EOF\n$X\nEOF",
            "bash <<< \"$X\"",
        ] {
            let pins = pin(command, &root);
            assert!(refused(&pins).is_some(), "{command}: {pins:?}");
            assert!(changed(&pins).is_some(), "a refusal never holds: {command}");
        }
    }

    #[test]
    fn a_word_known_only_when_it_runs_pins_the_hook_directories() {
        let (_dir, root) = project();
        let pins = pin(
            "jq -r .tool_input.file_path | { read f; npx prettier --write \"$f\"; }",
            &root,
        );
        assert_eq!(refused(&pins), None, "{pins:?}");
        assert!(whole(&pins, &root.join(".splice/hooks")));
        assert!(whole(&pins, &root.join(".claude/hooks")));
        // A plain command pins only what it names.
        let pins = pin("npx prettier --check src", &root);
        assert!(!pins.iter().any(|p| p.path.ends_with("hooks")), "{pins:?}");
    }

    #[test]
    fn a_shell_script_argument_of_a_server_is_read_strictly() {
        let (_dir, root) = project();
        let pins = pin_argv(["sh", "-c", "cd tools && exec node ./server.mjs"], &root);
        assert!(
            pins.iter().any(
                |p| p.path == root.join("tools/./server.mjs") && p.state.starts_with("sha256:")
            ),
            "{pins:?}"
        );
        let pins = pin_argv(["bash", "-lc", "node \"$SERVER\""], &root);
        assert!(refused(&pins).is_some(), "{pins:?}");
        // Elsewhere an argument that looks like a command line is only read generously.
        let pins = pin_argv(["node", "tools/server.mjs", "--title=$X y"], &root);
        assert_eq!(refused(&pins), None, "{pins:?}");
    }
}
