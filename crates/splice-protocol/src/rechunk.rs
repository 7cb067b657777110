//! Re-chunking of streamed deltas so that no secret straddles two events.
//!
//! Redaction works on one line at a time, but a model streams its text in pieces: a key split
//! as `"…sk-ab"` + `"cd…"` would pass unseen. The re-chunker holds back the tail of a stream
//! that could be the start of a secret (a prefix of a secret value, or of a token shape such as
//! `sk-`), and releases it once more text shows what it is, or when anything else happens in
//! the run. The text is unchanged; only where the pieces are cut moves, and ordinary text
//! passes through as it came.

use crate::Event;
use crate::redact::Redactor;

/// How token shapes begin (see `redact.rs`): a word holding one of these may be a token still
/// arriving.
const TOKEN_HEADS: [&str; 16] = [
    "sk-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxo-",
    "xoxs-",
    "xoxr-",
    "AIza",
    "glpat-",
];
/// A PEM header has spaces in it, so it is followed across words.
const PEM_HEAD: &str = "-----BEGIN";
const PEM_HEADER_MAX: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Stream {
    Text,
    Reasoning,
    ToolArgs(String),
}

#[derive(Debug)]
struct Pending {
    stream: Stream,
    text: String,
}

#[derive(Debug)]
pub struct Rechunker {
    redactor: Redactor,
    /// Held tails, one per stream: a secret split around another stream's delta (text,
    /// reasoning, text) must not be released by it.
    pending: Vec<Pending>,
}

impl Rechunker {
    pub fn new(redactor: Redactor) -> Rechunker {
        Rechunker {
            redactor,
            pending: Vec::new(),
        }
    }

    /// The events to write for `event`, in order: held text first when the stream changes.
    pub fn push(&mut self, event: &Event) -> Vec<Event> {
        let mut out = Vec::new();
        let (stream, delta) = match event {
            Event::Text { delta } => (Stream::Text, delta),
            // Stage markers are Splice's own and must stay whole in one delta.
            Event::Reasoning { delta } if !delta.contains('\u{0}') => (Stream::Reasoning, delta),
            Event::ToolCallDelta { id, delta } => (Stream::ToolArgs(id.clone()), delta),
            other => {
                out.extend(self.flush());
                out.push(other.clone());
                return out;
            }
        };
        let mut text = match self.pending.iter().position(|p| p.stream == stream) {
            Some(at) => self.pending.remove(at).text,
            None => String::new(),
        };
        text.push_str(delta);
        if let Stream::ToolArgs(_) = stream {
            // JSON can spell a secret with escapes (`\u0065`) that no text match sees: hold the
            // arguments until they parse, then write them back out plainly, so redaction sees
            // the characters themselves.
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(value) => out.extend(to_event(Pending {
                    stream,
                    text: value.to_string(),
                })),
                Err(_) => self.pending.push(Pending { stream, text }),
            }
            return out;
        }
        let cut = self.safe_cut(&text);
        let rest = text.split_off(cut);
        if !text.is_empty() {
            out.extend(to_event(Pending {
                stream: stream.clone(),
                text,
            }));
        }
        if !rest.is_empty() {
            self.pending.push(Pending { stream, text: rest });
        }
        out
    }

    /// Release whatever is held (the run moves on, or ends), oldest stream first.
    pub fn flush(&mut self) -> Vec<Event> {
        self.pending.drain(..).filter_map(to_event).collect()
    }

    /// Where `text` may be cut: before a tail that could begin a secret, and never inside one.
    fn safe_cut(&self, text: &str) -> usize {
        let mut cut = text.len() - suspicious_tail(text, self.redactor.secret_values());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        // Moving the cut back to one secret's start may land it inside another: repeat.
        let spans = self.redactor.secret_spans(text);
        while let Some((start, _)) = spans.iter().find(|(start, end)| *start < cut && cut < *end) {
            cut = *start;
        }
        cut
    }
}

/// Bytes at the end of `text` that may be the beginning of a secret.
fn suspicious_tail(text: &str, secrets: &[String]) -> usize {
    let longest_prefix = |candidate: &str| {
        (1..candidate.len())
            .rev()
            .find(|&k| candidate.is_char_boundary(k) && text.ends_with(&candidate[..k]))
            .unwrap_or(0)
    };
    let mut hold = secrets.iter().map(|s| longest_prefix(s)).max().unwrap_or(0);
    let word_start = text
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map_or(0, |(i, c)| i + c.len_utf8());
    let word = &text[word_start..];
    for head in TOKEN_HEADS {
        let held = match word.rfind(head) {
            Some(at) => word.len() - at,
            None => longest_prefix(head),
        };
        hold = hold.max(held.min(word.len()));
    }
    let recent = text.len().saturating_sub(PEM_HEADER_MAX);
    let recent = (recent..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    if let Some(at) = text[recent..].rfind(PEM_HEAD) {
        hold = hold.max(text.len() - (recent + at));
    }
    hold.max(longest_prefix(PEM_HEAD))
}

fn to_event(pending: Pending) -> Option<Event> {
    if pending.text.is_empty() {
        return None;
    }
    Some(match pending.stream {
        Stream::Text => Event::text(pending.text),
        Stream::Reasoning => Event::reasoning(pending.text),
        Stream::ToolArgs(id) => Event::ToolCallDelta {
            id,
            delta: pending.text,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "supersecretvalue123";

    fn rechunker() -> Rechunker {
        Rechunker::new(Redactor::from_vars(vec![(
            "MY_API_KEY".to_string(),
            SECRET.to_string(),
        )]))
    }

    fn texts(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Text { delta } => Some(delta.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_secret_split_across_deltas_lands_in_one_event() {
        let mut r = rechunker();
        let mut out = r.push(&Event::text("The key is supersec"));
        out.extend(r.push(&Event::text(
            "retvalue123 and that is all there is to say about it, really.",
        )));
        out.extend(r.push(&Event::run_end(crate::exit::Exit::Success)));
        let pieces = texts(&out);
        assert_eq!(
            pieces.concat(),
            "The key is supersecretvalue123 and that is all there is to say about it, really."
        );
        assert!(pieces.iter().any(|p| p.contains(SECRET)), "{pieces:?}");
        assert!(matches!(out.last(), Some(Event::RunEnd { .. })));
    }

    #[test]
    fn other_events_flush_held_text_first() {
        let mut r = rechunker();
        let first = r.push(&Event::text("token sk-ab"));
        assert_eq!(
            first,
            vec![Event::text("token ")],
            "a possible token start is held"
        );
        let out = r.push(&Event::warning(crate::WarningCode::ProviderRetry, "m"));
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], Event::text("sk-ab"));
    }

    #[test]
    fn ordinary_text_keeps_its_chunks() {
        let mut r = rechunker();
        assert_eq!(r.push(&Event::text("Hello")), vec![Event::text("Hello")]);
        assert_eq!(
            r.push(&Event::text(", world.\n")),
            vec![Event::text(", world.\n")]
        );
        assert!(r.flush().is_empty());
    }

    #[test]
    fn a_token_split_across_deltas_is_redactable_whole() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let redactor = Redactor::from_vars(Vec::new());
        let mut r = Rechunker::new(redactor.clone());
        let mut out = r.push(&Event::text(format!("use {}", &token[..10])));
        out.extend(r.push(&Event::text(format!("{} now", &token[10..]))));
        out.extend(r.flush());
        for piece in texts(&out) {
            assert!(
                !piece.contains("ghp_") || piece.contains(token),
                "{piece:?}"
            );
        }
        assert_eq!(texts(&out).concat(), format!("use {token} now"));
    }

    #[test]
    fn stage_markers_pass_whole() {
        let mut r = rechunker();
        let marker = "\u{0}STAGE{\"stage\":\"code_writer\",\"status\":\"start\",\"iteration\":1,\"index\":1,\"total\":3}\u{0}";
        let out = r.push(&Event::reasoning(marker));
        assert_eq!(out, vec![Event::reasoning(marker)]);
    }

    #[test]
    fn escaped_secrets_in_tool_arguments_are_spelled_out_for_redaction() {
        let mut r = rechunker();
        let id = || "s1".to_string();
        let mut out = r.push(&Event::ToolCallDelta {
            id: id(),
            delta: r#"{"content":"key=supers\u0065cret"#.into(),
        });
        assert!(out.is_empty(), "incomplete arguments are held");
        out.extend(r.push(&Event::ToolCallDelta {
            id: id(),
            delta: r#"value123"}"#.into(),
        }));
        assert_eq!(
            out,
            vec![Event::ToolCallDelta {
                id: id(),
                delta: format!(r#"{{"content":"key={SECRET}"}}"#),
            }]
        );
    }

    #[test]
    fn separate_tool_argument_streams_do_not_mix() {
        let mut r = rechunker();
        let mut out = r.push(&Event::ToolCallDelta {
            id: "a".into(),
            delta: "{\"x\":".into(),
        });
        out.extend(r.push(&Event::ToolCallDelta {
            id: "b".into(),
            delta: "{\"y\":".into(),
        }));
        out.extend(r.flush());
        assert_eq!(
            out,
            vec![
                Event::ToolCallDelta {
                    id: "a".into(),
                    delta: "{\"x\":".into()
                },
                Event::ToolCallDelta {
                    id: "b".into(),
                    delta: "{\"y\":".into()
                },
            ]
        );
    }

    #[test]
    fn a_secret_split_around_another_stream_stays_held() {
        let mut r = rechunker();
        let mut out = r.push(&Event::text("The key is supersec"));
        out.extend(r.push(&Event::reasoning(".")));
        out.extend(r.push(&Event::text("retvalue123 ok")));
        out.extend(r.flush());
        let pieces = texts(&out);
        assert!(pieces.iter().any(|p| p.contains(SECRET)), "{pieces:?}");
        assert_eq!(pieces.concat(), "The key is supersecretvalue123 ok");
    }
}
