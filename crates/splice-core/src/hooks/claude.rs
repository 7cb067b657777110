//! Claude Code's names and input shapes of Splice's tools, as hooks are told them: each tool
//! with a Claude Code equivalent declares it once, on its handler ([`ClaudeTool`]); hooks are
//! told each call the way Claude Code tells them (`Bash` {command}, `Read` {file_path} …), so
//! guard scripts written for it check what they think they check; a hook's `updatedInput` in
//! that shape is mapped back; agent files and custom commands name tools by either name.
//!
//! Tools Claude Code has no equivalent of (MCP tools, already `mcp__server__tool`; package
//! tools, by their dotted name; `transcribe`; the pipeline's submissions) keep their own name
//! and input.

use std::path::Path;

use serde_json::{Map, Value};

/// One input field: Splice's key, Claude Code's, and how its value travels.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// The same value under both keys.
    Key(&'static str, &'static str),
    /// A path: relative to the root in Splice's input, absolute in Claude Code's.
    Path(&'static str, &'static str),
    /// Claude Code's key always has a value: `default` stands for Splice's key left out.
    Defaulted(&'static str, &'static str, &'static str),
}

impl Field {
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            Field::Key(s, c) | Field::Path(s, c) | Field::Defaulted(s, c, _) => (s, c),
        }
    }
}

/// The tool of Claude Code's a tool of Splice's stands for: its name, how the input maps,
/// and what Claude Code's `tool_response` adds.
#[derive(Debug)]
pub struct ClaudeTool {
    pub name: &'static str,
    pub fields: &'static [Field],
    /// Claude Code's keys Splice's tool has no use for: dropped from an `updatedInput`.
    pub dropped: &'static [&'static str],
    /// Claude Code's other names that stand for this tool where a tool is named (agent files,
    /// `allowed-tools`): never given to hooks.
    pub also: &'static [&'static str],
    /// Claude Code's `tool_response` fields for a call with `args` (Splice's) that returned
    /// `output`, beside Splice's own; `root` makes paths absolute.
    pub response: fn(root: &Path, args: &Value, output: &str) -> Value,
}

impl ClaudeTool {
    /// Whether Claude Code's `name` (or one of its other names) is this tool.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.also.contains(&name)
    }
}

/// A path of Splice's input (relative to `root`, or absolute) as Claude Code gives it:
/// absolute, `.` and `..` applied.
pub fn absolute(root: &Path, path: &str) -> String {
    let joined = root.join(path);
    crate::tools::paths::normalize(&joined)
        .unwrap_or(joined)
        .display()
        .to_string()
}

/// `args`' path `key` as Claude Code gives it ([`absolute`]); empty when there is none.
pub fn absolute_arg(root: &Path, args: &Value, key: &str) -> String {
    args.get(key)
        .and_then(Value::as_str)
        .map(|p| absolute(root, p))
        .unwrap_or_default()
}

/// `args` of a call of a tool whose equivalent is `claude`, as Claude Code's tool takes its
/// input; a tool without an equivalent keeps its own.
pub fn input(root: &Path, claude: Option<&ClaudeTool>, args: &Value) -> Value {
    let (Some(shape), Value::Object(args)) = (claude, args) else {
        return args.clone();
    };
    let mut out = Map::new();
    for field in shape.fields {
        let (splice, claude) = field.keys();
        match (field, args.get(splice)) {
            (Field::Path(..), Some(Value::String(path))) => {
                out.insert(claude.into(), Value::String(absolute(root, path)));
            }
            (_, Some(value)) => {
                out.insert(claude.into(), value.clone());
            }
            (Field::Defaulted(_, _, default), None) => {
                out.insert(claude.into(), Value::String((*default).into()));
            }
            (_, None) => {}
        }
    }
    Value::Object(out)
}

/// A hook's `updatedInput` for a call of a tool whose equivalent is `claude` and whose
/// arguments were `original`, as Splice's tool takes it: Claude Code's keys become Splice's (an unchanged path or default
/// stays as the call had it; a changed path is made relative to the root when beneath it).
/// Splice's own keys are taken as they are, and anything else is kept, for the tool's schema
/// to refuse.
pub fn args(root: &Path, claude: Option<&ClaudeTool>, original: &Value, updated: Value) -> Value {
    let (Some(shape), Value::Object(updated)) = (claude, &updated) else {
        return updated;
    };
    let is_claude = |key: &str| shape.fields.iter().any(|f| f.keys().1 == key);
    let mut out: Map<String, Value> = updated
        .iter()
        .filter(|(k, _)| !is_claude(k) && !shape.dropped.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for field in shape.fields {
        let (splice, claude) = field.keys();
        // Left out by the hook: so is the argument (unless it gave Splice's key instead).
        let Some(value) = updated.get(claude) else {
            continue;
        };
        let before = original.get(splice);
        match field {
            Field::Path(..) => {
                let unchanged = before
                    .and_then(Value::as_str)
                    .is_some_and(|p| Value::String(absolute(root, p)) == *value);
                if unchanged {
                    // Splice's key as the hook gave it, else as the call had it.
                    if !out.contains_key(splice)
                        && let Some(before) = before
                    {
                        out.insert(splice.into(), before.clone());
                    }
                    continue;
                }
                let relative = match value.as_str() {
                    Some(path) => Value::String(
                        Path::new(path)
                            .strip_prefix(root)
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|_| path.to_string()),
                    ),
                    None => value.clone(),
                };
                out.insert(splice.into(), relative);
            }
            Field::Defaulted(_, _, default) if before.is_none() && value == *default => {}
            _ => {
                out.insert(splice.into(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// What Claude Code's `tool_response` of a call of a tool whose equivalent is `claude`, with
/// `args`, holds besides Splice's own fields, for `output`, the text the call returned.
pub fn response(
    root: &Path,
    claude: Option<&ClaudeTool>,
    args: &Value,
    output: &str,
) -> Map<String, Value> {
    match claude.map(|c| (c.response)(root, args, output)) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// One file of a submission (`{path, content}` or `{path, delete: true}`) as the input of
/// `write`, Claude Code's `Write`: a deletion writes nothing and says so.
pub fn submitted_file(root: &Path, write: Option<&ClaudeTool>, file: &Value) -> Value {
    let mut input = input(root, write, file);
    if let (Value::Object(map), Some(delete)) = (&mut input, file.get("delete")) {
        map.entry("content")
            .or_insert_with(|| Value::String(String::new()));
        map.insert("delete".into(), delete.clone());
    }
    input
}

/// A hook's `updatedInput` of one submitted file (`original`), as the submission takes it.
pub fn submitted_args(
    root: &Path,
    write: Option<&ClaudeTool>,
    original: &Value,
    updated: Value,
) -> Value {
    let deleting = updated.get("delete").and_then(Value::as_bool) == Some(true);
    let mut args = args(root, write, original, updated);
    if deleting && let Value::Object(map) = &mut args {
        // A deletion's `content` is the empty one it was shown with.
        if map.get("content").and_then(Value::as_str) == Some("") {
            map.remove("content");
        }
    }
    args
}
