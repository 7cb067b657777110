//! Custom slash commands from markdown files, expanded by the session before the turn is sent:
//! headless through the real binary, and a session's turns for `allowed-tools`; attacks by
//! arguments, attachments and planted or changed project command files.

mod attacks;
mod headless;
mod turn_rules;

use crate::support::Sandbox;
use crate::support::fake_provider::Recorded;

/// Approve the project command `name` as it is now, as a person would in the TUI.
pub(crate) fn approve(sandbox: &Sandbox, name: &str) {
    let catalog = splice::slash::Catalog::load(&sandbox.root, None);
    let command = catalog.lookup(name).expect("the command");
    splice::slash::approve(
        &splice::layout::Layout::at(&sandbox.data),
        &sandbox.root,
        command,
    )
    .expect("approve");
}

/// Every text the model was sent in `request` (its messages), joined.
pub(crate) fn sent_text(request: &Recorded) -> String {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| match &message["content"] {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
