//! Custom slash commands: markdown files whose body becomes the user's turn. They live in the
//! project's `.splice/commands/` and `.claude/commands/` (Claude Code's, so commands written for
//! it work) and in `commands/` beside the user's config file; a folder is a namespace
//! (`git/commit.md` is `/git:commit`). The session expands them when a turn arrives, so every
//! front end shares them; a front end only lists them ([`Catalog`]). A project's command
//! whose `` !`…` `` commands or `allowed-tools` would act runs them only once a person
//! approved the file ([`approve`]); arguments are data, never read for commands.

mod approval;
mod args;
mod catalog;
mod command_line;
mod expand;
mod front_matter;

pub use approval::{APPROVALS_FILE, approve, fingerprint, is_approved, needs_approval};
pub(crate) use catalog::read as read_markdown;
pub use catalog::{Catalog, CommandFile, Skipped, Source, user_commands_dir};
pub use expand::{BodyCommand, allow_rules, body_commands, expand};
pub use front_matter::{FrontMatter, split as split_front_matter};

use thiserror::Error;

/// Names the TUI's own commands take: a file cannot shadow them, and headless refuses them (they
/// act on the TUI, not on a turn).
pub const RESERVED: &[&str] = &[
    "help",
    "model",
    "tier",
    "mode",
    "permissions",
    "undo",
    "clear",
    "compact",
    "mcp",
    "cost",
    "login",
    "quit",
];

/// A request that invokes a command: `/name` and what follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation<'a> {
    pub name: &'a str,
    /// Everything after the name, trimmed.
    pub arguments: &'a str,
}

/// The command `text` invokes, if it is one: `/` then a name made of letters, digits, `_`, `-`
/// and `:` (namespaces), ended by whitespace or the end. A first word with anything else in it
/// (`/usr/bin/foo is broken`, `/tmp.` ) is not a command but text for the model.
pub fn invocation(text: &str) -> Option<Invocation<'_>> {
    let rest = text.trim_start().strip_prefix('/')?;
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let name = &rest[..end];
    let valid = !name.is_empty()
        && !name.starts_with(':')
        && !name.ends_with(':')
        && !name.contains("::")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':'));
    valid.then(|| Invocation {
        name,
        arguments: rest[end..].trim(),
    })
}

/// Why a command's request is not sent; the text is the message to show. Each is the person's
/// request or command file being wrong: a usage error.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SlashError {
    #[error("unknown command /{name}{}", hint(.known))]
    Unknown { name: String, known: Vec<String> },
    #[error("/{0} is a command of the interactive TUI; it does nothing in a headless run")]
    Interactive(String),
    #[error("command file {path}: {reason}")]
    BadFile { path: String, reason: String },
    #[error("/{name}: {reason}")]
    Include { name: String, reason: String },
    #[error("/{name}: the command `{command}` {reason}")]
    Command {
        name: String,
        command: String,
        reason: String,
    },
}

fn hint(known: &[String]) -> String {
    if known.is_empty() {
        " (no custom commands found in .splice/commands/, .claude/commands/ or the user's commands/ folder)".into()
    } else {
        format!(" (custom commands: {})", known.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_name_is_a_word_of_the_grammar() {
        assert_eq!(
            invocation("/review src/parser.rs"),
            Some(Invocation {
                name: "review",
                arguments: "src/parser.rs"
            })
        );
        assert_eq!(
            invocation("/git:commit").map(|i| i.name),
            Some("git:commit")
        );
        assert_eq!(
            invocation("/fix-bug_2  \n issue 12 ").map(|i| i.arguments),
            Some("issue 12")
        );
    }

    #[test]
    fn a_path_or_plain_text_is_not_a_command() {
        for text in [
            "/usr/bin/foo is broken",
            "/tmp/ is full",
            "/etc/hosts.",
            "review /x",
            "/",
            "/ spaced",
            "/:x",
            "/a:",
            "/a::b",
            "/file.rs fails",
        ] {
            assert_eq!(invocation(text), None, "{text}");
        }
    }
}
