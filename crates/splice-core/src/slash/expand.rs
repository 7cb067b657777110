//! Turning an invocation into the user's turn. The command file's own body is read for
//! `@path` (replaced by the file, read beneath the root) and `` !`command` `` (replaced by its
//! output: run by the caller, through the permission policy and the sandbox, before the turn
//! is sent); only then are the arguments put in, as data: text in the text, quoted words in a
//! command ([`super::command_line`]), so an argument (an editor's attachment is one) is never
//! read for commands or files. A file or command that fails is an error, never a silent blank.

use std::future::Future;
use std::path::Path;

use super::args::{self, Arguments};
use super::{CommandFile, SlashError, command_line};
use crate::permissions::{Effect, Rule};

/// The allow rules a command's `allowed-tools` give its turn (and its own `` !`command` ``s).
pub fn allow_rules(command: &CommandFile) -> Result<Vec<Rule>, SlashError> {
    command
        .matter
        .allowed_tools
        .iter()
        .filter_map(|text| allow_rule(text).transpose())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|reason| SlashError::BadFile {
            path: command.path.display().to_string(),
            reason,
        })
}

/// A `` !`command` `` of a body, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyCommand {
    pub text: String,
    /// Arguments were put into it: it is partly the invoker's text, so the command file's
    /// `allowed-tools` do not cover it.
    pub with_arguments: bool,
}

/// The `` !`command` ``s of a body as the file writes them, in order.
pub fn body_commands(body: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = body;
    loop {
        match next_piece(rest) {
            Piece::Text => return found,
            Piece::Command { command, end, .. } => {
                found.push(command);
                rest = &rest[end..];
            }
            Piece::File { end, .. } => rest = &rest[end..],
        }
    }
}

/// The turn `command` makes with `arguments`; `run` runs a `` !`command` `` and gives its
/// output, or why it did not run or failed. Without `run_commands` none runs: each stays in the
/// text, as written, marked as not run.
pub async fn expand<F, Fut>(
    command: &CommandFile,
    arguments: &str,
    root: &Path,
    run_commands: bool,
    mut run: F,
) -> Result<String, SlashError>
where
    F: FnMut(BodyCommand) -> Fut,
    Fut: Future<Output = Result<String, String>>,
{
    let name = &command.name;
    let values = Arguments::new(arguments);
    let body = command.body.as_str();
    let mut text = String::with_capacity(body.len() + arguments.len());
    let mut rest = body;
    loop {
        match next_piece(rest) {
            Piece::Text => {
                text.push_str(&args::substitute(rest, &values));
                break;
            }
            Piece::Command { at, command, end } => {
                text.push_str(&args::substitute(&rest[..at], &values));
                if run_commands {
                    let line = command_line::substitute(command, &values).map_err(|reason| {
                        SlashError::Command {
                            name: name.clone(),
                            command: command.to_string(),
                            reason,
                        }
                    })?;
                    let shown = line.text.clone();
                    let output = run(BodyCommand {
                        text: line.text,
                        with_arguments: line.with_arguments,
                    })
                    .await
                    .map_err(|reason| SlashError::Command {
                        name: name.clone(),
                        command: shown,
                        reason,
                    })?;
                    text.push_str(output.trim_end());
                } else {
                    text.push_str(&format!(
                        "`{command}` (not run: this command file is not approved)"
                    ));
                }
                rest = &rest[end..];
            }
            Piece::File { at, path, end } => {
                text.push_str(&args::substitute(&rest[..at], &values));
                // A path may name an argument (`@$1`): it is read as a path, beneath the root.
                let path = args::substitute(path, &values);
                if !looks_like_path(&path) && !root.join(&path).exists() {
                    // `@Override`, `@team`: a word, not a file.
                    text.push('@');
                    text.push_str(&path);
                } else {
                    let contents = include(root, &path).map_err(|reason| SlashError::Include {
                        name: name.clone(),
                        reason: format!("@{path}: {reason}"),
                    })?;
                    text.push_str(&format!("`{path}`:\n```\n{}\n```", contents.trim_end()));
                }
                rest = &rest[end..];
            }
        }
    }
    Ok(args::append_unnamed(body, text, arguments)
        .trim()
        .to_string())
}

/// The next thing to replace in a body, by byte offsets.
enum Piece<'a> {
    Text,
    Command {
        at: usize,
        command: &'a str,
        end: usize,
    },
    File {
        at: usize,
        path: &'a str,
        end: usize,
    },
}

fn next_piece(text: &str) -> Piece<'_> {
    let mut previous: Option<char> = None;
    for (at, c) in text.char_indices() {
        let after = &text[at + c.len_utf8()..];
        if c == '!'
            && let Some(inner) = after.strip_prefix('`')
            && let Some(close) = inner.find('`')
            && !inner[..close].trim().is_empty()
        {
            // `!` and the opening backtick, the command, the closing backtick.
            let end = at + 2 + close + 1;
            return Piece::Command {
                at,
                command: inner[..close].trim(),
                end,
            };
        }
        // `@` starts a path at the start of a word only (`a@b.com` is not one).
        if c == '@' && previous.is_none_or(char::is_whitespace) {
            let word_len = after.find(char::is_whitespace).unwrap_or(after.len());
            let path = after[..word_len].trim_end_matches(['.', ',', ';', ':', '!', '?', ')']);
            if !path.is_empty() {
                return Piece::File {
                    at,
                    path,
                    end: at + 1 + path.len(),
                };
            }
        }
        previous = Some(c);
    }
    Piece::Text
}

/// A word after `@` that can only be meant as a path: one with a folder or an extension.
fn looks_like_path(word: &str) -> bool {
    word.contains(['/', '.'])
}

/// The text of `raw` (relative to `root`, or absolute inside it), read beneath the root.
fn include(root: &Path, raw: &str) -> Result<String, String> {
    let path = crate::tools::paths::resolve(root, raw).map_err(|e| e.to_string())?;
    let bytes = crate::confine::beneath::read(root, &path).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|_| "not a UTF-8 text file".to_string())
}

/// A rule of `allowed-tools`: Splice's syntax, or Claude Code's (`Bash(git add:*)` is
/// `run_command(git add *)`, `Read` is `read_file` …). Claude Code's tools that Splice has no
/// equivalent of (`WebFetch`, `Task` …) allow nothing and are skipped; a misspelt Splice tool
/// is an error, as in the config.
fn allow_rule(text: &str) -> Result<Option<Rule>, String> {
    let (tool, pattern) = match text.find('(') {
        Some(open) => (&text[..open], Some(&text[open..])),
        None => (text, None),
    };
    let builtin = crate::tools::registry::real_tool_named(tool)
        .filter(|_| tool.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(crate::protocol::Builtin::as_str);
    let rule = match builtin {
        Some("run_command") => {
            // Claude Code's `prefix:*` matches what starts with the prefix.
            let pattern = pattern.map(|p| p.replace(":*)", " *)"));
            format!("run_command{}", pattern.unwrap_or_default())
        }
        Some(name) => format!("{name}{}", pattern.unwrap_or_default()),
        None if tool.starts_with(|c: char| c.is_ascii_uppercase()) => return Ok(None),
        None => text.to_string(),
    };
    Rule::parse(Effect::Allow, &rule)
        .map(Some)
        .map_err(|e| format!("allowed-tools: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slash::{Catalog, invocation};

    fn catalog_with(root: &Path, name: &str, text: &str) -> Catalog {
        let path = root.join(".splice/commands").join(format!("{name}.md"));
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("folder");
        std::fs::write(&path, text).expect("command file");
        Catalog::load(root, None)
    }

    async fn expand_text(
        catalog: &Catalog,
        root: &Path,
        text: &str,
    ) -> (Result<String, SlashError>, Vec<String>) {
        let mut ran = Vec::new();
        let call = invocation(text).expect("an invocation");
        // As the session does: the command, its rules, then its body.
        let command = match catalog
            .lookup(call.name)
            .and_then(|command| allow_rules(command).map(|_| command))
        {
            Ok(command) => command,
            Err(error) => return (Err(error), ran),
        };
        let result = expand(command, call.arguments, root, true, |command| {
            ran.push(command.text.clone());
            async move {
                match command.text.as_str() {
                    "false" => Err("exited with 1".to_string()),
                    other => Ok(format!("output of {other}\n")),
                }
            }
        })
        .await;
        (result, ran)
    }

    #[tokio::test]
    async fn arguments_files_and_commands_are_put_in_place() {
        let root = tempfile::tempdir().expect("root");
        std::fs::write(root.path().join("notes.txt"), "line one\n").expect("file");
        let catalog = catalog_with(
            root.path(),
            "review",
            "---\nallowed-tools: Bash(git diff:*), read_file, WebFetch\nmodel: m\n---\n\
             Review $1 (mail a@b.com). See @notes.txt.\nDiff: !`git diff $1`\n",
        );
        let (expanded, ran) = expand_text(&catalog, root.path(), "/review src/a.rs").await;
        assert_eq!(ran, ["git diff src/a.rs"]);
        assert_eq!(
            expanded.expect("expanded"),
            "Review src/a.rs (mail a@b.com). See `notes.txt`:\n```\nline one\n```.\n\
             Diff: output of git diff src/a.rs"
        );
        let command = catalog.lookup("review").expect("review");
        assert_eq!(command.matter.model.as_deref(), Some("m"));
        let rules: Vec<String> = allow_rules(command)
            .expect("rules")
            .iter()
            .map(Rule::render)
            .collect();
        assert_eq!(rules, ["run_command(git diff *)", "read_file"]);
    }

    #[tokio::test]
    async fn arguments_are_never_read_for_commands_or_files() {
        let root = tempfile::tempdir().expect("root");
        std::fs::write(root.path().join("secret.txt"), "SECRET\n").expect("file");
        let catalog = catalog_with(root.path(), "r", "Review: $ARGUMENTS\nRan: !`git log $1`");
        let (expanded, ran) = expand_text(&catalog, root.path(), "/r !`id` @secret.txt").await;
        assert_eq!(ran, ["git log '!`id`'"]);
        let text = expanded.expect("expanded");
        assert!(text.starts_with("Review: !`id` @secret.txt\n"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
        // Not approved: the file's commands stay, marked, and none runs.
        let command = catalog.lookup("r").expect("r");
        let text = expand(command, "a", root.path(), false, |_| async {
            Err::<String, _>("ran".to_string())
        })
        .await
        .expect("expanded");
        assert_eq!(
            text,
            "Review: a\nRan: `git log $1` (not run: this command file is not approved)"
        );
    }

    #[tokio::test]
    async fn failures_are_errors() {
        let root = tempfile::tempdir().expect("root");
        let catalog = catalog_with(root.path(), "x", "A: !`false`");
        let (result, _) = expand_text(&catalog, root.path(), "/x").await;
        assert!(
            matches!(result, Err(SlashError::Command { .. })),
            "{result:?}"
        );
        let catalog = catalog_with(root.path(), "y", "See @../outside.txt");
        let (result, _) = expand_text(&catalog, root.path(), "/y").await;
        assert!(
            matches!(result, Err(SlashError::Include { .. })),
            "{result:?}"
        );
        let catalog = catalog_with(root.path(), "v", "Keep @Override and @team as words");
        let (result, _) = expand_text(&catalog, root.path(), "/v").await;
        assert_eq!(result, Ok("Keep @Override and @team as words".to_string()));
        let catalog = catalog_with(root.path(), "z", "See @missing.txt");
        let (result, _) = expand_text(&catalog, root.path(), "/z").await;
        assert!(
            matches!(result, Err(SlashError::Include { .. })),
            "{result:?}"
        );
        let catalog = catalog_with(root.path(), "w", "---\nallowed-tools: run_comand\n---\nx");
        let (result, _) = expand_text(&catalog, root.path(), "/w").await;
        assert!(
            matches!(result, Err(SlashError::BadFile { .. })),
            "{result:?}"
        );
    }
}
