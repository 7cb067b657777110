//! `read_file`: a text file of the repository (the editor's buffer when the client offers
//! it), lines numbered from `offset`. Claude Code's `Read`.

use std::path::Path;

use serde_json::{Value, json};

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler, ToolOutput};
use super::super::runner::ToolRunner;
use super::super::{ReadArgs, ToolError, fs, parse_args};
use crate::hooks::claude::{self, ClaudeTool, Field};
use crate::protocol::{Builtin, SideEffect};
use crate::provider::ToolSpec;

pub(crate) struct ReadFile;

const TOOL: Builtin = Builtin::ReadFile;

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Read",
    fields: &[
        Field::Path("path", "file_path"),
        Field::Key("offset", "offset"),
        Field::Key("limit", "limit"),
    ],
    dropped: &[],
    also: &[],
    response,
};

fn response(root: &Path, args: &Value, output: &str) -> Value {
    json!({"type": "text", "file": {
        "filePath": claude::absolute_arg(root, args, "path"),
        "content": output,
        "numLines": output.lines().count(),
        "startLine": args.get("offset").and_then(Value::as_u64).unwrap_or(1),
    }})
}

impl ToolHandler for ReadFile {
    fn name(&self) -> &str {
        TOOL.as_str()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL.as_str().into(),
            description: "Read a text file of the repository. `offset` is the first line (1-based), `limit` the number of lines.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1}
            }, "required": ["path"], "additionalProperties": false}),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    fn shown(&self, args: &Value) -> Shown {
        Shown::verb("Read", args, "path", "?", ShownKind::Read)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(async move {
            if let Some(refused) = super::permit_read(runner, id, TOOL, &args).await {
                return refused;
            }
            match read(runner, &args).await {
                Ok(output) => output,
                Err(error) => super::file_error(runner, id, TOOL, SideEffect::Read, error),
            }
        })
    }
}

async fn read(runner: &ToolRunner, args: &Value) -> Result<ToolOutput, ToolError> {
    // The editor's buffer, unsaved changes included, when the client offers it.
    if let Some(files) = runner.bus.files().filter(|f| f.reads()) {
        let args: ReadArgs = parse_args(args)?;
        let (output, truncated) = fs::read_through(&runner.root, &args, files).await?;
        return Ok(ToolOutput::ok(output, truncated));
    }
    super::off_thread(runner, args, fs::read_file).await
}
