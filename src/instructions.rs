//! Project instructions: an `AGENTS.md` (or `SPLICE.md`) at the working root is the project's
//! standing guidance for agents (build commands, conventions), read into every system prompt as
//! users of other coding agents expect.

use std::path::Path;

/// The files read, in order of preference; the first one present wins.
pub const FILES: [&str; 2] = ["SPLICE.md", "AGENTS.md"];
/// More than this is cut: instructions are guidance, not a second repository.
const MAX_BYTES: usize = 32 * 1024;

/// The system-prompt section for the project's instructions, if the root has them.
pub fn section(root: &Path) -> Option<String> {
    FILES.iter().find_map(|name| {
        let text = std::fs::read_to_string(root.join(name)).ok()?;
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let mut end = text.len().min(MAX_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Some(format!(
            "\nProject instructions from {name} (follow them unless the user says otherwise):\n{}\n",
            &text[..end]
        ))
    })
}

/// `system` with the working root and the project's instructions appended.
pub fn system_prompt(system: &str, root: &Path) -> String {
    format!(
        "{system}\nWorking root: {}\n{}",
        root.display(),
        section(root).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_md_wins_over_agents_md_and_empty_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(section(dir.path()), None);
        std::fs::write(dir.path().join("AGENTS.md"), "Run `make check`.")
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            section(dir.path())
                .is_some_and(|s| s.contains("AGENTS.md") && s.contains("make check"))
        );
        std::fs::write(dir.path().join("SPLICE.md"), "  \n").unwrap_or_else(|e| panic!("{e}"));
        assert!(section(dir.path()).is_some_and(|s| s.contains("AGENTS.md")));
        std::fs::write(dir.path().join("SPLICE.md"), "Use tabs.").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            section(dir.path()).is_some_and(|s| s.contains("SPLICE.md") && s.contains("Use tabs."))
        );
    }
}
