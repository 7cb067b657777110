//! The stage-marker codec: `\x00STAGE` + one JSON object + `\x00`, carried in `reasoning.delta`.

use serde::{Deserialize, Serialize};

pub const MARKER_PREFIX: &str = "\u{0}STAGE";
const MARKER_END: char = '\u{0}';

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    Start,
    Done,
    Failed,
    Skipped,
}

impl StageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StageStatus::Start => "start",
            StageStatus::Done => "done",
            StageStatus::Failed => "failed",
            StageStatus::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageMarker {
    pub stage: String,
    pub status: StageStatus,
    pub iteration: u32,
    pub index: u32,
    pub total: u32,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
    /// The design-plan task the stage belongs to, when tasks run side by side (`--jobs`).
    #[serde(rename = "taskId", skip_serializing_if = "Option::is_none", default)]
    pub task_id: Option<String>,
}

impl StageMarker {
    /// The marker as it is embedded in a `reasoning.delta`.
    pub fn encode(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{MARKER_PREFIX}{json}{MARKER_END}")
    }
}

/// A piece of reasoning text: plain text to show, or a decoded marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasoningPiece {
    Text(String),
    Marker(StageMarker),
}

/// Split reasoning text into plain text and markers. A malformed marker is dropped whole so
/// its raw bytes never reach a screen; a stray NUL is removed for the same reason.
pub fn split_markers(text: &str) -> Vec<ReasoningPiece> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find(MARKER_PREFIX) {
        push_text(&mut pieces, &rest[..start]);
        let after = &rest[start + MARKER_PREFIX.len()..];
        match after.find(MARKER_END) {
            Some(end) => {
                if let Ok(marker) = serde_json::from_str::<StageMarker>(&after[..end]) {
                    pieces.push(ReasoningPiece::Marker(marker));
                }
                rest = &after[end + 1..];
            }
            None => {
                rest = "";
            }
        }
    }
    push_text(&mut pieces, rest);
    pieces
}

fn push_text(pieces: &mut Vec<ReasoningPiece>, text: &str) {
    let clean: String = text.chars().filter(|c| *c != '\u{0}').collect();
    if !clean.is_empty() {
        pieces.push(ReasoningPiece::Text(clean));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(status: StageStatus) -> StageMarker {
        StageMarker {
            stage: "test_runner".into(),
            status,
            iteration: 1,
            index: 5,
            total: 6,
            ms: None,
            detail: None,
            task_id: None,
        }
    }

    #[test]
    fn encodes_exactly_as_decisions_example() {
        assert_eq!(
            marker(StageStatus::Start).encode(),
            "\u{0}STAGE{\"stage\":\"test_runner\",\"status\":\"start\",\"iteration\":1,\"index\":5,\"total\":6}\u{0}"
        );
    }

    #[test]
    fn splits_text_and_markers() {
        let mut done = marker(StageStatus::Done);
        done.ms = Some(12);
        let text = format!(
            "before\n{}mid{}",
            marker(StageStatus::Start).encode(),
            done.encode()
        );
        assert_eq!(
            split_markers(&text),
            vec![
                ReasoningPiece::Text("before\n".into()),
                ReasoningPiece::Marker(marker(StageStatus::Start)),
                ReasoningPiece::Text("mid".into()),
                ReasoningPiece::Marker(done),
            ]
        );
    }

    #[test]
    fn malformed_marker_leaves_no_nul() {
        let pieces = split_markers("a\u{0}STAGE{not json}\u{0}b\u{0}");
        assert_eq!(
            pieces,
            vec![
                ReasoningPiece::Text("a".into()),
                ReasoningPiece::Text("b".into())
            ]
        );
    }
}
