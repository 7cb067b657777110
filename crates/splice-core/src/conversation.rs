//! The conversation of one session: the messages of earlier runs, so a follow-up request sees
//! what came before (tool results included), the way a chat with an agent is expected to work.

use std::sync::{Arc, Mutex};

use crate::provider::Message;

/// Past this many characters of history the oldest exchanges are dropped, whole: a bound on
/// memory only. A conversation filling its model's window is compacted (summarised) by the run
/// long before this; see `compaction`.
const MAX_HISTORY_CHARS: usize = 16_000_000;
/// How much prose of earlier exchanges a pipeline's fresh stage conversations are told.
const MAX_RECAP_CHARS: usize = 12_000;

/// Shared by every clone of a session's run settings.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    messages: Arc<Mutex<Vec<Message>>>,
    /// How many leading messages the session file holds as they are now (see [`Unsaved`]).
    saved: Arc<Mutex<usize>>,
}

/// What a session file is missing of the conversation: keep the first `from` messages it has,
/// then these. A resumed session rebuilds the conversation from these records, so the model
/// gets back exactly what it had: its text, its tool calls and their results, denials included.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Unsaved {
    pub from: usize,
    pub messages: Vec<Message>,
}

fn size(message: &Message) -> usize {
    match message {
        Message::User { text, images } => {
            text.len() + images.iter().map(|i| i.data.len()).sum::<usize>()
        }
        Message::Assistant { text, tool_calls } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len())
                    .sum::<usize>()
        }
        Message::ToolResult {
            content, images, ..
        } => content.len() + images.iter().map(|i| i.data.len()).sum::<usize>(),
    }
}

impl Conversation {
    pub fn messages(&self) -> Vec<Message> {
        self.messages.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// A conversation of its own with these messages, shared with nobody, none of them saved
    /// yet (the next [`Conversation::unsaved`] holds them all).
    pub fn detached(&self) -> Conversation {
        Conversation {
            messages: Arc::new(Mutex::new(self.messages())),
            saved: Arc::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.messages.lock().map(|m| m.is_empty()).unwrap_or(true)
    }

    pub fn clear(&self) {
        if let Ok(mut messages) = self.messages.lock() {
            messages.clear();
        }
        self.mark_saved(0);
    }

    /// The session file holds the first `count` messages as they are.
    pub fn mark_saved(&self, count: usize) {
        if let Ok(mut saved) = self.saved.lock() {
            *saved = count;
        }
    }

    /// What changed since the last call (or [`Conversation::mark_saved`]), for the session
    /// file; `None` when nothing did.
    pub fn unsaved(&self) -> Option<Unsaved> {
        let messages = self.messages.lock().ok()?;
        let mut saved = self.saved.lock().ok()?;
        let from = (*saved).min(messages.len());
        if from == messages.len() && from == *saved {
            return None;
        }
        *saved = messages.len();
        Some(Unsaved {
            from,
            messages: messages[from..].to_vec(),
        })
    }

    /// Apply a session file's record (replaying a saved session).
    pub fn apply(&self, unsaved: Unsaved) {
        let mut messages = self.messages();
        messages.truncate(unsaved.from);
        messages.extend(unsaved.messages);
        self.replace(messages);
    }

    /// Keep `messages` as the history, dropping the oldest exchanges past the size limit. An
    /// exchange starts at a user message, so a tool call is never kept without its result.
    pub fn replace(&self, mut messages: Vec<Message>) {
        let mut total: usize = messages.iter().map(size).sum();
        while total > MAX_HISTORY_CHARS {
            let next_start = messages
                .iter()
                .skip(1)
                .position(|m| matches!(m, Message::User { .. }))
                .map(|p| p + 1);
            let Some(cut) = next_start else { break };
            total -= messages[..cut].iter().map(size).sum::<usize>();
            messages.drain(..cut);
        }
        if let Ok(mut stored) = self.messages.lock() {
            // What the session file holds stays valid up to the first message that changed.
            let same = stored
                .iter()
                .zip(&messages)
                .take_while(|(a, b)| a == b)
                .count();
            if let Ok(mut saved) = self.saved.lock() {
                *saved = (*saved).min(same);
            }
            *stored = messages;
        }
    }

    /// Add one exchange told in prose (a pipeline run, a resumed session).
    pub fn push_exchange(&self, request: &str, answer: &str) {
        let mut messages = self.messages();
        messages.push(Message::User {
            text: request.to_string(),
            images: Vec::new(),
        });
        messages.push(Message::Assistant {
            text: answer.to_string(),
            tool_calls: Vec::new(),
        });
        self.replace(messages);
    }

    /// Tell the model something that happened outside its runs (an `/undo`), as a user
    /// message of its own so that it stays in the history and in every recap.
    pub fn push_note(&self, note: &str) {
        let mut messages = self.messages();
        messages.push(Message::User {
            text: note.to_string(),
            images: Vec::new(),
        });
        self.replace(messages);
    }

    /// `request` with the prose of earlier exchanges before it, newest kept, for pipeline stages
    /// that start fresh conversations.
    pub fn with_recap(&self, request: &str) -> String {
        let mut pieces = Vec::new();
        let mut used = 0;
        for message in self.messages().iter().rev() {
            let piece = match message {
                Message::User { text, .. } => format!("User: {text}"),
                Message::Assistant { text, .. } if !text.trim().is_empty() => {
                    format!("Assistant: {text}")
                }
                _ => continue,
            };
            used += piece.len();
            if used > MAX_RECAP_CHARS {
                break;
            }
            pieces.push(piece);
        }
        if pieces.is_empty() {
            return request.to_string();
        }
        pieces.reverse();
        format!(
            "Earlier in this session:\n\n{}\n\nNew request:\n{request}",
            pieces.join("\n\n")
        )
    }
}

/// What the model is told after `/undo` put `files` back.
pub fn undo_note(files: &[String]) -> String {
    format!(
        "[Note from Splice, not a request: the user ran /undo, which restored {} to the state \
         before your last change. That change is gone; read the files again before relying on \
         their content.]",
        files.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCallRequest;

    fn user(text: &str) -> Message {
        Message::User {
            text: text.into(),
            images: vec![],
        }
    }

    #[test]
    fn trimming_drops_whole_exchanges_from_the_front() {
        let conversation = Conversation::default();
        let big = "x".repeat(MAX_HISTORY_CHARS / 2);
        conversation.replace(vec![
            user(&big),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "c".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::ToolResult {
                call_id: "c".into(),
                content: big.clone(),
                is_error: false,
                images: Vec::new(),
            },
            user("second"),
            Message::Assistant {
                text: "ok".into(),
                tool_calls: vec![],
            },
        ]);
        let kept = conversation.messages();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0], user("second"));
    }

    #[test]
    fn recap_tells_earlier_prose_before_the_request() {
        let conversation = Conversation::default();
        assert_eq!(conversation.with_recap("now"), "now");
        conversation.push_exchange("fix add", "Fixed it.");
        assert_eq!(
            conversation.with_recap("now test it"),
            "Earlier in this session:\n\nUser: fix add\n\nAssistant: Fixed it.\n\nNew request:\nnow test it"
        );
        let clone = conversation.clone();
        clone.clear();
        assert!(conversation.is_empty());
    }

    #[test]
    fn unsaved_holds_what_changed_and_apply_rebuilds_it_exactly() {
        let live = Conversation::default();
        let call = Message::Assistant {
            text: "I'll fix the operator.".into(),
            tool_calls: vec![ToolCallRequest {
                id: "c1".into(),
                name: "edit_file".into(),
                arguments: "{}".into(),
            }],
        };
        let denied = Message::ToolResult {
            call_id: "c1".into(),
            content: "denied: headless run has no interactive responder".into(),
            is_error: true,
            images: Vec::new(),
        };
        live.replace(vec![user("fix add"), call.clone(), denied.clone()]);
        let first = live.unsaved().unwrap_or_else(|| panic!("nothing unsaved"));
        assert_eq!(first.from, 0);
        assert_eq!(live.unsaved(), None, "saved twice");
        live.push_note("a note");
        let second = live.unsaved().unwrap_or_else(|| panic!("nothing unsaved"));
        assert_eq!(second.from, 3);
        assert_eq!(second.messages, [user("a note")]);
        // A compaction rewrites the start: the next record starts from 0 again.
        live.replace(vec![user("summary"), user("a note")]);
        let third = live.unsaved().unwrap_or_else(|| panic!("nothing unsaved"));
        assert_eq!(third.from, 0);

        // Through JSON, as the session file keeps them.
        let replayed = Conversation::default();
        let mut after_first = Vec::new();
        for (n, record) in [first, second, third].into_iter().enumerate() {
            let text = serde_json::to_string(&record).expect("serialise record");
            replayed.apply(serde_json::from_str(&text).expect("parse text"));
            if n == 0 {
                after_first = replayed.messages();
            }
        }
        // The tool call and its denied result come back as they were, not as prose.
        assert_eq!(after_first, [user("fix add"), call, denied]);
        assert_eq!(replayed.messages(), live.messages());
    }
}
