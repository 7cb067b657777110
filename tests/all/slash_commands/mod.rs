//! Custom slash commands from markdown files, expanded by the session before the turn is sent:
//! headless through the real binary, and a session's turns for `allowed-tools`.

mod headless;
mod turn_rules;

use crate::support::fake_provider::Recorded;

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
