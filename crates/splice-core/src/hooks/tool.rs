//! The hooks of one tool call: `PreToolUse` before it runs (it may refuse it, change its input,
//! or settle its permission), `PermissionRequest` where the policy would ask, `PostToolUse`
//! once it ran. Hooks are told the call as Claude Code tells them (`tool_name` `Bash`,
//! `tool_input` {command} …, [`super::claude`]), with Splice's own name and input
//! beside them (`splice_tool_name`, `splice_tool_input`); an `updatedInput` in either shape is
//! mapped back to Splice's tool. A pipeline's submission is also a `Write` of each of its files.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::claude::{self, ClaudeTool};
use super::{HookEvent, Permission, Verdict, fields};
use crate::bus::Bus;

tokio::task_local! {
    /// The call whose permission is being decided, with what its `PreToolUse` hooks said:
    /// read by the runner's policy check, which sits below the call.
    pub static CALL: CallHooks;
}

/// What the permission check of a call needs from its hooks.
#[derive(Debug, Clone, Default)]
pub struct CallHooks {
    /// The call as its hooks see it ([`call_fields`]).
    pub call: Map<String, Value>,
    pub permission: Option<Permission>,
}

/// A tool as its hooks know it: Splice's name, and the Claude Code tool it stands for (its
/// handler's, [`crate::tools::ToolHandler::claude`]).
#[derive(Debug, Clone, Copy)]
pub struct HookedTool<'a> {
    pub name: &'a str,
    pub claude: Option<&'static ClaudeTool>,
}

impl<'a> HookedTool<'a> {
    /// A tool Claude Code has no equivalent of: known by its own name only.
    pub fn own(name: &'a str) -> HookedTool<'a> {
        HookedTool { name, claude: None }
    }

    /// The names a matcher is tried against: its own, and its Claude Code name.
    pub fn names(&self) -> Vec<&'a str> {
        let mut names = vec![self.name];
        names.extend(self.claude.map(|c| c.name));
        names
    }
}

/// Call `args` of `tool` as hooks see it: `tool_name` and `tool_input` as Claude Code names
/// and shapes them (a tool without an equivalent keeps its own), Splice's own beside them.
pub fn call_fields(root: &Path, tool: HookedTool<'_>, args: &Value) -> Map<String, Value> {
    fields(json!({
        "tool_name": tool.claude.map_or(tool.name, |c| c.name),
        "tool_input": claude::input(root, tool.claude, args),
        "splice_tool_name": tool.name,
        "splice_tool_input": args,
    }))
}

/// One file of submission `tool` as hooks see it: a call of `write` (Claude Code's `Write`).
fn file_fields(root: &Path, write: HookedTool<'_>, tool: &str, file: &Value) -> Map<String, Value> {
    fields(json!({
        "tool_name": write.claude.map_or(write.name, |c| c.name),
        "tool_input": claude::submitted_file(root, write.claude, file),
        "splice_tool_name": tool,
        "splice_tool_input": file,
    }))
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

/// Fire `event` for one call (`names` matched, `call` its fields), a changed input mapped back
/// to Splice's with `back` for the hooks after the one that changed it.
async fn fire_call(
    bus: &Bus,
    event: HookEvent,
    names: &[&str],
    mut call: Map<String, Value>,
    id: &str,
    back: &(dyn Fn(Value) -> Value + Send + Sync),
) -> Option<Verdict> {
    let hooks = bus.hooks()?;
    call.insert("tool_use_id".into(), Value::String(id.to_string()));
    Some(
        hooks
            .fire_call(bus, event, names, call, Some(id), back)
            .await,
    )
}

/// The `PreToolUse` hooks of call `id` of `tool` with `args`, the run's file tools working in
/// `root`. Takes `args` by value: with no hooks they come straight back, uncopied.
pub async fn pre_tool(bus: &Bus, root: &Path, id: &str, tool: HookedTool<'_>, args: Value) -> Pre {
    if bus.hooks().is_none() {
        return Pre::Run {
            args,
            changed: false,
            permission: None,
        };
    }
    let back = |updated| claude::args(root, tool.claude, &args, updated);
    let names = tool.names();
    let call = call_fields(root, tool, &args);
    let Some(verdict) = fire_call(bus, HookEvent::PreToolUse, &names, call, id, &back).await else {
        return Pre::Run {
            args,
            changed: false,
            permission: None,
        };
    };
    if let Some(reason) = verdict.block.or(verdict.stop) {
        return Pre::Refused(format!("blocked by a PreToolUse hook: {reason}"));
    }
    match verdict.updated_input {
        Some(updated) => Pre::Run {
            args: back(updated),
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

/// The `PreToolUse` hooks of each file of submission `tool` (its `files`), as calls of `write`
/// (`Write`):
/// one that blocks refuses the submission; one that changes a file changes it in the
/// submission. Their say on the permission adds to `permission`, the submission's own: an
/// `ask` asks, an `allow` of every file allows.
pub async fn pre_files(
    bus: &Bus,
    root: &Path,
    id: &str,
    tool: &str,
    write: HookedTool<'_>,
    mut submission: Value,
    permission: Option<Permission>,
) -> Pre {
    let count = submission
        .get("files")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if bus.hooks().is_none() || count == 0 {
        return Pre::Run {
            args: submission,
            changed: false,
            permission,
        };
    }
    let mut changed = false;
    let (mut asks, mut allows) = (None, 0);
    let names = write.names();
    for index in 0..count {
        let file = submission["files"][index].clone();
        let back = |updated| claude::submitted_args(root, write.claude, &file, updated);
        let call = file_fields(root, write, tool, &file);
        let Some(verdict) = fire_call(bus, HookEvent::PreToolUse, &names, call, id, &back).await
        else {
            break;
        };
        if let Some(reason) = verdict.block.or(verdict.stop) {
            let path = file.get("path").and_then(Value::as_str).unwrap_or("?");
            return Pre::Refused(format!(
                "blocked by a PreToolUse hook on its file {path}: {reason}"
            ));
        }
        if let Some(updated) = verdict.updated_input {
            submission["files"][index] = back(updated);
            changed = true;
        }
        match verdict.permission {
            Some(Permission::Ask(reason)) => asks = asks.or(Some(reason)),
            Some(Permission::Allow(_)) => allows += 1,
            None => {}
        }
    }
    let permission = match (asks, permission) {
        (Some(reason), _) => Some(Permission::Ask(reason)),
        (None, Some(own)) => Some(own),
        (None, None) if allows == count => Some(Permission::Allow(String::new())),
        (None, None) => None,
    };
    Pre::Run {
        args: submission,
        changed,
        permission,
    }
}

/// The `PostToolUse` hooks of a call that ran: what they have to tell the model about it (a
/// block's reason, context), if anything. `response` is Splice's (its `output` the call's
/// text); Claude Code's fields for the tool are added to it.
pub async fn post_tool(
    bus: &Bus,
    root: &Path,
    id: &str,
    tool: HookedTool<'_>,
    args: &Value,
    mut response: Value,
) -> Option<String> {
    bus.hooks()?;
    if let Value::Object(map) = &mut response {
        let output = map
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let claude = claude::response(root, tool.claude, args, output);
        map.extend(claude);
    }
    let mut call = call_fields(root, tool, args);
    call.insert("tool_response".into(), response);
    let keep = |updated| updated;
    let names = tool.names();
    let verdict = fire_call(bus, HookEvent::PostToolUse, &names, call, id, &keep).await?;
    let mut said: Vec<String> = verdict.block.or(verdict.stop).into_iter().collect();
    said.extend(verdict.context);
    (!said.is_empty()).then(|| format!("PostToolUse hook feedback:\n{}", said.join("\n")))
}

/// The `PostToolUse` hooks of each file submission `tool` wrote, as calls of `write`
/// (`Write`). What they say is in their `hook` events: the conversation is over.
pub async fn post_files(
    bus: &Bus,
    root: &Path,
    id: &str,
    tool: &str,
    write: HookedTool<'_>,
    submission: &Value,
) {
    if bus.hooks().is_none() {
        return;
    }
    let names = write.names();
    let files = submission.get("files").and_then(Value::as_array);
    for file in files.into_iter().flatten() {
        if file.get("delete").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let mut call = file_fields(root, write, tool, file);
        let path = call["tool_input"]["file_path"].clone();
        call.insert(
            "tool_response".into(),
            json!({"success": true, "filePath": path, "content": file.get("content")}),
        );
        let keep = |updated| updated;
        let _ = fire_call(bus, HookEvent::PostToolUse, &names, call, id, &keep).await;
    }
}

/// The `PermissionRequest` hooks of a call the policy would ask about (`call`, as its
/// `PreToolUse` hooks saw it): `Some(Ok(reason))` allows it without asking, `Some(Err(reason))`
/// denies it, `None` leaves it to the person.
pub async fn permission_request(
    bus: &Bus,
    id: &str,
    tool: HookedTool<'_>,
    call: &Map<String, Value>,
) -> Option<Result<String, String>> {
    let keep = |updated| updated;
    let names = tool.names();
    let verdict = fire_call(
        bus,
        HookEvent::PermissionRequest,
        &names,
        call.clone(),
        id,
        &keep,
    )
    .await?;
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
    fn a_call_is_told_in_claude_codes_shape_with_splices_beside_it() {
        let root = Path::new("/p");
        let args = json!({"path": "a.txt", "content": "x"});
        let write = crate::tools::registry::hooked(crate::protocol::Builtin::WriteFile);
        let call = call_fields(root, write, &args);
        assert_eq!(call["tool_name"], "Write");
        assert_eq!(
            call["tool_input"],
            json!({"file_path": "/p/a.txt", "content": "x"})
        );
        assert_eq!(call["splice_tool_name"], "write_file");
        assert_eq!(call["splice_tool_input"], args);
        let call = call_fields(root, HookedTool::own("mcp__docs__search"), &json!({"q": 1}));
        assert_eq!(call["tool_name"], "mcp__docs__search");
        assert_eq!(call["tool_input"], json!({"q": 1}));
        let file = file_fields(
            root,
            write,
            "submit_code",
            &json!({"path": "b.py", "content": "y"}),
        );
        assert_eq!(file["tool_name"], "Write");
        assert_eq!(file["tool_input"]["file_path"], "/p/b.py");
        assert_eq!(file["splice_tool_name"], "submit_code");
    }
}
