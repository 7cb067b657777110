//! Slash commands: a table of name, argument hint, help and handler. New commands (logins,
//! package commands) are added with [`App::register_command`]; the composer only ever sees the
//! names and help texts.

use super::{App, Request};
use crate::cells::Level;
use crate::composer::CommandHint;
use splice_core::permissions::PermissionMode;
use splice_core::sanitize::terminal::strip_controls;
use splice_core::session::{LoginTarget, Op, RulesOp, RulesReport};
use splice_core::settings::Tier;

pub type Handler = fn(&mut App, &str);

#[derive(Clone)]
pub struct CommandSpec {
    pub name: &'static str,
    /// Shown in the popup; empty for a command that takes no argument.
    pub args: &'static str,
    pub help: &'static str,
    pub run: Handler,
}

impl CommandSpec {
    pub fn hint(&self) -> CommandHint {
        CommandHint {
            name: self.name.to_string(),
            args: self.args.to_string(),
            help: self.help.to_string(),
        }
    }
}

/// A custom command in the popup: its `argument-hint`, or `[ARGUMENTS]` when its body takes
/// arguments without one (so choosing it waits for them).
pub fn custom_hint(command: &splice_core::slash::CommandFile) -> CommandHint {
    let args = match &command.matter.argument_hint {
        Some(hint) => hint.clone(),
        None if command.body.contains("$ARGUMENTS")
            || (1..=9).any(|n| command.body.contains(&format!("${n}"))) =>
        {
            "[ARGUMENTS]".to_string()
        }
        None => String::new(),
    };
    CommandHint {
        name: command.name.clone(),
        args: strip_controls(&args).into_owned(),
        help: strip_controls(&command.help()).into_owned(),
    }
}

pub fn builtin() -> Vec<CommandSpec> {
    vec![
        CommandSpec {
            name: "help",
            args: "",
            help: "commands and keys",
            run: help,
        },
        CommandSpec {
            name: "model",
            args: "[NAME]",
            help: "show or switch the model",
            run: model,
        },
        CommandSpec {
            name: "tier",
            args: "[auto|light|standard|full]",
            help: "show or set the request tier",
            run: tier,
        },
        CommandSpec {
            name: "mode",
            args: "[ask|accept-edits|auto|read-only]",
            help: "show or set the permission mode",
            run: mode,
        },
        CommandSpec {
            name: "permissions",
            args: "[remove N|clear]",
            help: "list this session's allow rules, or remove them",
            run: permissions,
        },
        CommandSpec {
            name: "undo",
            args: "",
            help: "restore the files before the last change",
            run: undo,
        },
        CommandSpec {
            name: "clear",
            args: "",
            help: "clear the transcript and the model's memory of this session",
            run: clear,
        },
        CommandSpec {
            name: "compact",
            args: "",
            help: "summarise the earlier part of the conversation to free context",
            run: compact,
        },
        CommandSpec {
            name: "mcp",
            args: "",
            help: "MCP servers: state, tools, last error; approve a project's servers",
            run: mcp,
        },
        CommandSpec {
            name: "cost",
            args: "",
            help: "tokens and cost so far",
            run: cost,
        },
        CommandSpec {
            name: "login",
            args: "[URL|scribiz]",
            help: "sign in to the package registry (SPLICE_REGISTRY or config `registry`), or to Scribiz",
            run: login,
        },
        CommandSpec {
            name: "quit",
            args: "",
            help: "leave Splice",
            run: quit,
        },
    ]
}

fn help(app: &mut App, _: &str) {
    let mut text = String::from("Commands:\n");
    for spec in &app.commands {
        let name = if spec.args.is_empty() {
            format!("/{}", spec.name)
        } else {
            format!("/{} {}", spec.name, spec.args)
        };
        text.push_str(&format!("  {name:<40} {}\n", spec.help));
    }
    if !app.custom_commands().is_empty() {
        text.push_str(
            "Custom commands (.splice/commands/, .claude/commands/, the user's commands/):\n",
        );
        for custom in app.custom_commands() {
            let hint = custom_hint(custom);
            let name = format!("/{} {}", hint.name, hint.args);
            // A file's text is shown: no terminal controls from it.
            let line = format!("  {:<40} {}", name.trim_end(), hint.help);
            text.push_str(&strip_controls(&line));
            text.push('\n');
        }
    }
    text.push_str(
        "Keys: Enter send · Alt+Enter or Ctrl-J newline · Up/Down history · Tab complete\n\
         PageUp/PageDown or wheel scroll · Ctrl-O fold/unfold the newest tool result or diff\n\
         Ctrl-U delete to the start of the line\n\
         Ctrl-T show/hide failed pipeline stages' full detail\n\
         Enter during a run queues the request; it starts when the run ends\n\
         Esc or Ctrl-C interrupt the run (queued requests go back to the composer) · Ctrl-C twice quit",
    );
    app.notice(Level::Info, text);
}

fn mcp(app: &mut App, _: &str) {
    app.open_mcp_overlay();
}

/// `/model NAME`: the session resolves `name` (an alias of another provider whose key is not
/// set is refused, with the reason) and reports the model it applied, which is shown.
fn model(app: &mut App, args: &str) {
    let name = args.trim();
    if name.is_empty() {
        let text = format!(
            "model: {} ({})",
            app.settings.provider.model,
            app.settings.provider.kind.name()
        );
        app.notice(Level::Info, text);
        return;
    }
    app.submit_op(Op::SetModel(name.to_string()));
}

fn tier(app: &mut App, args: &str) {
    let name = args.trim();
    if name.is_empty() {
        app.notice(Level::Info, format!("tier: {}", app.settings.tier.as_str()));
        return;
    }
    match Tier::parse(name) {
        // Shown when the session reports it applied.
        Some(tier) => app.submit_op(Op::SetTier(tier)),
        None => app.notice(
            Level::Error,
            format!(
                "unknown tier `{name}` (expected {})",
                Tier::NAMES.join(", ")
            ),
        ),
    }
}

fn mode(app: &mut App, args: &str) {
    let name = args.trim();
    if name.is_empty() {
        let text = format!("permission mode: {}", app.settings.policy.mode.as_str());
        app.notice(Level::Info, text);
        return;
    }
    match PermissionMode::parse(name) {
        // Shown when the session reports it applied.
        Some(mode) => app.submit_op(Op::SetPermissionMode(mode)),
        None => app.notice(
            Level::Error,
            format!(
                "unknown permission mode `{name}` (expected {})",
                PermissionMode::NAMES.join(", ")
            ),
        ),
    }
}

/// `/permissions`: the rules "allow always" added this session, numbered; `remove N` or
/// `remove RULE` drops one, `clear` all of them. Rules from the config and flags are counted
/// too but stay: they are changed where they were given. The session keeps the rules and
/// answers ([`rules_notice`]).
fn permissions(app: &mut App, args: &str) {
    let mut words = args.split_whitespace();
    let op = match (words.next(), words.collect::<Vec<_>>().join(" ")) {
        (None, _) => RulesOp::List,
        (Some("clear"), rest) if rest.is_empty() => RulesOp::Clear,
        (Some("remove" | "rm"), which) if !which.is_empty() => RulesOp::Remove(which),
        _ => {
            return app.notice(
                Level::Error,
                "usage: /permissions, /permissions remove N, /permissions clear",
            );
        }
    };
    app.submit_op(Op::Rules(op));
}

/// What the session's answer to `/permissions` says, made safe to show.
pub fn rules_notice(report: RulesReport) -> (Level, String) {
    let (level, text) = match report {
        RulesReport::Listed { session, given } => {
            let mut text = if session.is_empty() {
                "no session allow rules (\"allow always\" adds them)".to_string()
            } else {
                let mut text = String::from("session allow rules:");
                for (n, rule) in session.iter().enumerate() {
                    text.push_str(&format!("\n  {}. {rule}", n + 1));
                }
                text.push_str("\n/permissions remove N removes one, /permissions clear all");
                text
            };
            if given > 0 {
                text.push_str(&format!(
                    "\n{given} more from the config and flags (change them there)"
                ));
            }
            (Level::Info, text)
        }
        RulesReport::Cleared(removed) => (
            Level::Info,
            format!("removed {removed} session allow rules"),
        ),
        RulesReport::Removed(rule) => (Level::Info, format!("removed {rule}")),
        RulesReport::NotFound(which) => (
            Level::Error,
            format!("no session rule `{which}` (/permissions lists them)"),
        ),
    };
    (level, strip_controls(&text).into_owned())
}

fn undo(app: &mut App, _: &str) {
    if app.is_running() {
        app.notice(
            Level::Warning,
            "wait for the run to end (or press Esc) before /undo",
        );
        return;
    }
    // Taken now: a second `/undo` before the session reports goes further back.
    let Some((run_id, sequence)) = app.checkpoints.pop() else {
        app.notice(Level::Info, "nothing to undo");
        return;
    };
    // The session restores the files and tells the model; it reports back (`App::on_session`).
    app.submit_op(Op::Undo { run_id, sequence });
}

/// The transcript's line for an `/undo`, live and replayed: of `files`, those in `deleted`
/// did not exist at the checkpoint (the change created them), so the undo removed them.
pub fn undo_text(files: &[String], deleted: &[String]) -> String {
    format!("undo: {}", restore_text(files, deleted))
}

/// What a restore did, in [`undo_text`]'s words without its `undo: ` (a `restore` event's).
pub fn restore_text(files: &[String], deleted: &[String]) -> String {
    let restored: Vec<&str> = files
        .iter()
        .filter(|f| !deleted.contains(f))
        .map(String::as_str)
        .collect();
    let mut parts = Vec::new();
    if !restored.is_empty() {
        parts.push(format!("restored {}", restored.join(", ")));
    }
    if !deleted.is_empty() {
        parts.push(format!(
            "deleted {} (created by the change)",
            deleted.join(", ")
        ));
    }
    if parts.is_empty() {
        "no file needed restoring".to_string()
    } else {
        parts.join("; ")
    }
}

/// A fresh start: the screen, and what the model remembers of this session (the session
/// forgets its conversation and reports it, for the log).
fn clear(app: &mut App, _: &str) {
    forget(app);
    app.submit_op(Op::Clear);
}

/// What `/clear` drops of the screen, live and when a session is reopened.
pub fn forget(app: &mut App) {
    app.transcript.clear();
    app.streaming = None;
    app.pipeline.reset();
    app.context_tokens = None;
}

/// `/compact`: refused during a run, which is still adding to the conversation (a request
/// typed during a compaction waits for it instead).
fn compact(app: &mut App, _: &str) {
    if app.is_running() || !app.queued.is_empty() {
        app.notice(
            Level::Warning,
            "wait for the run to end (or press Esc) before /compact: the run is still adding to \
             the conversation",
        );
        return;
    }
    if app.compacting() {
        app.notice(Level::Info, "already compacting (Esc cancels)");
        return;
    }
    app.start_compaction();
}

fn cost(app: &mut App, _: &str) {
    let text = format!(
        "{} tokens ({} requests) · {}",
        app.usage.tokens,
        app.usage.requests,
        app.usage.cost_text()
    );
    app.notice(Level::Info, text);
}

/// `/login [URL]`: the device-code modal for the registry given, else the configured one;
/// `/login scribiz`: the Scribiz CLI's own device-code login in the same modal. The session
/// runs the login (saving its credential as `splice login` does) and reports it; Esc cancels.
fn login(app: &mut App, args: &str) {
    let given = Some(args.trim()).filter(|a| !a.is_empty());
    let target = match given {
        Some("scribiz") => LoginTarget::Scribiz,
        given => LoginTarget::Registry(given.map(str::to_string)),
    };
    app.submit_op(Op::Login(target));
}

fn quit(app: &mut App, _: &str) {
    app.request(Request::Quit);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cells::Cell;
    use crate::snapshot_tests::app;
    use splice_core::session::SessionEvent;

    fn last_notice(app: &App) -> String {
        match app.transcript.last() {
            Some(Cell::Notice(_, text)) => text.clone(),
            other => panic!("no notice: {other:?}"),
        }
    }

    /// The names a command file cannot take are the TUI's own commands, every one of them.
    #[test]
    fn every_builtin_command_is_reserved_from_command_files() {
        for spec in builtin() {
            assert!(
                splice_core::slash::RESERVED.contains(&spec.name),
                "/{}",
                spec.name
            );
        }
    }

    /// `/undo` asks the session for the newest checkpoint; its report is shown, and the
    /// checkpoint is used up. A file the change created was deleted, and is said to be.
    #[test]
    fn undo_asks_the_session_and_says_a_created_file_was_deleted_and_an_edited_one_restored() {
        let mut app = app();
        app.checkpoints.push(("run_1".into(), 1));
        app.checkpoints.push(("run_2".into(), 1));
        undo(&mut app, "");
        let asked: Vec<_> = app
            .take_ops()
            .into_iter()
            .filter_map(|op| match op {
                Op::Undo { run_id, sequence } => Some((run_id, sequence)),
                _ => None,
            })
            .collect();
        assert_eq!(asked, vec![("run_2".to_string(), 1)]);
        app.on_session(SessionEvent::Undone(splice_core::session::Undone {
            run_id: "run_2".into(),
            sequence: 1,
            files: vec!["old.txt".into(), "new.txt".into()],
            deleted: vec!["new.txt".into()],
            skipped: vec![],
            left_alone: None,
        }));
        assert_eq!(
            last_notice(&app),
            "undo: restored old.txt; deleted new.txt (created by the change)"
        );
        assert_eq!(app.checkpoints, vec![("run_1".to_string(), 1)]);
        assert_eq!(undo_text(&[], &[]), "undo: no file needed restoring");
    }

    /// `/clear` clears the screen and asks the session to forget the conversation: the app
    /// keeps none of it.
    #[test]
    fn clear_asks_the_session_to_forget() {
        let mut app = app();
        app.notice(Level::Info, "something");
        clear(&mut app, "");
        assert!(app.transcript.last().is_none());
        assert!(matches!(&app.take_ops()[..], [Op::Clear]));
    }

    /// `/model`, `/tier` and `/mode` are asked of the session, and the app shows what the
    /// session reports it applied: a model the session refuses leaves the old one shown.
    #[test]
    fn settings_are_shown_as_the_session_applied_them_and_a_refused_model_leaves_the_old_one() {
        let mut app = app();
        let before = app.settings.provider.clone();
        let tier_before = app.settings.tier;
        model(&mut app, "acme/x");
        tier(&mut app, "full");
        mode(&mut app, "read-only");
        let ops = app.take_ops();
        assert!(
            matches!(
                &ops[..],
                [Op::SetModel(name), Op::SetTier(Tier::Full), Op::SetPermissionMode(PermissionMode::ReadOnly)]
                    if name == "acme/x"
            ),
            "{}",
            ops.len()
        );
        // Nothing shown changes before the session says so.
        assert_eq!(app.settings.provider, before);
        assert_eq!(app.settings.tier, tier_before);
        app.on_session(SessionEvent::Refused {
            reason: "unknown provider `acme`".into(),
        });
        assert_eq!(app.settings.provider, before);
        assert_eq!(last_notice(&app), "unknown provider `acme`");

        let mut applied = before.clone();
        applied.model = "gpt-4o".into();
        applied.api_model = "gpt-4o".into();
        app.on_session(SessionEvent::ModelSet(applied.clone()));
        assert_eq!(app.settings.provider, applied);
        assert_eq!(last_notice(&app), "model set to gpt-4o (openai)");
        app.on_session(SessionEvent::TierSet(Tier::Full));
        assert_eq!(app.settings.tier, Tier::Full);
        app.on_session(SessionEvent::ModeSet(PermissionMode::ReadOnly));
        assert_eq!(app.settings.policy.mode, PermissionMode::ReadOnly);
        assert_eq!(last_notice(&app), "permission mode set to read-only");
    }
}
