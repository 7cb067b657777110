//! `write_file`: create or overwrite a file, through the policy and a checkpoint. Claude
//! Code's `Write`, which is also how hooks see each file of a pipeline's submission.

use std::path::Path;

use serde_json::{Value, json};

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler};
use super::super::runner::ToolRunner;
use super::super::{fs, parse_args};
use crate::hooks::claude::{self, ClaudeTool, Field};
use crate::protocol::{Builtin, SideEffect};
use crate::provider::ToolSpec;

pub(crate) struct WriteFile;

const TOOL: Builtin = Builtin::WriteFile;

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Write",
    fields: &[
        Field::Path("path", "file_path"),
        Field::Key("content", "content"),
    ],
    dropped: &[],
    also: &[],
    response,
};

fn response(root: &Path, args: &Value, _output: &str) -> Value {
    json!({"filePath": claude::absolute_arg(root, args, "path"), "content": args.get("content")})
}

impl ToolHandler for WriteFile {
    fn name(&self) -> &str {
        TOOL.as_str()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL.as_str().into(),
            description: "Create or overwrite a file with the given content.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"}
            }, "required": ["path", "content"], "additionalProperties": false}),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Write
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    fn shown(&self, args: &Value) -> Shown {
        Shown::verb("Write", args, "path", "?", ShownKind::Edit)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(async move {
            // Planning reads the file: blocking work, off the runtime's threads.
            let planned =
                crate::blocking::atomic(|| fs::plan_write(&runner.root, &parse_args(&args)?));
            match planned {
                Ok(changes) => super::write(runner, id, TOOL, &changes).await,
                Err(error) => super::file_error(runner, id, TOOL, SideEffect::Write, error),
            }
        })
    }
}
