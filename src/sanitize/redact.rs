//! Redaction of secrets on the way out of the process.
//!
//! Values of environment variables whose names suggest a secret, and well-known token shapes,
//! are replaced by `[REDACTED]` in every string of an output line; the line object then carries
//! `"redacted": true`.

use regex::Regex;
use serde_json::{Map, Value};

pub const REDACTED: &str = "[REDACTED]";
const SECRET_NAME_PARTS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
const MIN_SECRET_LEN: usize = 8;

/// Token shapes that are secrets wherever they come from.
const TOKEN_SHAPES: &str = concat!(
    r"sk-ant-[A-Za-z0-9_\-]{20,}",
    r"|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",
    r"|gh[pousr]_[A-Za-z0-9]{36,}",
    r"|github_pat_[A-Za-z0-9_]{40,}",
    r"|AKIA[0-9A-Z]{16}",
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}",
    r"|AIza[0-9A-Za-z_\-]{35}",
    r"|glpat-[A-Za-z0-9_\-]{20,}",
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----",
);

/// Whether an environment variable's name says it holds a secret (`OPENAI_API_KEY`,
/// `GH_TOKEN`, `DB_PASSWORD`…). Commands do not inherit such variables unless passed on.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|p| upper.contains(p))
}

#[derive(Debug, Clone)]
pub struct Redactor {
    /// Secret values, longest first so that a secret containing another is replaced whole.
    values: Vec<String>,
    /// `None` only when the fixed pattern did not compile: then every text is redacted whole.
    shapes: Option<Regex>,
}

impl Redactor {
    /// Build from the process environment.
    pub fn from_env() -> Redactor {
        Redactor::from_vars(std::env::vars())
    }

    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Redactor {
        Redactor::with_shapes(vars, Regex::new(TOKEN_SHAPES).ok())
    }

    /// `shapes` is `None` when the fixed pattern did not compile (a bug the tests catch).
    fn with_shapes(
        vars: impl IntoIterator<Item = (String, String)>,
        shapes: Option<Regex>,
    ) -> Redactor {
        let mut values: Vec<String> = vars
            .into_iter()
            .filter(|(name, value)| value.len() >= MIN_SECRET_LEN && is_secret_name(name))
            .map(|(_, value)| value)
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Redactor { values, shapes }
    }

    /// The secret values taken from the environment.
    pub fn secret_values(&self) -> &[String] {
        &self.values
    }

    /// Byte ranges of every secret found in `text` (they may overlap).
    pub fn secret_spans(&self, text: &str) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = self
            .values
            .iter()
            .flat_map(|secret| {
                text.match_indices(secret.as_str())
                    .map(|(start, found)| (start, start + found.len()))
            })
            .collect();
        if let Some(shapes) = &self.shapes {
            spans.extend(shapes.find_iter(text).map(|m| (m.start(), m.end())));
        }
        spans
    }

    /// Redact one string; `None` when nothing secret was in it.
    pub fn redact_str(&self, text: &str) -> Option<String> {
        if self.shapes.is_none() {
            // Fail closed: without the token shapes no text can be told safe.
            return (!text.is_empty()).then(|| REDACTED.to_string());
        }
        let mut out: Option<String> = None;
        for secret in &self.values {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(secret.as_str()) {
                out = Some(current.replace(secret.as_str(), REDACTED));
            }
        }
        if let Some(shapes) = &self.shapes {
            let current = out.as_deref().unwrap_or(text);
            if shapes.is_match(current) {
                out = Some(shapes.replace_all(current, REDACTED).into_owned());
            }
        }
        out
    }

    /// Redact every string in a line object (keys included). The line, and any nested object
    /// whose own keys or values changed, carry `redacted: true`.
    pub fn redact_line(&self, line: &mut Map<String, Value>) -> bool {
        if self.shapes.is_none() {
            // Fail closed, the line still an event of its type: every field that can carry
            // text (strings, arrays, objects) is replaced; the type and numbers stay.
            for (key, value) in line.iter_mut() {
                if key != "type"
                    && matches!(value, Value::String(_) | Value::Array(_) | Value::Object(_))
                {
                    *value = Value::String(REDACTED.into());
                }
            }
            line.insert("redacted".into(), Value::Bool(true));
            return true;
        }
        let changed = self.redact_object(line);
        if changed {
            line.insert("redacted".into(), Value::Bool(true));
        }
        changed
    }

    /// Redact an object; marks it when a key or a value of its own (not of a nested object)
    /// changed. Returns whether anything inside changed.
    fn redact_object(&self, object: &mut Map<String, Value>) -> bool {
        let mut own = false;
        let mut nested = false;
        let keys: Vec<String> = object.keys().cloned().collect();
        for key in keys {
            if let Some(clean_key) = self.redact_str(&key) {
                if let Some(inner) = object.remove(&key) {
                    object.insert(clean_key, inner);
                }
                own = true;
            }
        }
        for inner in object.values_mut() {
            let (direct, deeper) = self.redact_value(inner);
            own |= direct;
            nested |= deeper;
        }
        if own {
            object.insert("redacted".into(), Value::Bool(true));
        }
        own || nested
    }

    /// (a string of this value changed, something in a nested object changed)
    fn redact_value(&self, value: &mut Value) -> (bool, bool) {
        match value {
            Value::String(text) => match self.redact_str(text) {
                Some(clean) => {
                    *text = clean;
                    (true, false)
                }
                None => (false, false),
            },
            Value::Array(items) => items.iter_mut().fold((false, false), |(a, b), item| {
                let (direct, deeper) = self.redact_value(item);
                (a | direct, b | deeper)
            }),
            Value::Object(object) => (false, self.redact_object(object)),
            _ => (false, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor() -> Redactor {
        Redactor::from_vars(vec![
            ("MY_API_KEY".to_string(), "supersecretvalue123".to_string()),
            ("SHORT_TOKEN".to_string(), "abc".to_string()),
            ("HOME".to_string(), "/root/longpath".to_string()),
        ])
    }

    #[test]
    fn replaces_env_secret_everywhere_and_flags_line() {
        let mut line = json!({"type":"tool_result","output":"key=supersecretvalue123","args":{"a":["x supersecretvalue123"]}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(redactor().redact_line(&mut line));
        let text = serde_json::to_string(&line).unwrap_or_default();
        assert!(!text.contains("supersecretvalue123"));
        assert_eq!(line["redacted"], true);
        assert_eq!(line["output"], "key=[REDACTED]");
        // The nested object that changed says so too.
        assert_eq!(line["args"]["redacted"], true);
        assert_eq!(line["args"]["a"][0], "x [REDACTED]");
    }

    #[test]
    fn short_values_and_non_secret_names_are_kept() {
        assert_eq!(redactor().redact_str("abc /root/longpath"), None);
    }

    #[test]
    fn the_token_shapes_compile() {
        assert!(Regex::new(TOKEN_SHAPES).is_ok());
        assert!(Redactor::from_vars(Vec::new()).shapes.is_some());
    }

    /// Without its token shapes (the pattern did not compile) the redactor cannot tell what is
    /// safe, so nothing it is given leaves as it came: every string is replaced, and a
    /// stream-json line keeps only its type and its numbers.
    #[test]
    fn a_pattern_that_does_not_compile_lets_no_text_through() {
        let broken = Redactor::with_shapes(Vec::new(), None);
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        assert_eq!(
            broken.redact_str(&format!("token {token} end")).as_deref(),
            Some(REDACTED)
        );
        assert_eq!(broken.redact_str("plain words").as_deref(), Some(REDACTED));
        let mut line = json!({
            "schemaVersion": 2,
            "type": "tool_result",
            "runId": "run_1",
            "output": format!("key {token}"),
            "args": {token: [token]},
            "truncated": false,
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        assert!(broken.redact_line(&mut line));
        let text = serde_json::to_string(&line).unwrap_or_default();
        assert!(!text.contains(token), "{text}");
        assert!(!text.contains("ghp_"), "{text}");
        assert_eq!(line["type"], "tool_result");
        assert_eq!(line["schemaVersion"], 2);
        assert_eq!(line["truncated"], false);
        assert_eq!(line["output"], REDACTED);
        assert_eq!(line["redacted"], true);
    }

    #[test]
    fn token_shapes_are_redacted_without_env() {
        let r = Redactor::from_vars(Vec::new());
        assert_eq!(
            r.redact_str("token ghp_abcdefghijklmnopqrstuvwxyz0123456789 end")
                .as_deref(),
            Some("token [REDACTED] end")
        );
    }
}
