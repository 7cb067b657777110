//! The `agent` tool's handler: the light conversation's subagents, offered by the conversation
//! (never by a subagent's: depth 1). Claude Code's `Task`.

use std::path::Path;

use serde_json::{Value, json};

use super::Subagents;
use crate::hooks::claude::{ClaudeTool, Field};
use crate::hooks::tool::{CALL, CallHooks};
use crate::protocol::SideEffect;
use crate::provider::ToolSpec;
use crate::tools::handler::{Handling, ToolHandler, ToolOutput};
use crate::tools::runner::{AGENT_TOOL, ToolRunner};

/// Claude Code's `Task` always names an agent; `agent` without one is the default agent.
const DEFAULT_AGENT: &str = "general-purpose";

static CLAUDE: ClaudeTool = ClaudeTool {
    name: "Task",
    fields: &[
        Field::Key("description", "description"),
        Field::Key("prompt", "prompt"),
        Field::Defaulted("agent", "subagent_type", DEFAULT_AGENT),
    ],
    dropped: &[],
    also: &[],
    response,
};

fn response(_root: &Path, _args: &Value, output: &str) -> Value {
    json!({"content": [{"type": "text", "text": output}]})
}

impl ToolHandler for Subagents<'_> {
    fn name(&self) -> &str {
        AGENT_TOOL
    }

    fn spec(&self) -> ToolSpec {
        let mut description = String::from(
            "Start a subagent: a helper with a fresh context of its own that does one task with \
             its own tools and returns its final answer. It sees nothing of this conversation, \
             so give it a complete, self-contained task in `prompt`. Several `agent` calls in \
             one response run at the same time: use that for independent questions. Agents \
             (`agent`, default `general`):",
        );
        for definition in &self.catalog.offered {
            let writes = if definition.writes() {
                " (may change files: works in a copy of the project; its changes are applied \
                 once permitted)"
            } else {
                ""
            };
            description.push_str(&format!(
                "\n- {} ({}): {}{writes}",
                definition.name,
                definition.origin.label(),
                definition.description
            ));
        }
        let names: Vec<&str> = self
            .catalog
            .offered
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        ToolSpec {
            name: AGENT_TOOL.to_string(),
            description,
            parameters: json!({"type": "object", "properties": {
                "description": {"type": "string", "description": "A short label of the task (3 to 6 words)"},
                "prompt": {"type": "string", "description": "The whole task for the subagent"},
                "agent": {"type": "string", "enum": names}
            }, "required": ["description", "prompt"], "additionalProperties": false}),
        }
    }

    /// Its own permission questions are its tools'.
    fn side_effect(&self) -> SideEffect {
        SideEffect::None
    }

    fn claude(&self) -> Option<&'static ClaudeTool> {
        Some(&CLAUDE)
    }

    /// A hook's rewrite is checked by the subagent's own reading of it.
    fn check_input(&self, _input: &Value) -> Result<(), String> {
        Ok(())
    }

    /// A subagent's answer is one text: its `PostToolUse` hooks' feedback is part of it.
    fn result_after_hooks(&self) -> bool {
        true
    }

    fn hook_response(&self, output: &ToolOutput) -> Value {
        json!({"success": true, "status": output.status, "output": output.output})
    }

    fn handle<'a>(&'a self, _runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        // What the `agent` call's hooks said settles none of what the subagent then does (its
        // own calls have hooks of their own; its diff is judged when it is applied).
        Box::pin(CALL.scope(CallHooks::default(), async move {
            let done = self.start(id, args).await;
            ToolOutput {
                changed_files: done.changed_files,
                ..ToolOutput::new(done.status, done.output)
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::claude::{args, input};

    #[test]
    fn an_agent_call_is_claude_codes_task() {
        let root = Path::new("/p");
        let call = json!({"description": "d", "prompt": "p"});
        let task = input(root, Some(&CLAUDE), &call);
        assert_eq!(task["subagent_type"], "general-purpose");
        assert_eq!(args(root, Some(&CLAUDE), &call, task), call);
    }
}
