//! The tools' handlers, one file each. A new tool is a file here and a line in
//! [`super::registry`].

pub(crate) mod edit_file;
pub(crate) mod list_files;
pub(crate) mod mcp;
pub(crate) mod package;
pub(crate) mod read_file;
pub(crate) mod run_command;
pub(crate) mod search_files;
pub(crate) mod transcribe;
pub(crate) mod write_file;

use std::path::Path;

use serde_json::Value;

use super::handler::ToolOutput;
use super::runner::{Permit, ToolRunner};
use super::{ToolError, parse_args};
use crate::bus::Preview;
use crate::protocol::events::Risk;
use crate::protocol::{Builtin, SideEffect};

/// A read-only file tool's permission: its `path` (the root when none) at low risk; the
/// refusal, if it is refused.
async fn permit_read(
    runner: &ToolRunner,
    id: &str,
    tool: Builtin,
    args: &Value,
) -> Option<ToolOutput> {
    let target = args
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or(".")
        .to_string();
    let permit = runner
        .permit(
            id,
            &tool.into(),
            SideEffect::Read,
            &[target],
            Risk::Low,
            vec![],
        )
        .await;
    match permit {
        Permit::Granted { .. } => None,
        Permit::Refused(status, reason) => Some(ToolOutput::new(status, reason)),
    }
}

/// A read-only tool's blocking work: its output and whether it was cut.
type Walk<A> = fn(&Path, &A) -> Result<(String, bool), ToolError>;

/// Walking a large tree is blocking work: off the runtime's thread, so the TUI keeps drawing
/// while a search runs.
async fn off_thread<A: serde::de::DeserializeOwned + Send + 'static>(
    runner: &ToolRunner,
    args: &Value,
    work: Walk<A>,
) -> Result<ToolOutput, ToolError> {
    let (root, args) = (runner.root.clone(), args.clone());
    let (output, truncated) = tokio::task::spawn_blocking(move || work(&root, &parse_args(&args)?))
        .await
        .map_err(|e| ToolError::Failed(format!("the tool stopped: {e}")))??;
    Ok(ToolOutput::ok(output, truncated))
}

/// A file tool's error as its result: a path outside the root or in `.git` blocks the call
/// (a `permission` event), anything else is an error.
fn file_error(
    runner: &ToolRunner,
    id: &str,
    tool: Builtin,
    side_effect: SideEffect,
    error: ToolError,
) -> ToolOutput {
    match error {
        ToolError::OutsideRoot(path) => {
            let reason = format!("`{path}` is outside the working root");
            runner.block_tool(
                id,
                tool.as_str(),
                side_effect,
                &path,
                "outside_root",
                reason,
            )
        }
        ToolError::Protected(path) => {
            let reason = format!("`{path}` is inside .git, which file tools do not write");
            runner.block_tool(
                id,
                tool.as_str(),
                side_effect,
                &path,
                "protected_path",
                reason,
            )
        }
        error => ToolOutput::error(error.to_string()),
    }
}

/// The prompt's preview of a call that is no command line: the tool (on its server), and its
/// input as compact JSON, cut to 2,000 bytes.
fn call_preview(tool: &str, server: Option<&str>, input: &str) -> Vec<Preview> {
    let (shown, _) = super::cap_output(input, 2_000);
    vec![Preview::Call {
        tool: tool.to_string(),
        server: server.map(str::to_string),
        input: shown,
    }]
}

/// Planned changes of a write tool through the policy, a checkpoint and the write; what it
/// wrote, or why not.
async fn write(
    runner: &ToolRunner,
    id: &str,
    tool: Builtin,
    changes: &[crate::confine::change::FileChange],
) -> ToolOutput {
    match runner.write_changes(id, tool, changes).await {
        Ok(changed) => ToolOutput {
            changed_files: Some(changed.clone()),
            ..ToolOutput::ok(format!("wrote {}", changed.join(", ")), false)
        },
        Err((status, reason)) => ToolOutput::new(status, reason),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::super::registry::{builtin, claude_of, real_tool_named};
    use crate::hooks::claude::{ClaudeTool, args, input, response, submitted_args, submitted_file};
    use crate::protocol::Builtin;

    fn claude(tool: Builtin) -> Option<&'static ClaudeTool> {
        claude_of(&tool.into())
    }

    #[test]
    fn every_tool_is_named_once_both_ways() {
        for tool in crate::tools::REAL_TOOLS {
            let handler = builtin(tool).unwrap_or_else(|| panic!("{tool} has a handler"));
            let claude = handler
                .claude()
                .unwrap_or_else(|| panic!("{tool} has Claude's"));
            assert_eq!(real_tool_named(claude.name), Some(tool));
            assert_eq!(real_tool_named(tool.as_str()), Some(tool));
        }
        assert_eq!(real_tool_named("MultiEdit"), Some(Builtin::EditFile));
        assert_eq!(real_tool_named("LS"), Some(Builtin::ListFiles));
        assert_eq!(real_tool_named("Bash"), Some(Builtin::RunCommand));
        assert_eq!(real_tool_named("Task"), None);
        assert_eq!(real_tool_named("mcp__docs__search"), None);
        assert!(claude(Builtin::Transcribe).is_none());
        assert!(claude(Builtin::SubmitCode).is_none());
    }

    #[test]
    fn inputs_take_claude_codes_shape_and_come_back() {
        let root = Path::new("/p");
        let bash = claude(Builtin::RunCommand);
        let call = json!({"command": "ls", "timeout_ms": 5});
        let claude_input = input(root, bash, &call);
        assert_eq!(claude_input, json!({"command": "ls", "timeout": 5}));
        let mut back = claude_input.clone();
        back["description"] = json!("list");
        assert_eq!(args(root, bash, &call, back), call);

        let read = claude(Builtin::ReadFile);
        let call = json!({"path": "./src/../a.txt", "offset": 3});
        let claude_input = input(root, read, &call);
        assert_eq!(claude_input, json!({"file_path": "/p/a.txt", "offset": 3}));
        assert_eq!(args(root, read, &call, claude_input), call);
        let moved = json!({"file_path": "/p/b/c.txt", "offset": 3});
        assert_eq!(
            args(root, read, &call, moved),
            json!({"path": "b/c.txt", "offset": 3})
        );
        // Splice's own shape, from a hook written for Splice, is taken as it is.
        let own = json!({"path": "d.txt", "offset": 1});
        assert_eq!(args(root, read, &call, own.clone()), own);
        // A key neither tool has is kept, for the schema to refuse.
        let odd = json!({"file_path": "/p/a.txt", "pages": "1"});
        assert_eq!(args(root, read, &call, odd)["pages"], "1");

        let glob = claude(Builtin::ListFiles);
        let call = json!({});
        let claude_input = input(root, glob, &call);
        assert_eq!(claude_input, json!({"pattern": "**/*"}));
        assert_eq!(args(root, glob, &call, claude_input), json!({}));

        let package = json!({"text": "x"});
        assert_eq!(input(root, None, &package), package);
    }

    #[test]
    fn a_submitted_file_is_a_write() {
        let root = Path::new("/p");
        let write = claude(Builtin::WriteFile);
        let file = json!({"path": "a.py", "content": "x"});
        let claude_input = submitted_file(root, write, &file);
        assert_eq!(
            claude_input,
            json!({"file_path": "/p/a.py", "content": "x"})
        );
        assert_eq!(submitted_args(root, write, &file, claude_input), file);
        let gone = json!({"path": "b.py", "delete": true});
        let claude_input = submitted_file(root, write, &gone);
        assert_eq!(
            claude_input,
            json!({"file_path": "/p/b.py", "content": "", "delete": true})
        );
        assert_eq!(submitted_args(root, write, &gone, claude_input), gone);
    }

    #[test]
    fn responses_carry_claude_codes_fields() {
        let root = Path::new("/p");
        let bash = response(
            root,
            claude(Builtin::RunCommand),
            &json!({}),
            "exit code 0\nhi\n",
        );
        assert_eq!(bash["stdout"], "hi\n");
        let read = response(
            root,
            claude(Builtin::ReadFile),
            &json!({"path": "a"}),
            "x\ny\n",
        );
        assert_eq!(read["file"]["filePath"], "/p/a");
        assert_eq!(read["file"]["numLines"], 2);
        let glob = response(root, claude(Builtin::ListFiles), &json!({}), "a\nb");
        assert_eq!(glob["filenames"], json!(["a", "b"]));
        assert!(response(root, None, &json!({}), "z").is_empty());
    }
}
