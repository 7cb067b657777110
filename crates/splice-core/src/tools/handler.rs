//! What a tool is to the runner: one [`ToolHandler`] that declares its spec, its side effect,
//! its Claude Code equivalent and how a call of it is shown, and runs a call (asking the
//! permission policy about it as the tool it is). The runner ([`super::runner`]) takes every call through the same
//! steps (event, gate, hooks, input check, the handler, result, hooks); a handler does what
//! is its own (its permission question, the sandbox or checkpoint it needs) through the
//! runner it is given.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

use super::runner::ToolRunner;
use crate::hooks::claude::ClaudeTool;
use crate::protocol::SideEffect;
use crate::protocol::events::ToolStatus;
use crate::protocol::input::Image;
use crate::provider::ToolSpec;

/// A handler's call under way.
pub type Handling<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// One tool.
pub trait ToolHandler: Send + Sync {
    /// The name in events, the TUI, hooks and permission rules (a package tool's dotted name;
    /// the model calls it by its spec's name).
    fn name(&self) -> &str;

    /// The tool as the model is offered it.
    fn spec(&self) -> ToolSpec;

    /// What a call of it does, as `tool_call` events and the policy see it.
    fn side_effect(&self) -> SideEffect;

    /// The tool of Claude Code's it stands for, which hooks, agent files and `allowed-tools`
    /// name it by; none for a tool Claude Code has no equivalent of.
    fn claude(&self) -> Option<&'static ClaudeTool> {
        None
    }

    /// How a call with `args` is shown to a person (an editor, the TUI).
    fn shown(&self, _args: &Value) -> Shown {
        Shown::by_side_effect(self.name(), self.side_effect())
    }

    /// Whether `input`, a `PreToolUse` hook's rewrite of a call's arguments, is one the tool
    /// takes; the problems otherwise. By its spec's schema, as far as Splice checks schemas.
    fn check_input(&self, input: &Value) -> Result<(), String> {
        check_schema(&self.spec().parameters, input)
    }

    /// Whether the call's result waits for its `PostToolUse` hooks, whose feedback is then
    /// part of it (`tool_result` included): a subagent's answer is one text the hooks amend.
    /// Otherwise the result is reported first and the feedback only goes to the model.
    fn result_after_hooks(&self) -> bool {
        false
    }

    /// What `PostToolUse` hooks are told of a call that ran (`tool_response`, before Claude
    /// Code's own fields are added).
    fn hook_response(&self, output: &ToolOutput) -> Value {
        json!({
            "success": true,
            "status": output.status,
            "output": output.output,
            "exitCode": output.exit_code,
        })
    }

    /// Run call `id` with `args` (the hooks' rewrite, if any), the runner being `runner`.
    fn handle<'a>(&'a self, runner: &'a ToolRunner, id: &'a str, args: Value) -> Handling<'a>;
}

/// How a call is shown to a person: what it does (`verb`, none for a tool shown by its name)
/// to what (`subject`: the model's words, or the tool's name), and its kind. Front ends
/// render it (an editor's title is markdown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub verb: Option<&'static str>,
    pub subject: String,
    pub kind: ShownKind,
}

/// The kind of a call, as editors group them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownKind {
    Read,
    Search,
    Edit,
    Execute,
    Fetch,
    Think,
}

impl Shown {
    /// A tool shown by its name, of the kind its side effect makes it.
    pub fn by_side_effect(name: &str, side_effect: SideEffect) -> Shown {
        Shown {
            verb: None,
            subject: name.to_string(),
            kind: ShownKind::of(side_effect),
        }
    }

    /// `verb` and the text of `args`' `key` (`or` when it has none).
    pub fn verb(verb: &'static str, args: &Value, key: &str, or: &str, kind: ShownKind) -> Shown {
        let text = args.get(key).and_then(Value::as_str).unwrap_or(or);
        Shown {
            verb: Some(verb),
            subject: text.to_string(),
            kind,
        }
    }
}

impl ShownKind {
    pub fn of(side_effect: SideEffect) -> ShownKind {
        match side_effect {
            SideEffect::Read => ShownKind::Read,
            SideEffect::Write => ShownKind::Edit,
            SideEffect::Execute => ShownKind::Execute,
            SideEffect::Network => ShownKind::Fetch,
            SideEffect::None => ShownKind::Think,
        }
    }
}

/// How one call ended, before the runner reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub status: ToolStatus,
    /// What goes back to the model and into `tool_result`.
    pub output: String,
    pub truncated: bool,
    /// The files it changed (`tool_result`'s `changedFiles`).
    pub changed_files: Option<Vec<String>>,
    /// `tool_result`'s `display` (a command's exit code).
    pub display: Option<Value>,
    /// Images for the model (an MCP tool's); `output` names each.
    pub images: Vec<Image>,
    /// A command's exit code, when it exited.
    pub exit_code: Option<i32>,
}

impl ToolOutput {
    pub fn new(status: ToolStatus, output: String) -> ToolOutput {
        ToolOutput {
            status,
            output,
            truncated: false,
            changed_files: None,
            display: None,
            images: Vec::new(),
            exit_code: None,
        }
    }

    /// A result, cut (`truncated`) or not.
    pub fn ok(output: String, truncated: bool) -> ToolOutput {
        ToolOutput {
            truncated,
            ..ToolOutput::new(ToolStatus::Ok, output)
        }
    }

    pub fn error(output: String) -> ToolOutput {
        ToolOutput::new(ToolStatus::Error, output)
    }
}

/// Whether `input` is a JSON object that fits `schema`; the problems otherwise.
pub fn check_schema(schema: &Value, input: &Value) -> Result<(), String> {
    if !input.is_object() {
        return Err("it is not a JSON object".into());
    }
    // As far as the schema is in the subset Splice checks; a built-in's arguments are checked
    // again, whole, when they are parsed.
    let (schema, _) = crate::packages::schema::compile_partial(schema, "input");
    let issues = schema.validate(input, "input");
    if issues.is_empty() {
        return Ok(());
    }
    let issues: Vec<String> = issues.iter().map(ToString::to_string).collect();
    Err(issues.join("; "))
}
