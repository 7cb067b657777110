//! A `tools/call` result as Splice hands it on ([`McpOutput`]): text as is, images the
//! providers accept as images, everything else (audio, resource links, embedded resources,
//! `structuredContent`) described as text. What is kept is capped, so a huge result cannot
//! grow memory further.

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use super::hub::McpOutput;
use crate::protocol::input::{IMAGE_MEDIA_TYPES, Image};
use crate::sanitize::terminal::strip_controls;

/// Most text kept of one result (the runner cuts further for the model).
pub const MAX_TEXT_BYTES: usize = 4 * 1024 * 1024;
/// Most base64 kept of one result's images, all together (each also at most this: the
/// strictest provider limit for one image is 5 MB).
pub const MAX_IMAGE_BASE64_BYTES: usize = 5 * 1024 * 1024;

pub fn output(result: CallToolResult) -> McpOutput {
    let mut text = Text::default();
    let mut images = Vec::new();
    let mut image_bytes = 0usize;
    for block in result.content {
        match block {
            ContentBlock::Text(t) => text.push(&t.text),
            ContentBlock::Image(image) => {
                let size = image.data.len();
                let media_type = image.mime_type.to_ascii_lowercase();
                let decodes = base64::engine::general_purpose::STANDARD
                    .decode(image.data.as_bytes())
                    .is_ok();
                if !IMAGE_MEDIA_TYPES.contains(&media_type.as_str()) {
                    text.push(&format!(
                        "[image: {}, {size} bytes of base64, not a type providers accept]",
                        clean(&image.mime_type)
                    ));
                } else if !decodes {
                    text.push(&format!("[image: {media_type}, invalid base64, left out]"));
                } else if image_bytes + size > MAX_IMAGE_BASE64_BYTES {
                    text.push(&format!(
                        "[image: {media_type}, {size} bytes of base64, left out: over the {} MB of images a result may carry]",
                        MAX_IMAGE_BASE64_BYTES / (1024 * 1024)
                    ));
                } else {
                    image_bytes += size;
                    images.push(Image {
                        media_type,
                        data: image.data,
                    });
                }
            }
            ContentBlock::Audio(audio) => text.push(&format!(
                "[audio: {}, {} bytes of base64]",
                clean(&audio.mime_type),
                audio.data.len()
            )),
            ContentBlock::ResourceLink(link) => {
                let mime = link
                    .mime_type
                    .as_deref()
                    .map(|m| format!(" ({})", clean(m)))
                    .unwrap_or_default();
                text.push(&format!(
                    "[resource link: {} <{}>{mime}]",
                    clean(&link.name),
                    clean(&link.uri)
                ));
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents {
                    uri, text: body, ..
                } => {
                    text.push(&format!("[resource: <{}>]", clean(&uri)));
                    text.push(&body);
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => text.push(&format!(
                    "[resource: <{}> ({}), {} bytes of base64 not shown]",
                    clean(&uri),
                    clean(mime_type.as_deref().unwrap_or("unknown type")),
                    blob.len()
                )),
                _ => text.push("[resource: a kind Splice does not know]"),
            },
            _ => text.push("[content of a kind Splice does not know]"),
        }
    }
    // Structured content is added only when there was no text: a server that sends both sends
    // the same data twice (the spec asks for a text copy), and the text is what it meant to say.
    if let Some(structured) = result.structured_content
        && text.is_empty()
    {
        text.push(&format!("[structured content]\n{structured}"));
    }
    McpOutput {
        text: text.finish(),
        images,
        is_error: result.is_error == Some(true),
    }
}

/// A server-given label (mime type, name, uri): on one line, without controls.
fn clean(s: &str) -> String {
    strip_controls(s).replace(['\n', '\r'], " ")
}

/// Blocks joined by newlines, cut at [`MAX_TEXT_BYTES`] with a note saying how much was left.
#[derive(Default)]
struct Text {
    out: String,
    dropped: usize,
}

impl Text {
    fn is_empty(&self) -> bool {
        self.out.is_empty() && self.dropped == 0
    }

    fn push(&mut self, piece: &str) {
        let sep = usize::from(!self.out.is_empty());
        let room = MAX_TEXT_BYTES.saturating_sub(self.out.len() + sep);
        if self.dropped > 0 || room == 0 {
            self.dropped += piece.len();
            return;
        }
        if sep == 1 {
            self.out.push('\n');
        }
        let mut cut = piece.len().min(room);
        while !piece.is_char_boundary(cut) {
            cut -= 1;
        }
        self.out.push_str(&piece[..cut]);
        self.dropped += piece.len() - cut;
    }

    fn finish(mut self) -> String {
        if self.dropped > 0 {
            self.out.push_str(&format!(
                "\n[… {} more bytes of the result were left out]",
                self.dropped
            ));
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).expect("parse value")
    }

    #[test]
    fn every_content_kind_maps_to_text_or_an_image() {
        let png = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG fake");
        let out = output(result(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "image", "data": png, "mimeType": "image/tiff"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"},
                {"type": "resource", "resource": {"uri": "mem://x", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "mem://y", "blob": "AAAA", "mimeType": "application/zip"}}
            ],
            "structuredContent": {"ignored": true},
            "isError": true
        })));
        assert_eq!(
            out.images,
            vec![Image {
                media_type: "image/png".into(),
                data: png.clone()
            }]
        );
        assert!(out.is_error);
        assert_eq!(
            out.text,
            format!(
                "hello\n[image: image/tiff, {} bytes of base64, not a type providers accept]\n\
                 [audio: audio/wav, 4 bytes of base64]\n\
                 [resource link: a <file:///a.txt> (text/plain)]\n\
                 [resource: <mem://x>]\ninside\n\
                 [resource: <mem://y> (application/zip), 4 bytes of base64 not shown]",
                png.len()
            )
        );
    }

    #[test]
    fn structured_content_is_the_text_when_there_is_no_other() {
        let out = output(result(
            json!({"content": [], "structuredContent": {"sum": 5}}),
        ));
        assert_eq!(out.text, "[structured content]\n{\"sum\":5}");
        assert!(!out.is_error);
    }

    #[test]
    fn text_and_images_are_capped() {
        let big = "y".repeat(MAX_TEXT_BYTES + 10);
        let image = "A".repeat(4 * 1024 * 1024);
        let out = output(result(json!({"content": [
            {"type": "text", "text": big},
            {"type": "text", "text": "tail"},
            {"type": "image", "data": image, "mimeType": "image/png"},
            {"type": "image", "data": image, "mimeType": "image/png"}
        ]})));
        assert!(out.text.len() < MAX_TEXT_BYTES + 100);
        assert!(
            out.text
                .ends_with("more bytes of the result were left out]")
        );
        assert_eq!(out.images.len(), 1);
    }
}
