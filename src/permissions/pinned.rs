//! The files a project hook or a project MCP server names, pinned to what they held when the
//! project's config was read. Both run unsandboxed once approved, but the model can write the
//! project (its file tools, its confined commands, a subagent): an approved
//! `.splice/hooks/check.sh`, `python3 fmt.py` or `node tools/server.mjs` whose file it rewrote
//! would run its code as the person. So an approval covers each file the command names, where
//! the model could write it (beneath the root, the temporary directories), by content, or as
//! absent; before it runs, each is read again, and one whose file changed does not run (it is
//! reported instead).
//!
//! Which words name files is read generously (a word that may be a path is one): pinning one
//! too many only means a spurious "changed", never a hook run with code nobody approved.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::Digest;

/// Variables a hook command names the project by (both are set for it).
const PROJECT_VARS: [&str; 2] = ["CLAUDE_PROJECT_DIR", "SPLICE_PROJECT_DIR"];

/// One file a command names, and what it held.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pinned {
    /// Absolute, as the command names it (links are followed when it is read).
    pub path: PathBuf,
    /// `sha256:HEX` of a regular file, `absent`, or `other` (a directory, a device).
    pub state: String,
}

/// The files `command`, run in `root`, names where the model could write them, with what
/// they hold now.
pub fn pin(command: &str, root: &Path) -> Vec<Pinned> {
    let mut pins = pinned_words(words(command, root), root);
    pins.sort();
    pins.dedup();
    pins
}

/// The paths `words` name where the model could write them, with what they hold now.
fn pinned_words(words: Vec<String>, root: &Path) -> Vec<Pinned> {
    let places: Vec<PathBuf> = crate::permissions::sandbox::writable_paths(root, &[])
        .iter()
        .map(|p| crate::permissions::own::resolved(p))
        .collect();
    let writable = |path: &Path| {
        path.starts_with(root)
            || places
                .iter()
                .any(|p| crate::permissions::own::resolved(path).starts_with(p))
    };
    words
        .into_iter()
        .filter(|w| !w.is_empty() && !w.contains('$'))
        .filter_map(|word| candidate(&word, root))
        .filter(|path| writable(path))
        .map(|path| Pinned {
            state: state(&path),
            path,
        })
        .collect()
}

/// The files an argument vector (a server's command, its arguments, its environment's values),
/// run in `root`, names where the model could write them, with what they hold now. Each
/// element is a word as it is, and is also read as a command line (`sh -c "node x.js"`).
pub fn pin_argv<'a>(argv: impl IntoIterator<Item = &'a str>, root: &Path) -> Vec<Pinned> {
    let mut pins = Vec::new();
    for arg in argv {
        pins.extend(pin(arg, root));
        let mut whole = Vec::new();
        if !arg.starts_with('-') {
            whole.push(arg.to_string());
        }
        if let Some((_, value)) = arg.split_once('=') {
            whole.push(value.to_string());
        }
        pins.extend(pinned_words(whole, root));
    }
    pins.sort();
    pins.dedup();
    pins
}

/// The first of `pins` whose file no longer holds what it held, if any.
pub fn changed(pins: &[Pinned]) -> Option<&Path> {
    pins.iter()
        .find(|p| state(&p.path) != p.state)
        .map(|p| p.path.as_path())
}

/// Keep the files of `pins` from the model while what names them may run (for the session): the file tools refuse to
/// write them (and to create one that was absent), confined commands see the ones that exist
/// read-only, as they see Splice's own files (`permissions::own`).
pub fn protect(pins: &[Pinned]) {
    let files: Vec<PathBuf> = pins
        .iter()
        .filter(|p| p.state != "other")
        .map(|p| crate::permissions::own::resolved(&p.path))
        .collect();
    crate::permissions::own::protect_hook_files(&files);
}

/// The command's words that may name files: the project variables expanded, quotes dropped,
/// split at blanks and shell operators; an option's value after `=` counts too.
fn words(command: &str, root: &Path) -> Vec<String> {
    let root_text = root.display().to_string();
    let mut text = command.to_string();
    for var in PROJECT_VARS {
        text = text
            .replace(&format!("${{{var}}}"), &root_text)
            .replace(&format!("${var}"), &root_text);
    }
    let text: String = text.chars().filter(|c| !matches!(c, '"' | '\'')).collect();
    // What a hook writes with `>` or `>>` (its log) is output, not code: pinned, it would
    // stop the hook after its first run.
    let text = match output_redirection() {
        Some(pattern) => pattern.replace_all(&text, " ").into_owned(),
        None => text,
    };
    let mut found = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c)) {
        let word = word.trim_start_matches('\\');
        if word.is_empty() {
            continue;
        }
        if let Some((_, value)) = word.split_once('=') {
            found.push(value.to_string());
        }
        if !word.starts_with('-') {
            found.push(word.to_string());
        }
    }
    found.retain(|w| !w.is_empty() && !w.contains('$'));
    found
}

/// An output redirection and its target (`> f`, `>>f`, `2> f`, `&> f`, `>| f`).
/// `None` if it could not be built: then every word stays pinned (stricter).
fn output_redirection() -> Option<&'static regex::Regex> {
    static PATTERN: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    PATTERN
        .get_or_init(|| regex::Regex::new(r"[0-9&]?>>?\|?\s*[^\s;|&()<>`]+").ok())
        .as_ref()
}

/// The path a word names: absolute, in HOME (`~/`), or relative to the root.
fn candidate(word: &str, root: &Path) -> Option<PathBuf> {
    let path = if let Some(rest) = word.strip_prefix("~/") {
        dirs::home_dir()?.join(rest)
    } else {
        root.join(word)
    };
    Some(std::path::absolute(&path).unwrap_or(path))
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
        assert!(paths.contains(&root.join(".splice/hooks/check.sh").as_path()));
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
}
