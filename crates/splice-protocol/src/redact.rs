//! Redaction of secrets on the way out of the process.
//!
//! Values of environment variables whose names suggest a secret, and well-known token shapes,
//! are replaced by `[REDACTED]` in every string of an output line; the line object then carries
//! `"redacted": true`.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

pub const REDACTED: &str = "[REDACTED]";
const SECRET_NAME_PARTS: [&str; 5] = ["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];
const MIN_SECRET_LEN: usize = 8;

/// Token shapes that are secrets wherever they come from: each a literal start and the rest.
/// A text holding none of the starts cannot match, so most lines never build the regex (its
/// build is the costliest step before a run's first event).
const TOKEN_SHAPES: [(&str, &str); 17] = [
    ("sk-ant-", r"[A-Za-z0-9_\-]{20,}"),
    ("sk-", r"(?:proj-)?[A-Za-z0-9_\-]{20,}"),
    ("ghp_", r"[A-Za-z0-9]{36,}"),
    ("gho_", r"[A-Za-z0-9]{36,}"),
    ("ghu_", r"[A-Za-z0-9]{36,}"),
    ("ghs_", r"[A-Za-z0-9]{36,}"),
    ("ghr_", r"[A-Za-z0-9]{36,}"),
    ("github_pat_", r"[A-Za-z0-9_]{40,}"),
    ("AKIA", r"[0-9A-Z]{16}"),
    ("xoxa-", r"[A-Za-z0-9\-]{10,}"),
    ("xoxb-", r"[A-Za-z0-9\-]{10,}"),
    ("xoxp-", r"[A-Za-z0-9\-]{10,}"),
    ("xoxo-", r"[A-Za-z0-9\-]{10,}"),
    ("xoxs-", r"[A-Za-z0-9\-]{10,}"),
    ("xoxr-", r"[A-Za-z0-9\-]{10,}"),
    ("AIza", r"[0-9A-Za-z_\-]{35}"),
    ("glpat-", r"[A-Za-z0-9_\-]{20,}"),
];
/// Matched whole, so its literal start is all of it.
const PRIVATE_KEY: &str = r"-----BEGIN [A-Z ]*PRIVATE KEY-----";

/// The token shapes as one regex, built on first use; `None` if it does not compile.
fn shapes() -> Option<&'static Regex> {
    static SHAPES: OnceLock<Option<Regex>> = OnceLock::new();
    SHAPES
        .get_or_init(|| {
            let mut pattern: Vec<String> = TOKEN_SHAPES
                .iter()
                .map(|(start, rest)| format!("{}{rest}", regex::escape(start)))
                .collect();
            pattern.push(PRIVATE_KEY.to_string());
            Regex::new(&pattern.join("|")).ok()
        })
        .as_ref()
}

/// What a text needs for the token shapes.
enum ShapeCheck {
    /// It holds no shape's literal start, so no shape can match.
    Clear,
    /// Scan it with the regex.
    Scan(&'static Regex),
    /// It could hold a shape but the fixed pattern did not compile (a bug the tests catch):
    /// it cannot be told safe, so it is redacted whole.
    Unscannable,
}

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
    /// The token-shape regex, built on first need; `None` only when it did not compile.
    shapes: fn() -> Option<&'static Regex>,
}

impl Redactor {
    /// Build from the process environment.
    pub fn from_env() -> Redactor {
        Redactor::from_vars(std::env::vars())
    }

    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Redactor {
        Redactor::with_shapes(vars, shapes)
    }

    /// `shapes` gives the token-shape regex (tests give one that failed to build).
    fn with_shapes(
        vars: impl IntoIterator<Item = (String, String)>,
        shapes: fn() -> Option<&'static Regex>,
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

    fn shape_check(&self, text: &str) -> ShapeCheck {
        let candidate = TOKEN_SHAPES.iter().any(|(start, _)| text.contains(start))
            || text.contains("-----BEGIN ");
        if !candidate {
            return ShapeCheck::Clear;
        }
        match (self.shapes)() {
            Some(regex) => ShapeCheck::Scan(regex),
            None => ShapeCheck::Unscannable,
        }
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
        match self.shape_check(text) {
            ShapeCheck::Clear => {}
            ShapeCheck::Scan(shapes) => {
                spans.extend(shapes.find_iter(text).map(|m| (m.start(), m.end())));
            }
            ShapeCheck::Unscannable => spans.push((0, text.len())),
        }
        spans
    }

    /// Redact one string; `None` when nothing secret was in it.
    pub fn redact_str(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for secret in &self.values {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(secret.as_str()) {
                out = Some(current.replace(secret.as_str(), REDACTED));
            }
        }
        let current = out.as_deref().unwrap_or(text);
        match self.shape_check(current) {
            ShapeCheck::Clear => {}
            ShapeCheck::Scan(shapes) => {
                if shapes.is_match(current) {
                    out = Some(shapes.replace_all(current, REDACTED).into_owned());
                }
            }
            ShapeCheck::Unscannable => out = Some(REDACTED.to_string()),
        }
        out
    }

    /// Redact every string of a JSON value in place (keys included), adding no marker: for data
    /// handed on as it is (a package tool's output). Returns whether anything changed.
    pub fn redact_json(&self, value: &mut Value) -> bool {
        let (direct, deeper) = self.redact_value(value, Marks::None);
        direct || deeper
    }

    /// Redact every string in a line object (keys included). The line, and any nested object
    /// whose own keys or values changed, carry `redacted: true`.
    pub fn redact_line(&self, line: &mut Map<String, Value>) -> bool {
        let changed = self.redact_object(line, Marks::Objects);
        if changed {
            line.insert("redacted".into(), Value::Bool(true));
        }
        changed
    }

    /// Redact an object, keys in place (their order kept); with `Marks::Objects` it is marked
    /// when a key or a value of its own (not of a nested object) changed. Returns whether
    /// anything inside changed.
    fn redact_object(&self, object: &mut Map<String, Value>, marks: Marks) -> bool {
        let mut own = false;
        let mut nested = false;
        for (key, mut inner) in std::mem::take(object) {
            let (direct, deeper) = self.redact_value(&mut inner, marks);
            own |= direct;
            nested |= deeper;
            let key = match self.redact_str(&key) {
                Some(clean) => {
                    own = true;
                    clean
                }
                None => key,
            };
            object.insert(key, inner);
        }
        if own && marks == Marks::Objects {
            object.insert("redacted".into(), Value::Bool(true));
        }
        own || nested
    }

    /// (a string of this value changed, something in a nested object changed)
    fn redact_value(&self, value: &mut Value, marks: Marks) -> (bool, bool) {
        match value {
            Value::String(text) => match self.redact_str(text) {
                Some(clean) => {
                    *text = clean;
                    (true, false)
                }
                None => (false, false),
            },
            Value::Array(items) => items.iter_mut().fold((false, false), |(a, b), item| {
                let (direct, deeper) = self.redact_value(item, marks);
                (a | direct, b | deeper)
            }),
            Value::Object(object) => (false, self.redact_object(object, marks)),
            _ => (false, false),
        }
    }
}

/// Whether redacted objects say so (`redacted: true`): lines do, data handed on does not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marks {
    None,
    Objects,
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
    fn json_data_is_redacted_in_place_without_markers() {
        let mut value = json!({"env": {"MY_API_KEY": "supersecretvalue123", "supersecretvalue123": [1, "x supersecretvalue123"]}, "n": 1});
        assert!(redactor().redact_json(&mut value));
        assert_eq!(
            value,
            json!({"env": {"MY_API_KEY": "[REDACTED]", "[REDACTED]": [1, "x [REDACTED]"]}, "n": 1})
        );
        let mut clean = json!({"a": ["b"]});
        assert!(!redactor().redact_json(&mut clean));
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

    /// One token of every shape, each redacted whole: the literal starts that let a line skip
    /// the regex must not let a shape through.
    #[test]
    fn every_token_shape_is_redacted() {
        let r = Redactor::from_vars(Vec::new());
        let long = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2";
        let mut tokens: Vec<String> = TOKEN_SHAPES
            .iter()
            .map(|(start, _)| {
                let body = match *start {
                    "AKIA" => "ABCDEFGHIJKLMNOP".to_string(),
                    "AIza" => long[..35].to_string(),
                    _ => long.to_string(),
                };
                format!("{start}{body}")
            })
            .collect();
        tokens.push("sk-proj-abcdefghijklmnopqrstuvwxyz".into());
        tokens.push("-----BEGIN RSA PRIVATE KEY-----".into());
        for token in tokens {
            assert_eq!(
                r.redact_str(&format!("x {token} y")).as_deref(),
                Some("x [REDACTED] y"),
                "{token}"
            );
            assert_eq!(r.secret_spans(&token), vec![(0, token.len())], "{token}");
        }
        assert_eq!(r.redact_str("light ghost sk- AKIA short"), None);
    }

    #[test]
    fn the_token_shapes_compile() {
        assert!(shapes().is_some());
    }

    /// Without its token shapes (the pattern did not compile) the redactor cannot tell a text
    /// that could hold a token from one that does: such a text leaves replaced whole, keys
    /// included. A text holding no shape's literal start cannot hold a token either way.
    #[test]
    fn a_pattern_that_does_not_compile_lets_no_candidate_text_through() {
        let broken = Redactor::with_shapes(Vec::new(), || None);
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        assert_eq!(
            broken.redact_str(&format!("token {token} end")).as_deref(),
            Some(REDACTED)
        );
        // Even a short start, which the regex would have let through, is refused.
        assert_eq!(broken.redact_str("see sk-1").as_deref(), Some(REDACTED));
        assert_eq!(broken.redact_str("plain words"), None);
        assert_eq!(broken.secret_spans("x sk-1"), vec![(0, 6)]);
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
        assert!(!text.contains("ghp_"), "{text}");
        assert_eq!(line["type"], "tool_result");
        assert_eq!(line["runId"], "run_1");
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
