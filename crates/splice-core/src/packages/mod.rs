//! Skill packages, the format layer: the strict schema subset, manifest and SKILL.md
//! validation, deterministic archives with a safe unpack, the skeleton of `pkg new`, and the
//! `pkg validate|pack|new` commands. The runtime and install build on these.

pub mod archive;
pub(crate) mod command;
pub(crate) mod install;
pub(crate) mod installed;
pub(crate) mod inventory;
pub(crate) mod manifest;
pub mod names;
pub(crate) mod offer;
pub mod package;
pub(crate) mod run;
pub mod runtime;
pub(crate) mod schema;
pub(crate) mod secrets;
pub(crate) mod skeleton;
pub(crate) mod skill_md;
pub(crate) mod spec;
pub(crate) mod store_command;
pub(crate) mod testing;
pub mod validate;
pub mod version;

use serde::{Deserialize, Serialize};

/// One violation: where (a JSON path such as `tools[0].input.properties.text.pattern`, or a
/// file and section such as `SKILL.md#tools`) and what is wrong. A registry's `invalid_package`
/// answer carries a list of these.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

impl Issue {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Issue {
        Issue {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Issue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// `parent.key`, or `parent["key"]` when the key is not a plain identifier (so the path reads
/// back unambiguously); a bare `key` at the root.
pub fn key_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    match (parent.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{parent}.{key}"),
        (_, false) => format!(
            "{parent}[{}]",
            serde_json::to_string(key).unwrap_or_default()
        ),
    }
}

/// `parent[index]`.
pub fn index_path(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_back_unambiguously() {
        assert_eq!(key_path("", "tools"), "tools");
        assert_eq!(key_path("input", "text"), "input.text");
        assert_eq!(key_path("input", "a.b"), r#"input["a.b"]"#);
        assert_eq!(key_path("", "a b"), r#"["a b"]"#);
        assert_eq!(index_path("output.items", 3), "output.items[3]");
    }
}
