//! `session/load`: a saved session's conversation, rebuilt from its log as the terminal UI
//! rebuilds it, and its history replayed to the client as updates.

use std::path::Path;

use agent_client_protocol::v1::schema::SessionUpdate;

use crate::updates::{Translator, chunk};
use splice_core::conversation::Conversation;
use splice_core::layout::Layout;
use splice_core::session::log::{Record, SessionError, load, started_in, typed_request};

/// A saved session, read back.
pub(crate) struct Loaded {
    pub(crate) conversation: Conversation,
    pub(crate) updates: Vec<SessionUpdate>,
}

/// Read session `id` of `layout`, which must have been started in `cwd`.
pub(crate) fn read(layout: &Layout, id: &str, cwd: &Path) -> Result<Vec<Record>, SessionError> {
    let records = load(layout, id)?;
    if let Some(started) = started_in(&records)
        && Path::new(started) != cwd
    {
        return Err(SessionError::Elsewhere {
            id: id.to_string(),
            cwd: started.to_string(),
        });
    }
    Ok(records)
}

/// The conversation the records leave (exact where the log kept it, `Record::Memory`), and
/// the updates that show the session as it went: each request as the person's message, then
/// what the runs said and did.
pub(crate) fn replay(records: Vec<Record>, translator: &mut Translator) -> Loaded {
    let conversation = Conversation::default();
    let mut updates = Vec::new();
    for record in records {
        match record {
            Record::Session { .. } => {}
            Record::Prompt { text } => {
                updates.push(SessionUpdate::UserMessageChunk(chunk(typed_request(&text))));
            }
            Record::Event { event, .. } => updates.extend(translator.event(None, &event)),
            Record::Memory(unsaved) => conversation.apply(unsaved),
            Record::Clear => conversation.clear(),
            Record::Undo { files, .. } => {
                if !files.is_empty() {
                    conversation.push_note(&splice_core::conversation::undo_note(&files));
                }
            }
        }
    }
    Loaded {
        conversation,
        updates,
    }
}
