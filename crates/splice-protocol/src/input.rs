//! Stream-json input: `message` and `prompt` events, validated strictly.
//!
//! Every violation names the 1-based line number and the offending field so a client can fix its
//! request; unknown fields are rejected so protocol drift is detected rather than lost.

use base64::Engine;
use serde_json::{Map, Value};
use thiserror::Error;

use super::events::SCHEMA_VERSION;

/// Largest decoded image Splice accepts (10 MiB).
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    pub media_type: String,
    /// Standard base64, as received; it was checked to decode.
    pub data: String,
}

/// The prompt a run starts with: text joined from every input event, plus attached images.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    pub text: String,
    pub images: Vec<Image>,
}

impl Prompt {
    pub fn from_text(text: impl Into<String>) -> Prompt {
        Prompt {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
#[error("line {line}: field `{field}`: {message}")]
pub struct InputError {
    /// 1-based line number; 0 when the error concerns the whole input.
    pub line: usize,
    pub field: String,
    pub message: String,
}

impl InputError {
    fn new(line: usize, field: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError {
            line,
            field: field.into(),
            message: message.into(),
        }
    }
}

const MESSAGE_FIELDS: [&str; 5] = ["schemaVersion", "type", "role", "content", "images"];
const PROMPT_FIELDS: [&str; 3] = ["schemaVersion", "type", "content"];
const IMAGE_FIELDS: [&str; 2] = ["mediaType", "data"];

/// Parse a whole stream-json request, as bytes: a line that is not UTF-8 is named like any
/// other bad line.
pub fn parse_input(input: &[u8]) -> Result<Prompt, InputError> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for (index, raw) in input.split(|b| *b == b'\n').enumerate() {
        let line = index + 1;
        let raw = std::str::from_utf8(raw).map_err(|e| {
            InputError::new(
                line,
                "(line)",
                format!("not valid UTF-8 (at byte {})", e.valid_up_to() + 1),
            )
        })?;
        if raw.trim().is_empty() {
            continue;
        }
        let value = strict_json(raw)
            .map_err(|e| InputError::new(line, "(line)", format!("invalid JSON: {e}")))?;
        let Value::Object(object) = value else {
            return Err(InputError::new(line, "(line)", "expected a JSON object"));
        };
        let (content, line_images) = parse_event(line, &object)?;
        if !content.is_empty() {
            parts.push(content);
        }
        images.extend(line_images);
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(InputError::new(
            0,
            "content",
            "no input event contains prompt text",
        ));
    }
    Ok(Prompt { text, images })
}

/// A JSON value in which no object repeats a key: with duplicates, which one counts differs
/// between parsers, so a request that means two things is refused.
fn strict_json(text: &str) -> Result<Value, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

struct Strict;

impl<'de> serde::de::DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("duplicate key `{key}`")));
            }
            let value = map.next_value_seed(Strict)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

fn parse_event(
    line: usize,
    object: &Map<String, Value>,
) -> Result<(String, Vec<Image>), InputError> {
    match object.get("schemaVersion") {
        None => return Err(InputError::new(line, "schemaVersion", "missing")),
        Some(Value::Number(n)) if n.as_u64() == Some(SCHEMA_VERSION) => {}
        Some(other) => {
            return Err(InputError::new(
                line,
                "schemaVersion",
                format!("unsupported value {other}, expected {SCHEMA_VERSION}"),
            ));
        }
    }
    let kind = string_field(line, object, "", "type")?;
    let allowed: &[&str] = match kind.as_str() {
        "message" => &MESSAGE_FIELDS,
        "prompt" => &PROMPT_FIELDS,
        other => {
            return Err(InputError::new(
                line,
                "type",
                format!("unknown input event type `{other}` (expected `message` or `prompt`)"),
            ));
        }
    };
    reject_unknown_fields(line, "", object, allowed)?;
    if kind == "message" {
        match object.get("role") {
            None => return Err(InputError::new(line, "role", "missing")),
            Some(Value::String(role)) if role == "user" => {}
            Some(other) => {
                return Err(InputError::new(
                    line,
                    "role",
                    format!("unsupported role {other}, expected \"user\""),
                ));
            }
        }
    }
    let content = string_field(line, object, "", "content")?;
    let images = match object.get("images") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| parse_image(line, i, item))
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(InputError::new(line, "images", "must be an array")),
    };
    Ok((content, images))
}

fn reject_unknown_fields(
    line: usize,
    prefix: &str,
    object: &Map<String, Value>,
    allowed: &[&str],
) -> Result<(), InputError> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(InputError::new(
            line,
            format!("{prefix}{key}"),
            "unknown field",
        )),
        None => Ok(()),
    }
}

/// A required string field; `prefix` locates nested fields (`images[0].`) in the error.
fn string_field(
    line: usize,
    object: &Map<String, Value>,
    prefix: &str,
    name: &str,
) -> Result<String, InputError> {
    match object.get(name) {
        None => Err(InputError::new(line, format!("{prefix}{name}"), "missing")),
        Some(Value::String(value)) => Ok(value.clone()),
        Some(_) => Err(InputError::new(
            line,
            format!("{prefix}{name}"),
            "must be a string",
        )),
    }
}

fn parse_image(line: usize, index: usize, item: &Value) -> Result<Image, InputError> {
    let prefix = format!("images[{index}].");
    let Value::Object(object) = item else {
        return Err(InputError::new(
            line,
            format!("images[{index}]"),
            "must be an object",
        ));
    };
    reject_unknown_fields(line, &prefix, object, &IMAGE_FIELDS)?;
    let field = |name: &str| format!("{prefix}{name}");
    let media_type = match object.get("mediaType") {
        None => return Err(InputError::new(line, field("mediaType"), "missing")),
        Some(Value::String(media_type)) => media_type.clone(),
        Some(_) => {
            return Err(InputError::new(
                line,
                field("mediaType"),
                "must be a string",
            ));
        }
    };
    if !IMAGE_MEDIA_TYPES.contains(&media_type.as_str()) {
        return Err(InputError::new(
            line,
            field("mediaType"),
            format!(
                "unsupported media type `{media_type}` (expected one of {})",
                IMAGE_MEDIA_TYPES.join(", ")
            ),
        ));
    }
    let data = string_field(line, object, &prefix, "data")?;
    if data.trim().is_empty() {
        return Err(InputError::new(line, field("data"), "empty image data"));
    }
    if data.starts_with("data:") {
        return Err(InputError::new(
            line,
            field("data"),
            "expected bare base64, not a data URL",
        ));
    }
    // The decoded size is known from the encoded length, so an oversized image is refused
    // before any allocation for it.
    let decoded_len = base64::decoded_len_estimate(data.len());
    if decoded_len > MAX_IMAGE_BYTES + 2 {
        return Err(InputError::new(
            line,
            field("data"),
            format!(
                "image exceeds the {} MiB limit",
                MAX_IMAGE_BYTES / (1024 * 1024)
            ),
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .map_err(|e| InputError::new(line, field("data"), format!("invalid base64: {e}")))?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(InputError::new(
            line,
            field("data"),
            format!(
                "image exceeds the {} MiB limit",
                MAX_IMAGE_BYTES / (1024 * 1024)
            ),
        ));
    }
    Ok(Image { media_type, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(input: &str) -> InputError {
        match parse_input(input.as_bytes()) {
            Err(e) => e,
            Ok(p) => panic!("expected an error, got {p:?}"),
        }
    }

    #[test]
    fn joins_content_in_order_with_blank_line() {
        let input = "{\"schemaVersion\":2,\"type\":\"message\",\"role\":\"user\",\"content\":\"Inspect.\"}\n\n{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":\"Only blockers.\"}\n";
        let prompt = parse_input(input.as_bytes()).unwrap_or_default();
        assert_eq!(prompt.text, "Inspect.\n\nOnly blockers.");
    }

    #[test]
    fn unknown_field_names_line_and_field() {
        let e = err("{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":\"x\",\"extra\":1}");
        assert_eq!((e.line, e.field.as_str()), (1, "extra"));
        assert_eq!(e.to_string(), "line 1: field `extra`: unknown field");
    }

    #[test]
    fn data_url_is_refused() {
        let e = err(
            "{\"schemaVersion\":2,\"type\":\"message\",\"role\":\"user\",\"content\":\"x\",\"images\":[{\"mediaType\":\"image/png\",\"data\":\"data:image/png;base64,AAAA\"}]}",
        );
        assert_eq!(e.field, "images[0].data");
    }

    #[test]
    fn empty_prompt_is_refused() {
        let e = err("{\"schemaVersion\":2,\"type\":\"prompt\",\"content\":\"  \"}");
        assert_eq!(e.field, "content");
    }
}
