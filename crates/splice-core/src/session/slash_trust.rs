//! Whether an invoked command's `` !`…` `` commands and `allowed-tools` take effect: a
//! user's command always; a project's (which the model can write) once the person approved
//! that file as it is now ([`crate::slash::approve`]). Not approved yet, the person is asked
//! where a front end answers questions (the TUI's prompt, the editor's permission request),
//! showing what the file would run and allow; headless nobody is asked. A file not approved
//! is still sent, as plain text: its commands do not run, its rules allow nothing, and a
//! `command_unapproved` warning says so. A project command that takes the place of the
//! user's own says so too (`command_shadowed`).

use crate::bus::{AlwaysScope, Answer, Bus, Preview};
use crate::protocol::events::Risk;
use crate::protocol::{Event, SideEffect, WarningCode};
use crate::settings::RunSettings;
use crate::slash::{self, CommandFile};
use crate::tools::runner::{Question, ToolRunner, answer_decision};

/// Whether `command`'s commands and rules take effect for this request; warnings for what
/// the person should know (shadowing, no approval).
pub(super) async fn trusted(
    settings: &RunSettings,
    bus: &Bus,
    runner: &ToolRunner,
    command: &CommandFile,
) -> bool {
    let shown = shown_path(settings, command);
    if let Some(user) = &command.shadows {
        bus.emit(Event::warning(
            WarningCode::CommandShadowed,
            format!(
                "/{} is the project's {shown}, which takes the place of your own command {}",
                command.name,
                user.display()
            ),
        ));
    }
    if !slash::needs_approval(command) {
        return true;
    }
    let (layout, root) = (&settings.layout, &settings.cwd);
    if crate::blocking::atomic(|| slash::is_approved(layout, root, command)) {
        return true;
    }
    let commands = slash::body_commands(&command.body);
    let what = summary(command, &commands);
    if bus.has_responder() {
        let id = format!("slash_{}_approval", bus.run_id());
        let tool = format!("/{}", command.name);
        let answer = runner
            .ask_person(Question {
                id: &id,
                tool: &tool,
                side_effect: if commands.is_empty() {
                    SideEffect::Write
                } else {
                    SideEffect::Execute
                },
                risk: Some(Risk::Medium),
                reason: format!(
                    "the project's command file {shown} {what}; it has not been approved (or it \
                     changed since it was)"
                ),
                rule: format!("{shown} as it is now, in this project"),
                previews: vec![Preview::Note(details(command, &commands, &shown))],
                // The approval is kept in the data dir (`slash::approve`).
                always: AlwaysScope::Kept,
            })
            .await;
        if answer == Some(Answer::AllowAlways) {
            let saved = crate::blocking::atomic(|| slash::approve(layout, root, command));
            if let Err(error) = saved {
                bus.emit(Event::warning(
                    WarningCode::CommandUnapproved,
                    format!(
                        "the approval of {shown} could not be saved ({error}); it is asked about \
                         again next time"
                    ),
                ));
            }
        }
        if runner
            .decide(&id, &tool, answer_decision(answer.as_ref()))
            .is_ok()
        {
            return true;
        }
    }
    bus.emit(Event::warning(
        WarningCode::CommandUnapproved,
        format!(
            "/{}: the project's command file {shown} {what}, and nobody approved it as it is \
             now: it was sent as plain text, none of its commands ran and its allowed-tools \
             allow nothing; invoke it in the interactive TUI to approve it",
            command.name
        ),
    ));
    false
}

/// The file's path as shown: in the project.
fn shown_path(settings: &RunSettings, command: &CommandFile) -> String {
    let path = command.path.strip_prefix(&settings.cwd);
    path.unwrap_or(&command.path).display().to_string()
}

/// What the file would do, in a phrase: `would run `a`, `b` and allow Bash`.
fn summary(command: &CommandFile, commands: &[&str]) -> String {
    let mut parts = Vec::new();
    if !commands.is_empty() {
        let quoted: Vec<String> = commands.iter().map(|c| format!("`{c}`")).collect();
        parts.push(format!("would run {}", quoted.join(", ")));
    }
    if !command.matter.allowed_tools.is_empty() {
        parts.push(format!(
            "would allow {}",
            command.matter.allowed_tools.join(", ")
        ));
    }
    parts.join(" and ")
}

/// Everything the approval covers, for the question.
fn details(command: &CommandFile, commands: &[&str], shown: &str) -> String {
    let mut text = format!("{shown}\n");
    if let Some(user) = &command.shadows {
        text.push_str(&format!(
            "takes the place of your own /{} ({})\n",
            command.name,
            user.display()
        ));
    }
    if !command.matter.allowed_tools.is_empty() {
        text.push_str(&format!(
            "\nallowed-tools (for the request it makes): {}\n",
            command.matter.allowed_tools.join(", ")
        ));
    }
    if !commands.is_empty() {
        text.push_str("\ncommands it runs before the request is sent:\n");
        for line in commands {
            text.push_str(&format!("  {line}\n"));
        }
    }
    if let Some(model) = &command.matter.model {
        text.push_str(&format!("\nmodel: {model}\n"));
    }
    text
}
