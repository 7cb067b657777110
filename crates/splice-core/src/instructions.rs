//! Project instructions: an `AGENTS.md` (or `SPLICE.md`) at the working root is the project's
//! standing guidance for agents (build commands, conventions), read into every system prompt as
//! users of other coding agents expect.

use std::path::Path;

use crate::confine::beneath;

/// The files read, in order of preference; the first one present wins.
pub const FILES: [&str; 2] = ["SPLICE.md", "AGENTS.md"];
/// More than this is cut: instructions are guidance, not a second repository.
const MAX_BYTES: u64 = 32 * 1024;

/// What the root holds: the section for the system prompt, and the files passed over because
/// they could not be read safely (a link out of the root, a FIFO), with why.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Instructions {
    pub section: Option<String>,
    pub skipped: Vec<String>,
}

/// Read the project's instructions. Each file is opened beneath the root as a regular file, so
/// `SPLICE.md -> /proc/self/environ` or a link to a file elsewhere never reaches a provider.
pub fn read(root: &Path) -> Instructions {
    let mut found = Instructions::default();
    for name in FILES {
        let bytes = match beneath::read_prefix(root, &root.join(name), MAX_BYTES) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) => {
                found.skipped.push(format!("{name} was not read: {error}"));
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        // The cut may have split a character; the replacement mark at the end is harmless.
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        found.section = Some(format!(
            "\nProject instructions from {name} (follow them unless the user says otherwise):\n{text}\n"
        ));
        break;
    }
    found
}

/// `system` with the working root and the project's instructions appended.
/// `system` with the working root and the instructions `section` (read once per run).
pub fn system_prompt(system: &str, root: &Path, section: Option<&str>) -> String {
    format!(
        "{system}\nWorking root: {}\n{}",
        root.display(),
        section.unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(root: &Path) -> Option<String> {
        read(root).section
    }

    #[test]
    fn splice_md_wins_over_agents_md_and_empty_files_are_skipped() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        assert_eq!(section(dir.path()), None);
        std::fs::write(dir.path().join("AGENTS.md"), "Run `make check`.").expect("write AGENTS.md");
        assert!(
            section(dir.path())
                .is_some_and(|s| s.contains("AGENTS.md") && s.contains("make check"))
        );
        std::fs::write(dir.path().join("SPLICE.md"), "  \n").expect("write SPLICE.md");
        assert!(section(dir.path()).is_some_and(|s| s.contains("AGENTS.md")));
        std::fs::write(dir.path().join("SPLICE.md"), "Use tabs.").expect("write SPLICE.md");
        assert!(
            section(dir.path()).is_some_and(|s| s.contains("SPLICE.md") && s.contains("Use tabs."))
        );
    }

    #[test]
    fn links_out_of_the_root_and_non_files_are_skipped_with_a_reason() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("docs")).expect("create docs");
        std::fs::write(dir.path().join("outside.md"), "outside").expect("write outside.md");
        std::os::unix::fs::symlink("../outside.md", root.join("SPLICE.md"))
            .expect("link SPLICE.md");
        std::fs::create_dir(root.join("AGENTS.md")).expect("create AGENTS.md");
        let found = read(&root);
        assert_eq!(found.section, None);
        assert_eq!(found.skipped.len(), 2, "{:?}", found.skipped);
        // A link that stays inside the root is an ordinary file.
        std::fs::remove_file(root.join("SPLICE.md")).expect("remove SPLICE.md");
        std::fs::write(root.join("docs/agents.md"), "inside").expect("write docs/agents.md");
        std::os::unix::fs::symlink("docs/agents.md", root.join("SPLICE.md"))
            .expect("link SPLICE.md");
        assert!(section(&root).is_some_and(|s| s.contains("inside")));
    }

    #[test]
    fn a_long_file_is_cut_at_the_limit() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::write(dir.path().join("AGENTS.md"), "é".repeat(32 * 1024))
            .expect("write AGENTS.md");
        let text = section(dir.path()).unwrap_or_default();
        assert!(text.len() < 32 * 1024 + 200, "{}", text.len());
    }
}
