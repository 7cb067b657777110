//! The hooks of one tool call: `PreToolUse` before it runs (it may refuse it, change its input,
//! or settle its permission), `PermissionRequest` where the policy would ask, `PostToolUse`
//! once it ran. The input hooks see is the call's, with `file_path` (absolute) beside a file
//! tool's `path`, as Claude Code's hooks read it.

use std::path::Path;

use serde_json::{Value, json};

use super::{HookEvent, Permission, fields, matcher};
use crate::bus::Bus;

tokio::task_local! {
    /// The call whose permission is being decided, with what its `PreToolUse` hooks said:
    /// read by the runner's policy check, which sits below the call.
    pub static CALL: CallHooks;
}

/// What the permission check of a call needs from its hooks.
#[derive(Debug, Clone, Default)]
pub struct CallHooks {
    pub tool_input: Value,
    pub permission: Option<Permission>,
}

/// The built-in file tools, whose input names one file.
const FILE_TOOLS: [&str; 3] = ["read_file", "write_file", "edit_file"];

/// `args` as hooks see them: a file tool's `path` also as an absolute `file_path`.
pub fn hook_input(root: &Path, tool: &str, args: &Value) -> Value {
    let mut input = args.clone();
    if FILE_TOOLS.contains(&tool)
        && let Value::Object(map) = &mut input
        && let Some(path) = map.get("path").and_then(Value::as_str)
    {
        let absolute = root.join(path).display().to_string();
        map.insert("file_path".into(), Value::String(absolute));
    }
    input
}

/// A hook's `updatedInput` as the tool takes it: a `file_path` it kept (or set instead of
/// `path`) is folded back into `path`, relative to the root when it is beneath it.
pub fn tool_args(root: &Path, tool: &str, updated: Value) -> Value {
    let mut args = updated;
    if FILE_TOOLS.contains(&tool)
        && let Value::Object(map) = &mut args
        && let Some(Value::String(file_path)) = map.remove("file_path")
    {
        let original = map.get("path").and_then(Value::as_str).map(str::to_string);
        let absolute_before = original
            .as_deref()
            .map(|p| root.join(p).display().to_string());
        // Only a file_path that differs from the one handed out names another file.
        if absolute_before.as_deref() != Some(file_path.as_str()) {
            let relative = Path::new(&file_path)
                .strip_prefix(root)
                .map(|p| p.display().to_string())
                .unwrap_or(file_path);
            map.insert("path".into(), Value::String(relative));
        }
    }
    args
}

/// What a call's `PreToolUse` hooks decided.
#[derive(Debug, Clone)]
pub enum Pre {
    /// Run it, with these arguments (changed or not) and the hooks' say on its permission.
    Run {
        args: Value,
        changed: bool,
        permission: Option<Permission>,
    },
    /// Refused: the reason goes to the model.
    Refused(String),
}

/// The `PreToolUse` hooks of call `id` of `tool` with `args`, the run's file tools working in
/// `root`. Takes `args` by value: with no hooks they come straight back, uncopied.
pub async fn pre_tool(bus: &Bus, root: &Path, id: &str, tool: &str, args: Value) -> Pre {
    let Some(hooks) = bus.hooks() else {
        return Pre::Run {
            args,
            changed: false,
            permission: None,
        };
    };
    let verdict = hooks
        .fire(
            bus,
            HookEvent::PreToolUse,
            &matcher::tool_names(tool),
            fields(json!({
                "tool_name": tool,
                "tool_input": hook_input(root, tool, &args),
                "tool_use_id": id,
            })),
            Some(id),
        )
        .await;
    if let Some(reason) = verdict.block.or(verdict.stop) {
        return Pre::Refused(format!("blocked by a PreToolUse hook: {reason}"));
    }
    match verdict.updated_input {
        Some(updated) => Pre::Run {
            args: tool_args(root, tool, updated),
            changed: true,
            permission: verdict.permission,
        },
        None => Pre::Run {
            args,
            changed: false,
            permission: verdict.permission,
        },
    }
}

/// The `PostToolUse` hooks of a call that ran: what they have to tell the model about it (a
/// block's reason, context), if anything.
pub async fn post_tool(
    bus: &Bus,
    root: &Path,
    id: &str,
    tool: &str,
    args: &Value,
    response: Value,
) -> Option<String> {
    let hooks = bus.hooks()?;
    let verdict = hooks
        .fire(
            bus,
            HookEvent::PostToolUse,
            &matcher::tool_names(tool),
            fields(json!({
                "tool_name": tool,
                "tool_input": hook_input(root, tool, args),
                "tool_response": response,
                "tool_use_id": id,
            })),
            Some(id),
        )
        .await;
    let mut said: Vec<String> = verdict.block.or(verdict.stop).into_iter().collect();
    said.extend(verdict.context);
    (!said.is_empty()).then(|| format!("PostToolUse hook feedback:\n{}", said.join("\n")))
}

/// The `PermissionRequest` hooks of a call the policy would ask about: `Some(Ok(reason))`
/// allows it without asking, `Some(Err(reason))` denies it, `None` leaves it to the person.
pub async fn permission_request(
    bus: &Bus,
    id: &str,
    tool: &str,
    input: &Value,
) -> Option<Result<String, String>> {
    let hooks = bus.hooks()?;
    let verdict = hooks
        .fire(
            bus,
            HookEvent::PermissionRequest,
            &matcher::tool_names(tool),
            fields(json!({ "tool_name": tool, "tool_input": input, "tool_use_id": id })),
            Some(id),
        )
        .await;
    if let Some(reason) = verdict.block.or(verdict.stop) {
        return Some(Err(reason));
    }
    match verdict.permission {
        Some(Permission::Allow(reason)) => Some(Ok(reason)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_tools_get_file_path_and_it_folds_back() {
        let root = Path::new("/p");
        let input = hook_input(
            root,
            "write_file",
            &json!({"path": "a.txt", "content": "x"}),
        );
        assert_eq!(input["file_path"], "/p/a.txt");
        assert_eq!(
            tool_args(root, "write_file", input),
            json!({"path": "a.txt", "content": "x"})
        );
        let moved = json!({"path": "a.txt", "file_path": "/p/b/c.txt", "content": "x"});
        assert_eq!(tool_args(root, "write_file", moved)["path"], "b/c.txt");
        let command = hook_input(root, "run_command", &json!({"command": "ls"}));
        assert_eq!(command, json!({"command": "ls"}));
    }
}
