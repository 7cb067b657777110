//! A package tool: the permission policy as for a built-in (rules name it by its dotted name;
//! a pattern is matched against the input as compact JSON), then one sandboxed Node process.
//! The output JSON is the result; a failure is `CODE: message` with its logs.

use std::sync::Arc;

use serde_json::Value;

use super::super::handler::{Handling, ToolHandler, ToolOutput};
use super::super::runner::{Permit, ToolRunner};
use super::super::{MAX_OUTPUT_BYTES, cap_output};
use crate::packages::offer::{Offered, PackageTool, write_reaching_git_dir};
use crate::packages::runtime::{self, CallErrorCode, CallRequest};
use crate::protocol::events::{Block, Risk, ToolStatus};
use crate::protocol::{Event, SideEffect, ToolIdentity};
use crate::provider::ToolSpec;

/// Most bytes of a failed package call's logs handed back with its error.
const MAX_LOG_BYTES: usize = 4 * 1024;

/// Tool `index` of the run's offered packages (which hold the Node that runs them).
pub(crate) struct Package {
    pub offered: Arc<Offered>,
    pub index: usize,
}

impl Package {
    fn tool(&self) -> &PackageTool {
        &self.offered.tools[self.index]
    }
}

impl ToolHandler for Package {
    fn name(&self) -> &str {
        &self.tool().dotted
    }

    fn spec(&self) -> ToolSpec {
        self.tool().spec()
    }

    fn side_effect(&self) -> SideEffect {
        self.tool().side_effect
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(self.run(runner, id, args))
    }
}

impl Package {
    /// Who it is to the permission policy.
    fn identity(&self) -> ToolIdentity {
        ToolIdentity::Package(self.tool().dotted.clone())
    }

    async fn run(&self, runner: &ToolRunner, id: &str, input: Value) -> ToolOutput {
        let tool = self.tool();
        let permissions = &tool.package.manifest.permissions;
        if let Some(path) = write_reaching_git_dir(&runner.root, permissions) {
            return block(runner, id, tool, &path);
        }
        let input_text = input.to_string();
        let risk = if tool.side_effect == SideEffect::Network {
            Risk::Medium
        } else {
            Risk::Low
        };
        // A tool call, not a command line: the prompt names the tool and shows its input.
        let preview = super::call_preview(&tool.dotted, None, &input_text);
        if let Permit::Refused(status, reason) = runner
            .permit(
                id,
                &self.identity(),
                tool.side_effect,
                &[input_text],
                risk,
                preview,
            )
            .await
        {
            return ToolOutput::new(status, reason);
        }
        let Some(node) = &self.offered.node else {
            return ToolOutput::error("NODE_MISSING: no Node to run package tools".into());
        };
        let outcome = runtime::call(CallRequest {
            package: &tool.package,
            tool: &tool.tool,
            input,
            project_root: &runner.root,
            node,
        })
        .await;
        match outcome.result {
            Ok(output) => {
                let (text, truncated) = cap_output(&output.to_string(), MAX_OUTPUT_BYTES);
                ToolOutput::ok(text, truncated)
            }
            Err(error) => {
                let status = if error.code == CallErrorCode::Timeout {
                    ToolStatus::Timeout
                } else {
                    ToolStatus::Error
                };
                let mut text = error.to_string();
                if !outcome.logs.is_empty() {
                    let (logs, _) = cap_output(&outcome.logs.join("\n"), MAX_LOG_BYTES);
                    text.push_str("\nlogs:\n");
                    text.push_str(&logs);
                }
                ToolOutput::new(status, text)
            }
        }
    }
}

/// A package tool whose declared writes reach the git dir: blocked before it runs, as the
/// file tools are.
fn block(runner: &ToolRunner, id: &str, tool: &PackageTool, path: &str) -> ToolOutput {
    let reason = format!(
        "{} may write `{path}`, which reaches the git dir, which tools do not write",
        tool.package.id()
    );
    runner.bus.emit(Event::Permission {
        id: id.to_string(),
        name: tool.dotted.clone(),
        action: crate::protocol::PermissionAction::Block,
        permission_mode: runner.policy.mode.as_str().into(),
        side_effect: tool.side_effect,
        reason: reason.clone(),
        risk: Some(Risk::High),
        block: Some(Block {
            kind: "protected_path".into(),
            path: Some(path.to_string()),
        }),
    });
    ToolOutput::new(ToolStatus::Blocked, format!("blocked: {reason}"))
}
