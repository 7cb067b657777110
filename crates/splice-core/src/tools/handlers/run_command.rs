//! `run_command`: a shell command in the root, judged by its risk, confined when autonomy
//! rather than a person allowed it. Claude Code's `Bash`.

use std::path::Path;

use serde_json::{Value, json};

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler, ToolOutput};
use super::super::runner::{Permit, ToolRunner};
use super::super::{CommandArgs, ToolError, command, parse_args};
use crate::bus::Preview;
use crate::hooks::claude::{ClaudeTool, Field};
use crate::permissions::risk::command_risk;
use crate::protocol::events::ToolStatus;
use crate::protocol::{Builtin, SideEffect};
use crate::provider::ToolSpec;

pub(crate) struct RunCommand;

const TOOL: Builtin = Builtin::RunCommand;

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Bash",
    fields: &[
        Field::Key("command", "command"),
        Field::Key("timeout_ms", "timeout"),
    ],
    dropped: &["description"],
    also: &[],
    response,
};

fn response(_root: &Path, _args: &Value, output: &str) -> Value {
    // Its output opens with how it ended (`exit code 0`); the rest is the output.
    let stdout = match output.split_once('\n') {
        Some((status, rest)) if status.starts_with("exit code ") => rest,
        _ if output.starts_with("exit code ") => "",
        _ => output,
    };
    json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false})
}

impl ToolHandler for RunCommand {
    fn name(&self) -> &str {
        TOOL.as_str()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: TOOL.as_str().into(),
            description:
                "Run a shell command in the repository root and return its exit code and output."
                    .into(),
            parameters: json!({"type": "object", "properties": {
                "command": {"type": "string"},
                "timeout_ms": {"type": "integer", "minimum": 1}
            }, "required": ["command"], "additionalProperties": false}),
        }
    }

    fn side_effect(&self) -> SideEffect {
        SideEffect::Execute
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    fn shown(&self, args: &Value) -> Shown {
        Shown::verb("Run", args, "command", "", ShownKind::Execute)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(async move {
            run(runner, id, &args).await.unwrap_or_else(|error| {
                super::file_error(runner, id, TOOL, SideEffect::Execute, error)
            })
        })
    }
}

async fn run(runner: &ToolRunner, id: &str, args: &Value) -> Result<ToolOutput, ToolError> {
    let args: CommandArgs = parse_args(args)?;
    let risk = command_risk(&args.command);
    let preview = vec![Preview::Command(args.command.clone())];
    let targets = [args.command.clone()];
    let permit = runner
        .permit(
            id,
            &TOOL.into(),
            SideEffect::Execute,
            &targets,
            risk,
            preview,
        )
        .await;
    let confine = match permit {
        Permit::Granted { confine } => confine,
        Permit::Refused(status, reason) => return Ok(ToolOutput::new(status, reason)),
    };
    let timeout = command::timeout_for(args.timeout_ms);
    let outcome = command::run(
        &runner.root,
        &args.command,
        timeout,
        confine,
        &runner.writable,
    )
    .await?;
    let status = match (outcome.timed_out, outcome.exit_code) {
        (true, _) => ToolStatus::Timeout,
        (false, Some(0)) => ToolStatus::Ok,
        _ => ToolStatus::Error,
    };
    Ok(ToolOutput {
        status,
        output: outcome.render(timeout),
        truncated: outcome.truncated,
        // A timed-out or signalled command has no exit code: no `display`, never null.
        display: outcome.exit_code.map(|code| json!({"exitCode": code})),
        exit_code: outcome.exit_code,
        ..ToolOutput::new(status, String::new())
    })
}
