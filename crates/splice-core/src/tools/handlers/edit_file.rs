//! `edit_file`: replace an exact piece of a file's text (in the editor's buffer when the
//! client offers it), through the policy and a checkpoint. Claude Code's `Edit` (and
//! `MultiEdit`, where tools are named).

use std::path::Path;

use serde_json::{Value, json};

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler};
use super::super::runner::ToolRunner;
use super::super::{fs, parse_args};
use crate::hooks::claude::{self, ClaudeTool, Field};
use crate::protocol::{Builtin, SideEffect};
use crate::provider::ToolSpec;

pub(crate) struct EditFile;

const TOOL: Builtin = Builtin::EditFile;

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Edit",
    fields: &[
        Field::Path("path", "file_path"),
        Field::Key("old_string", "old_string"),
        Field::Key("new_string", "new_string"),
        Field::Key("replace_all", "replace_all"),
    ],
    dropped: &[],
    also: &["MultiEdit"],
    response,
};

fn response(root: &Path, args: &Value, _output: &str) -> Value {
    json!({
        "filePath": claude::absolute_arg(root, args, "path"),
        "oldString": args.get("old_string"),
        "newString": args.get("new_string"),
        "replaceAll": args.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
    })
}

impl ToolHandler for EditFile {
    fn name(&self) -> &str {
        TOOL.as_str()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL.as_str().into(),
            description: "Replace an exact piece of text in a file. `old_string` must match exactly once unless `replace_all` is true.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            }, "required": ["path", "old_string", "new_string"], "additionalProperties": false}),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    fn shown(&self, args: &Value) -> Shown {
        Shown::verb("Edit", args, "path", "?", ShownKind::Edit)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(async move {
            let root = &runner.root;
            let planned = match runner.bus.files().filter(|f| f.reads()) {
                // An edit applies to the editor's buffer, as the person sees it.
                Some(files) => match parse_args(&args) {
                    Ok(args) => fs::plan_edit_through(root, &args, files).await,
                    Err(error) => Err(error),
                },
                // Planning reads the file: blocking work, off the runtime's threads.
                None => crate::blocking::atomic(|| fs::plan_edit(root, &parse_args(&args)?)),
            };
            match planned {
                Ok(changes) => super::write(runner, id, TOOL, &changes).await,
                Err(error) => super::file_error(runner, id, TOOL, SideEffect::Write, error),
            }
        })
    }
}
