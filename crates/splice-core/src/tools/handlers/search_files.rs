//! `search_files`: file contents searched with a regular expression. Claude Code's `Grep`.

use std::path::Path;

use serde_json::{Value, json};

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler};
use super::super::runner::ToolRunner;
use super::super::search;
use crate::hooks::claude::{ClaudeTool, Field};
use crate::protocol::{Builtin, SideEffect};
use crate::provider::ToolSpec;

pub(crate) struct SearchFiles;

const TOOL: Builtin = Builtin::SearchFiles;

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Grep",
    fields: &[
        Field::Key("pattern", "pattern"),
        Field::Path("path", "path"),
        Field::Key("glob", "glob"),
    ],
    dropped: &[],
    also: &[],
    response,
};

fn response(_root: &Path, _args: &Value, output: &str) -> Value {
    json!({"mode": "content", "content": output, "numLines": output.lines().count()})
}

impl ToolHandler for SearchFiles {
    fn name(&self) -> &str {
        TOOL.as_str()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL.as_str().into(),
            description: "Search file contents with a regular expression; prints path:line: text for each match.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "glob": {"type": "string"}
            }, "required": ["pattern"], "additionalProperties": false}),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    fn shown(&self, args: &Value) -> Shown {
        Shown::verb("Search for", args, "pattern", "", ShownKind::Search)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(async move {
            if let Some(refused) = super::permit_read(runner, id, TOOL, &args).await {
                return refused;
            }
            match super::off_thread(runner, &args, search::search_files).await {
                Ok(output) => output,
                Err(error) => super::file_error(runner, id, TOOL, SideEffect::Read, error),
            }
        })
    }
}
