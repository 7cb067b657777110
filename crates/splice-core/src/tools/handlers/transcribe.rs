//! `transcribe`: a recording beneath the root (or a link) through the Scribiz CLI, offered
//! when that CLI can be run. It uploads media and costs money: a network tool.

use std::sync::Arc;

use serde_json::Value;

use super::super::handler::{Handling, Shown, ShownKind, ToolHandler, ToolOutput};
use super::super::runner::{Permit, ToolRunner};
use super::super::transcribe::{self, NAME, TranscribeArgs, Transcriber};
use super::super::{ToolError, parse_args};
use crate::protocol::events::Risk;
use crate::protocol::{Builtin, SideEffect, ToolIdentity};
use crate::provider::ToolSpec;

pub(crate) struct Transcribe(pub Arc<Transcriber>);

impl ToolHandler for Transcribe {
    fn name(&self) -> &str {
        NAME
    }

    fn spec(&self) -> ToolSpec {
        transcribe::spec()
    }

    fn side_effect(&self) -> SideEffect {
        // It uploads media and costs money.
        SideEffect::Network
    }

    fn shown(&self, args: &Value) -> Shown {
        Transcribe::shown_for(args)
    }

    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a> {
        Box::pin(self.run(runner, id, args))
    }
}

impl Transcribe {
    /// A call shown without the run's transcriber (a front end knows only its name).
    pub(crate) fn shown_for(args: &Value) -> Shown {
        Shown::verb("Transcribe", args, "path", "?", ShownKind::Fetch)
    }

    /// Who it is to the permission policy.
    fn identity(&self) -> ToolIdentity {
        Builtin::Transcribe.into()
    }

    /// The path checked (beneath the root, not in `.git`: blocked otherwise), the permission
    /// policy as for any network tool, then the Scribiz CLI.
    async fn run(&self, runner: &ToolRunner, id: &str, args: Value) -> ToolOutput {
        let args: TranscribeArgs = match parse_args(&args) {
            Ok(args) => args,
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let root = &runner.root;
        let block = |path: String, kind: &str, reason: String| {
            runner.block_tool(id, NAME, SideEffect::Network, &path, kind, reason)
        };
        let input = match crate::blocking::atomic(|| transcribe::input(root, &args.path)) {
            Ok(input) => input,
            Err(ToolError::OutsideRoot(path)) => {
                let reason = format!("`{path}` is outside the working root");
                return block(path, "outside_root", reason);
            }
            Err(ToolError::Protected(path)) => {
                let reason = format!("`{path}` is inside .git, which tools do not hand out");
                return block(path, "protected_path", reason);
            }
            Err(error) => return ToolOutput::error(error.to_string()),
        };
        let preview = transcribe::previews(&args.path, &input);
        if let Permit::Refused(status, reason) = runner
            .permit(
                id,
                &self.identity(),
                SideEffect::Network,
                std::slice::from_ref(&args.path),
                Risk::Medium,
                preview,
            )
            .await
        {
            return ToolOutput::new(status, reason);
        }
        match self.0.run(&runner.bus, root, id, &input).await {
            Ok((text, truncated)) => ToolOutput::ok(text, truncated),
            Err(why) => ToolOutput::error(why.to_string()),
        }
    }
}
