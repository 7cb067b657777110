//! `list_files`: the files under a directory, honouring `.gitignore`. Claude Code's `Glob`
//! (and `LS`, where tools are named).

use std::path::Path;

use serde_json::{Value, json};

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler};
use super::super::runner::ToolRunner;
use super::super::search;
use crate::hooks::claude::{ClaudeTool, Field};
use crate::protocol::{Builtin, SideEffect};
use crate::provider::ToolSpec;

pub(crate) struct ListFiles;

const TOOL: Builtin = Builtin::ListFiles;

/// Claude Code's `Glob` always has a pattern; `list_files` without a glob lists everything.
const ALL_FILES: &str = "**/*";

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Glob",
    fields: &[
        Field::Defaulted("glob", "pattern", ALL_FILES),
        Field::Path("path", "path"),
    ],
    dropped: &[],
    also: &["LS"],
    response,
};

fn response(_root: &Path, _args: &Value, output: &str) -> Value {
    let names: Vec<&str> = if output == "(no files)" {
        Vec::new()
    } else {
        output.lines().filter(|l| !l.starts_with("[…")).collect()
    };
    json!({"filenames": names, "numFiles": names.len()})
}

impl ToolHandler for ListFiles {
    fn name(&self) -> &str {
        TOOL.as_str()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL.as_str().into(),
            description: "List files under a directory (default: the root), honouring .gitignore; `glob` filters names.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": {"type": "string"},
                "glob": {"type": "string"}
            }, "additionalProperties": false}),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Read
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    fn shown(&self, args: &Value) -> Shown {
        Shown::verb("List", args, "path", ".", ShownKind::Read)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(async move {
            if let Some(refused) = super::permit_read(runner, id, TOOL, &args).await {
                return refused;
            }
            match super::off_thread(runner, &args, search::list_files).await {
                Ok(output) => output,
                Err(error) => super::file_error(runner, id, TOOL, SideEffect::Read, error),
            }
        })
    }
}
