//! Claude Code's names and input shapes of Splice's tools, in one table: hooks are told each
//! call the way Claude Code tells them (`Bash` {command}, `Read` {file_path} …), so guard
//! scripts written for it check what they think they check; a hook's `updatedInput` in that
//! shape is mapped back; agent files and custom commands name tools by either name.
//!
//! Tools Claude Code has no equivalent of (MCP tools, already `mcp__server__tool`; package
//! tools, by their dotted name; `transcribe`; the pipeline's submissions) keep their own name
//! and input.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::ToolName;

/// One input field: Splice's key, Claude Code's, and how its value travels.
#[derive(Clone, Copy)]
enum Field {
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

/// A tool Splice and Claude Code both have.
struct Shape {
    splice: &'static str,
    claude: &'static str,
    fields: &'static [Field],
    /// Claude Code's keys Splice's tool has no use for: dropped from an `updatedInput`.
    dropped: &'static [&'static str],
}

/// Claude Code's `Glob` always has a pattern; `list_files` without a glob lists everything.
const ALL_FILES: &str = "**/*";
/// Claude Code's `Task` always names an agent; `agent` without one is the default agent.
const DEFAULT_AGENT: &str = "general-purpose";

const SHAPES: [Shape; 7] = [
    Shape {
        splice: "run_command",
        claude: "Bash",
        fields: &[
            Field::Key("command", "command"),
            Field::Key("timeout_ms", "timeout"),
        ],
        dropped: &["description"],
    },
    Shape {
        splice: "read_file",
        claude: "Read",
        fields: &[
            Field::Path("path", "file_path"),
            Field::Key("offset", "offset"),
            Field::Key("limit", "limit"),
        ],
        dropped: &[],
    },
    Shape {
        splice: "write_file",
        claude: "Write",
        fields: &[
            Field::Path("path", "file_path"),
            Field::Key("content", "content"),
        ],
        dropped: &[],
    },
    Shape {
        splice: "edit_file",
        claude: "Edit",
        fields: &[
            Field::Path("path", "file_path"),
            Field::Key("old_string", "old_string"),
            Field::Key("new_string", "new_string"),
            Field::Key("replace_all", "replace_all"),
        ],
        dropped: &[],
    },
    Shape {
        splice: "list_files",
        claude: "Glob",
        fields: &[
            Field::Defaulted("glob", "pattern", ALL_FILES),
            Field::Path("path", "path"),
        ],
        dropped: &[],
    },
    Shape {
        splice: "search_files",
        claude: "Grep",
        fields: &[
            Field::Key("pattern", "pattern"),
            Field::Path("path", "path"),
            Field::Key("glob", "glob"),
        ],
        dropped: &[],
    },
    Shape {
        splice: "agent",
        claude: "Task",
        fields: &[
            Field::Key("description", "description"),
            Field::Key("prompt", "prompt"),
            Field::Defaulted("agent", "subagent_type", DEFAULT_AGENT),
        ],
        dropped: &[],
    },
];

/// Claude Code's other names that stand for one of these tools where a tool is named (agent
/// files, `allowed-tools`): never given to hooks.
const ALSO: [(&str, &str); 2] = [("MultiEdit", "edit_file"), ("LS", "list_files")];

fn shape(splice: &str) -> Option<&'static Shape> {
    SHAPES.iter().find(|s| s.splice == splice)
}

/// The Claude Code name of Splice's tool `splice`, if it has one.
pub fn claude_name(splice: &str) -> Option<&'static str> {
    shape(splice).map(|s| s.claude)
}

/// The Splice tool Claude Code's `claude` stands for (`MultiEdit` and `LS` too), if any.
pub fn splice_name(claude: &str) -> Option<&'static str> {
    SHAPES
        .iter()
        .find(|s| s.claude == claude)
        .map(|s| s.splice)
        .or_else(|| ALSO.iter().find(|(c, _)| *c == claude).map(|(_, s)| *s))
}

/// The real tool a name stands for, by Splice's name or Claude Code's.
pub fn tool_named(name: &str) -> Option<ToolName> {
    ToolName::parse(name).or_else(|| splice_name(name).and_then(ToolName::parse))
}

/// A path of Splice's input (relative to `root`, or absolute) as Claude Code gives it:
/// absolute, `.` and `..` applied.
fn absolute(root: &Path, path: &str) -> String {
    let joined = root.join(path);
    super::paths::normalize(&joined)
        .unwrap_or(joined)
        .display()
        .to_string()
}

/// `args` of a call of Splice's `tool` as Claude Code's tool takes its input; a tool without
/// an equivalent keeps its own.
pub fn input(root: &Path, tool: &str, args: &Value) -> Value {
    let (Some(shape), Value::Object(args)) = (shape(tool), args) else {
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

/// A hook's `updatedInput` for a call of Splice's `tool` whose arguments were `original`, as
/// Splice's tool takes it: Claude Code's keys become Splice's (an unchanged path or default
/// stays as the call had it; a changed path is made relative to the root when beneath it).
/// Splice's own keys are taken as they are, and anything else is kept, for the tool's schema
/// to refuse.
pub fn args(root: &Path, tool: &str, original: &Value, updated: Value) -> Value {
    let (Some(shape), Value::Object(updated)) = (shape(tool), &updated) else {
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

/// What Claude Code's `tool_response` of a call of Splice's `tool` with `args` holds besides
/// Splice's own fields, for `output`, the text the call returned.
pub fn response(root: &Path, tool: &str, args: &Value, output: &str) -> Map<String, Value> {
    let path = || {
        args.get("path")
            .and_then(Value::as_str)
            .map(|p| absolute(root, p))
            .unwrap_or_default()
    };
    let lines: Vec<&str> = output.lines().collect();
    let fields = match tool {
        "run_command" => {
            // Its output opens with how it ended (`exit code 0`); the rest is the output.
            let stdout = match output.split_once('\n') {
                Some((status, rest)) if status.starts_with("exit code ") => rest,
                _ if output.starts_with("exit code ") => "",
                _ => output,
            };
            json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false})
        }
        "read_file" => json!({"type": "text", "file": {
            "filePath": path(),
            "content": output,
            "numLines": lines.len(),
            "startLine": args.get("offset").and_then(Value::as_u64).unwrap_or(1),
        }}),
        "write_file" => json!({"filePath": path(), "content": args.get("content")}),
        "edit_file" => json!({
            "filePath": path(),
            "oldString": args.get("old_string"),
            "newString": args.get("new_string"),
            "replaceAll": args.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
        }),
        "list_files" => {
            let names: Vec<&str> = if output == "(no files)" {
                Vec::new()
            } else {
                lines.into_iter().filter(|l| !l.starts_with("[…")).collect()
            };
            json!({"filenames": names, "numFiles": names.len()})
        }
        "search_files" => json!({"mode": "content", "content": output, "numLines": lines.len()}),
        "agent" => json!({"content": [{"type": "text", "text": output}]}),
        _ => return Map::new(),
    };
    match fields {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One file of a submission (`{path, content}` or `{path, delete: true}`) as Claude Code's
/// `Write` input: a deletion writes nothing and says so.
pub fn submitted_file(root: &Path, file: &Value) -> Value {
    let mut input = input(root, "write_file", file);
    if let (Value::Object(map), Some(delete)) = (&mut input, file.get("delete")) {
        map.entry("content")
            .or_insert_with(|| Value::String(String::new()));
        map.insert("delete".into(), delete.clone());
    }
    input
}

/// A hook's `updatedInput` of one submitted file (`original`), as the submission takes it.
pub fn submitted_args(root: &Path, original: &Value, updated: Value) -> Value {
    let deleting = updated.get("delete").and_then(Value::as_bool) == Some(true);
    let mut args = args(root, "write_file", original, updated);
    if deleting && let Value::Object(map) = &mut args {
        // A deletion's `content` is the empty one it was shown with.
        if map.get("content").and_then(Value::as_str) == Some("") {
            map.remove("content");
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_named_once_both_ways() {
        for shape in &SHAPES {
            assert_eq!(claude_name(shape.splice), Some(shape.claude));
            assert_eq!(splice_name(shape.claude), Some(shape.splice));
        }
        assert_eq!(splice_name("MultiEdit"), Some("edit_file"));
        assert_eq!(tool_named("Bash"), Some(ToolName::RunCommand));
        assert_eq!(tool_named("read_file"), Some(ToolName::ReadFile));
        assert_eq!(tool_named("Task"), None);
        assert_eq!(claude_name("mcp__docs__search"), None);
    }

    #[test]
    fn inputs_take_claude_codes_shape_and_come_back() {
        let root = Path::new("/p");
        let call = json!({"command": "ls", "timeout_ms": 5});
        let claude = input(root, "run_command", &call);
        assert_eq!(claude, json!({"command": "ls", "timeout": 5}));
        let mut back = claude.clone();
        back["description"] = json!("list");
        assert_eq!(args(root, "run_command", &call, back), call);

        let call = json!({"path": "./src/../a.txt", "offset": 3});
        let claude = input(root, "read_file", &call);
        assert_eq!(claude, json!({"file_path": "/p/a.txt", "offset": 3}));
        assert_eq!(args(root, "read_file", &call, claude), call);
        let moved = json!({"file_path": "/p/b/c.txt", "offset": 3});
        assert_eq!(
            args(root, "read_file", &call, moved),
            json!({"path": "b/c.txt", "offset": 3})
        );
        // Splice's own shape, from a hook written for Splice, is taken as it is.
        let own = json!({"path": "d.txt", "offset": 1});
        assert_eq!(args(root, "read_file", &call, own.clone()), own);
        // A key neither tool has is kept, for the schema to refuse.
        let odd = json!({"file_path": "/p/a.txt", "pages": "1"});
        assert_eq!(args(root, "read_file", &call, odd)["pages"], "1");

        let call = json!({});
        let claude = input(root, "list_files", &call);
        assert_eq!(claude, json!({"pattern": "**/*"}));
        assert_eq!(args(root, "list_files", &call, claude), json!({}));
        let call = json!({"description": "d", "prompt": "p"});
        let claude = input(root, "agent", &call);
        assert_eq!(claude["subagent_type"], "general-purpose");
        assert_eq!(args(root, "agent", &call, claude), call);

        let package = json!({"text": "x"});
        assert_eq!(input(root, "acme.text.count", &package), package);
    }

    #[test]
    fn a_submitted_file_is_a_write() {
        let root = Path::new("/p");
        let file = json!({"path": "a.py", "content": "x"});
        let claude = submitted_file(root, &file);
        assert_eq!(claude, json!({"file_path": "/p/a.py", "content": "x"}));
        assert_eq!(submitted_args(root, &file, claude), file);
        let gone = json!({"path": "b.py", "delete": true});
        let claude = submitted_file(root, &gone);
        assert_eq!(
            claude,
            json!({"file_path": "/p/b.py", "content": "", "delete": true})
        );
        assert_eq!(submitted_args(root, &gone, claude), gone);
    }

    #[test]
    fn responses_carry_claude_codes_fields() {
        let root = Path::new("/p");
        let bash = response(root, "run_command", &json!({}), "exit code 0\nhi\n");
        assert_eq!(bash["stdout"], "hi\n");
        let read = response(root, "read_file", &json!({"path": "a"}), "x\ny\n");
        assert_eq!(read["file"]["filePath"], "/p/a");
        assert_eq!(read["file"]["numLines"], 2);
        let glob = response(root, "list_files", &json!({}), "a\nb");
        assert_eq!(glob["filenames"], json!(["a", "b"]));
        assert!(response(root, "mcp__x__y", &json!({}), "z").is_empty());
    }
}
