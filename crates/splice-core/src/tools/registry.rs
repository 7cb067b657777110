//! Which handler a tool's name means. The built-in tools are fixed ([`BUILTINS`]); a run
//! registers the tools it found ([`ToolRegistry::for_run`]): `transcribe`, the MCP servers'
//! tools and the package tools. A conversation adds the tools of its own (the `agent` tool)
//! when it offers them ([`Offer`]). A call's name is resolved in the order tools are offered:
//! the conversation's own, the built-ins it allows, then the run's, as registered.

use std::sync::Arc;

use super::handler::{Shown, ToolHandler};
use super::handlers::{
    edit_file::EditFile, list_files::ListFiles, mcp::McpTools, package::Package,
    read_file::ReadFile, run_command::RunCommand, search_files::SearchFiles,
    transcribe::Transcribe, write_file::WriteFile,
};
use super::transcribe::Transcriber;
use crate::hooks::claude::ClaudeTool;
use crate::hooks::tool::HookedTool;
use crate::mcp::McpHub;
use crate::packages::offer::Offered;
use crate::protocol::{Builtin, SideEffect, ToolIdentity};
use crate::provider::ToolSpec;

/// The built-in tools: a new one is a handler file and a line here.
static BUILTINS: [&dyn ToolHandler; 6] = [
    &ReadFile,
    &WriteFile,
    &EditFile,
    &ListFiles,
    &SearchFiles,
    &RunCommand,
];

/// The built-ins a conversation with every tool has, in the order they are offered.
pub const REAL_TOOLS: [Builtin; 6] = [
    Builtin::ReadFile,
    Builtin::WriteFile,
    Builtin::EditFile,
    Builtin::ListFiles,
    Builtin::SearchFiles,
    Builtin::RunCommand,
];

/// The handler of built-in `tool`; none for the tools that are not handlers (the pipeline's
/// submissions, answered by their stage; `transcribe`, which a run registers).
pub fn builtin(tool: Builtin) -> Option<&'static dyn ToolHandler> {
    builtin_named(tool.as_str())
}

/// The built-in handler named `name` (Splice's name).
pub fn builtin_named(name: &str) -> Option<&'static dyn ToolHandler> {
    BUILTINS.iter().copied().find(|tool| tool.name() == name)
}

/// The built-in a name stands for, by Splice's name or Claude Code's (as its handler declares
/// it): what agent files and `allowed-tools` name.
pub fn real_tool_named(name: &str) -> Option<Builtin> {
    let handler = builtin_named(name).or_else(|| {
        BUILTINS
            .iter()
            .copied()
            .find(|tool| tool.claude().is_some_and(|c| c.is_named(name)))
    })?;
    Builtin::parse(handler.name())
}

/// The Claude Code tool that `tool` stands for, where its handler is fixed (a built-in).
pub fn claude_of(tool: &ToolIdentity) -> Option<&'static ClaudeTool> {
    match tool {
        ToolIdentity::Builtin(builtin) => self::builtin(*builtin).and_then(|h| h.claude()),
        ToolIdentity::Package(_) | ToolIdentity::Mcp(_) => None,
    }
}

/// Built-in `tool` as hooks know it: its name and its handler's Claude Code equivalent.
pub fn hooked(tool: Builtin) -> HookedTool<'static> {
    HookedTool {
        name: tool.as_str(),
        claude: claude_of(&tool.into()),
    }
}

/// How a call of the tool `name` (with `side_effect`) is shown, as its handler says where the
/// handler is fixed (the built-ins, `transcribe`); other tools by their name and side effect.
pub fn shown(name: &str, side_effect: SideEffect, args: &serde_json::Value) -> Shown {
    match builtin_named(name) {
        Some(handler) => handler.shown(args),
        None if name == super::transcribe::NAME => Transcribe::shown_for(args),
        None => Shown::by_side_effect(name, side_effect),
    }
}

/// Handlers made as they are called: a family of tools that changes during a run (an MCP
/// server's, listed while it runs).
pub trait ToolFamily: Send + Sync {
    /// The handler of the tool the model calls `name`, if the family has it now.
    fn handler(&self, name: &str) -> Option<Arc<dyn ToolHandler>>;

    /// Its tools now, as the model is offered them.
    fn specs(&self) -> Vec<ToolSpec>;
}

/// Where a run's tools are listed in a request: `Early` beside the built-ins, `Late` after the
/// conversation's own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Early,
    Late,
}

enum Entry {
    /// A tool and the name the model calls it by (a package tool's wire name).
    One(String, Arc<dyn ToolHandler>),
    Family(Arc<dyn ToolFamily>),
}

/// The tools a run found, besides the built-ins.
#[derive(Default)]
pub struct ToolRegistry {
    entries: Vec<(Place, Entry)>,
    /// The package tools' guidance, for the system prompt.
    packages: Arc<Offered>,
}

/// What one conversation offers: the built-ins it allows, whether the run's tools too, and a
/// tool of its own (the `agent` tool, borrowed for the conversation).
#[derive(Clone, Copy)]
pub struct Offer<'a> {
    pub builtins: &'a [Builtin],
    pub run_tools: bool,
    pub own: Option<&'a dyn ToolHandler>,
}

impl Offer<'_> {
    /// Only the built-ins `builtins`.
    pub fn builtins(builtins: &[Builtin]) -> Offer<'_> {
        Offer {
            builtins,
            run_tools: false,
            own: None,
        }
    }
}

/// A handler found for a call.
pub enum Resolved<'a> {
    Fixed(&'a dyn ToolHandler),
    Shared(Arc<dyn ToolHandler>),
}

impl<'a> std::ops::Deref for Resolved<'a> {
    type Target = dyn ToolHandler + 'a;

    fn deref(&self) -> &Self::Target {
        match self {
            Resolved::Fixed(handler) => *handler,
            Resolved::Shared(handler) => handler.as_ref(),
        }
    }
}

impl ToolRegistry {
    /// A run's tools: `transcribe` when a Scribiz CLI can be run, the MCP servers' tools, then
    /// the package tools (in the order their names are resolved).
    pub fn for_run(
        packages: Offered,
        transcriber: Option<Transcriber>,
        mcp: Option<McpHub>,
    ) -> ToolRegistry {
        let packages = Arc::new(packages);
        let mut tools = ToolRegistry {
            entries: Vec::new(),
            packages: Arc::clone(&packages),
        };
        if let Some(transcriber) = transcriber {
            tools.register(Place::Early, Arc::new(Transcribe(Arc::new(transcriber))));
        }
        if let Some(hub) = mcp {
            tools.register_family(Place::Late, Arc::new(McpTools(hub)));
        }
        for index in 0..packages.tools.len() {
            let offered = Arc::clone(&packages);
            tools.register(Place::Late, Arc::new(Package { offered, index }));
        }
        tools
    }

    /// Add `handler`, called by its spec's name.
    pub fn register(&mut self, place: Place, handler: Arc<dyn ToolHandler>) {
        let name = handler.spec().name;
        self.entries.push((place, Entry::One(name, handler)));
    }

    pub fn register_family(&mut self, place: Place, family: Arc<dyn ToolFamily>) {
        self.entries.push((place, Entry::Family(family)));
    }

    /// The package tools offered to the run (their guidance for the system prompt).
    pub fn packages(&self) -> &Offered {
        &self.packages
    }

    /// The handler of the tool the model called `name`, among those `offer` offers.
    pub fn resolve<'a>(&'a self, name: &str, offer: &Offer<'a>) -> Option<Resolved<'a>> {
        if let Some(own) = offer.own.filter(|own| own.name() == name) {
            return Some(Resolved::Fixed(own));
        }
        if let Some(tool) = Builtin::parse(name).filter(|t| offer.builtins.contains(t))
            && let Some(handler) = builtin(tool)
        {
            return Some(Resolved::Fixed(handler));
        }
        if !offer.run_tools {
            return None;
        }
        self.entries.iter().find_map(|(_, entry)| match entry {
            Entry::One(called, handler) => {
                (called == name).then(|| Resolved::Fixed(handler.as_ref()))
            }
            Entry::Family(family) => family.handler(name).map(Resolved::Shared),
        })
    }

    /// The specs of the run's tools listed at `place`, as they are now.
    pub fn specs(&self, place: Place) -> Vec<ToolSpec> {
        let mut specs = Vec::new();
        for (_, entry) in self.entries.iter().filter(|(p, _)| *p == place) {
            match entry {
                Entry::One(_, handler) => specs.push(handler.spec()),
                Entry::Family(family) => specs.extend(family.specs()),
            }
        }
        specs
    }
}

/// Specs of the built-ins `tools`, for a model request.
pub fn specs(tools: &[Builtin]) -> Vec<ToolSpec> {
    tools
        .iter()
        .filter_map(|tool| builtin(*tool))
        .map(|handler| handler.spec())
        .collect()
}
