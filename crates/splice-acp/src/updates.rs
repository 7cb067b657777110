//! A run's events as ACP session updates: the model's text and reasoning as chunks, each tool
//! call as a `tool_call` and its `tool_call_update`s (kind, locations, diffs, output), stage
//! markers as the `plan`, usage as `usage_update`. The same mapping replays a saved session.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Diff, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use serde_json::Value;

use crate::plan::PlanTracker;
use splice_core::bus::{PermissionQuestion, Preview};
use splice_core::protocol::Event;
use splice_core::protocol::events::{SideEffect, ToolStatus};
use splice_core::protocol::marker::{ReasoningPiece, split_markers};
use splice_core::sanitize::redact::Redactor;
use splice_core::sanitize::terminal::shown_as_is;

/// Turns one session's events into updates; it remembers what later updates need (each
/// call's diffs, the plan so far, the cost so far).
pub(crate) struct Translator {
    root: PathBuf,
    redactor: Redactor,
    /// The diffs a write showed, by call id: a result's content replaces the call's, so they
    /// are sent again with it.
    diffs: HashMap<String, Vec<ToolCallContent>>,
    plan: PlanTracker,
    /// The context window of the model, for `usage_update`.
    window: u64,
    cost: Option<f64>,
}

impl Translator {
    pub(crate) fn new(root: &Path, redactor: Redactor, window: u64) -> Translator {
        Translator {
            root: root.to_path_buf(),
            redactor,
            diffs: HashMap::new(),
            plan: PlanTracker::default(),
            window,
            cost: None,
        }
    }

    pub(crate) fn set_window(&mut self, window: u64) {
        self.window = window;
    }

    /// Text made safe to hand out: secrets redacted as in every other sink.
    fn clean(&self, text: &str) -> String {
        self.redactor
            .redact_str(text)
            .unwrap_or_else(|| text.to_string())
    }

    /// The updates for one event of a run (`task`: the design-plan task it belongs to).
    pub(crate) fn event(&mut self, task: Option<&str>, event: &Event) -> Vec<SessionUpdate> {
        match event {
            Event::Text { delta } if !delta.is_empty() => {
                vec![SessionUpdate::AgentMessageChunk(chunk(self.clean(delta)))]
            }
            Event::Reasoning { delta } => self.reasoning(task, delta),
            Event::ToolCall {
                id,
                name,
                args,
                side_effect,
            } => {
                let call = ToolCall::new(id.clone(), self.clean(&title(name, args)))
                    .kind(kind(name, *side_effect))
                    .status(ToolCallStatus::InProgress)
                    .locations(locations(&self.root, args))
                    .raw_input(redacted_value(&self.redactor, args));
                vec![SessionUpdate::ToolCall(call)]
            }
            Event::ToolResult {
                id, status, output, ..
            } => {
                let status = match status {
                    ToolStatus::Ok => ToolCallStatus::Completed,
                    _ => ToolCallStatus::Failed,
                };
                let mut content = self.diffs.remove(id).unwrap_or_default();
                if !output.is_empty() {
                    content.push(text_content(fenced(&self.clean(output))));
                }
                let fields = ToolCallUpdateFields::new().status(status).content(content);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id.clone(),
                    fields,
                ))]
            }
            Event::Usage(usage) if usage.provider != "scribiz" => {
                if let Some(cost) = usage.cost_usd {
                    self.cost = Some(self.cost.unwrap_or(0.0) + cost);
                }
                let used = usage.prompt_tokens + usage.completion_tokens;
                let mut update = UsageUpdate::new(used, self.window.max(used));
                if let Some(amount) = self.cost {
                    update = update.cost(Cost::new(amount, "USD"));
                }
                vec![SessionUpdate::UsageUpdate(update)]
            }
            Event::Warning { message, .. } => {
                vec![SessionUpdate::AgentMessageChunk(chunk(format!(
                    "\n> warning: {}\n",
                    self.clean(message)
                )))]
            }
            Event::Error { message, .. } => {
                vec![SessionUpdate::AgentMessageChunk(chunk(format!(
                    "\n> error: {}\n",
                    self.clean(message)
                )))]
            }
            _ => Vec::new(),
        }
    }

    /// Reasoning text as thought chunks; its stage markers move the plan.
    fn reasoning(&mut self, task: Option<&str>, delta: &str) -> Vec<SessionUpdate> {
        let mut updates = Vec::new();
        for piece in split_markers(delta) {
            match piece {
                ReasoningPiece::Text(text) if !text.is_empty() => {
                    updates.push(SessionUpdate::AgentThoughtChunk(chunk(self.clean(&text))))
                }
                ReasoningPiece::Text(_) => {}
                ReasoningPiece::Marker(marker) => {
                    if let Some(plan) = self.plan.apply(task, &marker) {
                        updates.push(SessionUpdate::Plan(plan));
                    }
                }
            }
        }
        updates
    }

    /// What an allowed write changed (before its result): the call's diffs.
    pub(crate) fn changes(&mut self, id: &str, changes: &[Preview]) -> Vec<SessionUpdate> {
        let content = diff_content(&self.root, changes);
        if content.is_empty() {
            return Vec::new();
        }
        self.diffs.insert(id.to_string(), content.clone());
        let fields = ToolCallUpdateFields::new()
            .content(content)
            .locations(changed_lines(&self.root, changes));
        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_string(),
            fields,
        ))]
    }

    /// The tool call a permission request is about, as the dialog shows it: what it does to
    /// what (its title), the files it writes, and all of what it would do.
    pub(crate) fn permission_call(&self, question: &PermissionQuestion) -> ToolCallUpdate {
        let mut fields = ToolCallUpdateFields::new()
            .kind(kind(&question.tool, question.side_effect))
            .title(self.clean(&question_title(question)))
            .content(self.preview_content(&question.previews));
        let at = changed_lines(&self.root, &question.previews);
        // None rather than an empty list, which would clear the call's own.
        if !at.is_empty() {
            fields = fields.locations(at);
        }
        ToolCallUpdate::new(question.id.clone(), fields)
    }

    /// The content a permission request shows of the call: its diffs, its command, its
    /// input, its notes, each fenced (a note holds a definition's text: markdown in it must
    /// not hide what follows).
    fn preview_content(&self, previews: &[Preview]) -> Vec<ToolCallContent> {
        let mut content = diff_content(&self.root, previews);
        for preview in previews {
            match preview {
                Preview::Command(text)
                | Preview::Call { input: text, .. }
                | Preview::Note(text) => {
                    content.push(text_content(fenced(&self.clean(text))));
                }
                Preview::Write { .. } | Preview::None => {}
            }
        }
        content
    }
}

/// A text chunk of a message or thought.
pub(crate) fn chunk(text: impl Into<String>) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

fn text_content(text: String) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// Output shown as it is (a command's, a tool's), not read as markdown: fenced by one
/// backtick more than the longest run of them in it, so no line of it closes the fence.
fn fenced(text: &str) -> String {
    // Escaped first: a trailing no-break space is a word the shell runs.
    let text = visible(text);
    let text = text.trim_end();
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    format!("{fence}\n{text}\n{fence}")
}

/// `text` with each character an editor would lay out or hide rather than show (controls,
/// bidirectional overrides and isolates, zero-width marks, spaces the shell does not split
/// on) written as its `\u{…}` escape, so `ls ; rm -rf ~ #` cannot show as `ls # ; rm -rf ~`
/// nor the file `./a\u{a0}b` as `./a b`; line breaks and tabs stay.
fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => shown.push(c),
            c => push_shown(&mut shown, c),
        }
    }
    shown
}

/// `c` itself where it shows as itself, else its `\u{…}` escape (a space other than ` `
/// looks like one but is part of a word to the shell).
fn push_shown(out: &mut String, c: char) {
    if shown_as_is(c) && (c == ' ' || !c.is_whitespace()) {
        out.push(c);
    } else {
        out.extend(c.escape_unicode());
    }
}

/// Text as one inline code span, whatever it holds: on one line (a line break shown as
/// `⏎`), between backtick runs longer than any in it, so nothing in it is read as markdown.
fn inline_code(text: &str) -> String {
    let line = one_line(text);
    let ticks = "`".repeat(longest_run(&line, '`') + 1);
    // A span starting or ending with a backtick needs a space between; a space each side
    // is taken off when read.
    let padded = line.starts_with('`')
        || line.ends_with('`')
        || (line.starts_with(' ') && line.ends_with(' ') && !line.trim().is_empty());
    if padded {
        format!("{ticks} {line} {ticks}")
    } else {
        format!("{ticks}{line}{ticks}")
    }
}

/// The text on one line: line breaks as ` ⏎ `, other controls and the characters that
/// disguise text as `\u{…}`.
fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => line.push_str(" ⏎ "),
            '\t' => line.push(' '),
            c => push_shown(&mut line, c),
        }
    }
    line
}

/// The length of the longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for found in text.chars() {
        run = if found == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// A permission request's title: the command it runs, the files it writes, the tool it
/// calls (on its server), or the tool's name.
fn question_title(question: &PermissionQuestion) -> String {
    let mut paths = Vec::new();
    for preview in &question.previews {
        match preview {
            Preview::Command(command) => return format!("Run {}", inline_code(command)),
            Preview::Call {
                tool,
                server: Some(server),
                ..
            } => return format!("Call {} on {}", inline_code(tool), inline_code(server)),
            Preview::Call { tool, .. } => return format!("Call {}", inline_code(tool)),
            Preview::Write { path, .. } => paths.push(inline_code(path)),
            Preview::Note(_) | Preview::None => {}
        }
    }
    let verb = match question.tool.as_str() {
        "write_file" => "Write".to_string(),
        "edit_file" => "Edit".to_string(),
        tool => inline_code(tool),
    };
    if paths.is_empty() {
        verb
    } else {
        format!("{verb} {}", paths.join(", "))
    }
}

fn redacted_value(redactor: &Redactor, value: &Value) -> Value {
    let mut value = value.clone();
    redactor.redact_json(&mut value);
    value
}

/// Each write's diff: the file's text before (none: new) and after (a deletion shows empty).
fn diff_content(root: &Path, previews: &[Preview]) -> Vec<ToolCallContent> {
    previews
        .iter()
        .filter_map(|preview| match preview {
            Preview::Write {
                path,
                before,
                after,
            } => Some(ToolCallContent::Diff(
                Diff::new(root.join(path), after.clone().unwrap_or_default())
                    .old_text(before.clone()),
            )),
            _ => None,
        })
        .collect()
}

/// Where each write starts to differ: the file, and its first changed line (1-based).
fn changed_lines(root: &Path, changes: &[Preview]) -> Vec<ToolCallLocation> {
    changes
        .iter()
        .filter_map(|change| match change {
            Preview::Write {
                path,
                before,
                after,
            } => {
                let before = before.as_deref().unwrap_or_default();
                let after = after.as_deref().unwrap_or_default();
                let same = before
                    .lines()
                    .zip(after.lines())
                    .take_while(|(a, b)| a == b)
                    .count();
                let line = u32::try_from(same + 1).ok();
                Some(ToolCallLocation::new(root.join(path)).line(line))
            }
            _ => None,
        })
        .collect()
}

/// The kind an editor shows for a call: the pipeline's submissions by name, every other tool
/// as its handler shows it (else by what it does).
pub(crate) fn kind(name: &str, side_effect: SideEffect) -> ToolKind {
    use splice_core::tools::handler::ShownKind;
    match name {
        "submit_code" | "submit_tests" => ToolKind::Edit,
        "submit_analysis" | "submit_audit" | "submit_verdict" => ToolKind::Think,
        _ => match splice_core::tools::registry::shown(name, side_effect, &Value::Null).kind {
            ShownKind::Read => ToolKind::Read,
            ShownKind::Search => ToolKind::Search,
            ShownKind::Edit => ToolKind::Edit,
            ShownKind::Execute => ToolKind::Execute,
            ShownKind::Fetch => ToolKind::Fetch,
            ShownKind::Think => ToolKind::Think,
        },
    }
}

/// A short title: what the call does to what, as its handler shows it. The model's words are
/// inline code (editors read titles as markdown, which must not hide part of them).
pub(crate) fn title(name: &str, args: &Value) -> String {
    let shown = splice_core::tools::registry::shown(name, SideEffect::None, args);
    match shown.verb {
        Some(verb) => format!("{verb} {}", inline_code(&shown.subject)),
        None => inline_code(name),
    }
}

/// The files a call names, absolute: `path` (with `offset` as its line), or a submission's
/// `files`.
pub(crate) fn locations(root: &Path, args: &Value) -> Vec<ToolCallLocation> {
    let absolute = |path: &str| {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        }
    };
    let mut found = Vec::new();
    if let Some(path) = args.get("path").and_then(Value::as_str) {
        let line = args
            .get("offset")
            .and_then(Value::as_u64)
            .and_then(|l| u32::try_from(l).ok());
        found.push(ToolCallLocation::new(absolute(path)).line(line));
    }
    if let Some(files) = args.get("files").and_then(Value::as_array) {
        for file in files {
            if let Some(path) = file.get("path").and_then(Value::as_str) {
                found.push(ToolCallLocation::new(absolute(path)));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn translator() -> Translator {
        Translator::new(Path::new("/work"), Redactor::from_env(), 1000)
    }

    #[test]
    fn calls_get_kinds_titles_and_locations() {
        assert_eq!(kind("edit_file", SideEffect::Write), ToolKind::Edit);
        assert_eq!(kind("run_command", SideEffect::Execute), ToolKind::Execute);
        assert_eq!(kind("mcp__web__get", SideEffect::Network), ToolKind::Fetch);
        assert_eq!(kind("submit_verdict", SideEffect::None), ToolKind::Think);
        let args = json!({"path": "src/a.rs", "offset": 12});
        assert_eq!(title("read_file", &args), "Read `src/a.rs`");
        let found = locations(Path::new("/work"), &args);
        assert_eq!(found[0].path, PathBuf::from("/work/src/a.rs"));
        assert_eq!(found[0].line, Some(12));
        let submitted = json!({"files": [{"path": "a.py"}, {"path": "/work/b.py"}]});
        let found = locations(Path::new("/work"), &submitted);
        assert_eq!(found.len(), 2);
        assert_eq!(found[1].path, PathBuf::from("/work/b.py"));
    }

    /// What markdown shows of `text`: its text and code, line breaks as `\n`.
    fn rendered(markdown: &str) -> String {
        use pulldown_cmark::{Event as Md, Parser};
        let mut shown = String::new();
        for event in Parser::new(markdown) {
            match event {
                Md::Text(text) | Md::Code(text) | Md::Html(text) => shown.push_str(&text),
                Md::SoftBreak | Md::HardBreak => shown.push('\n'),
                _ => {}
            }
        }
        shown
    }

    /// Texts that close a fence or a code span early, or hide in markdown once out of it.
    const HOSTILE: &[&str] = &[
        "ls\n````\n[x]: # \"\nid > PWNED # \"",
        "ls\n```\n<!-- id > PWNED -->",
        "ls\n``````````\n[x]: # (\nid > PWNED\n)",
        "`ls` `` ``` `id > PWNED`",
        "```",
        "~~~\nid > PWNED\n~~~",
    ];

    /// A command or an output shows whole, whatever backticks it holds.
    #[test]
    fn fenced_text_shows_whole() {
        for text in HOSTILE {
            assert_eq!(
                rendered(&fenced(text)).trim_end(),
                *text,
                "{}",
                fenced(text)
            );
        }
        assert_eq!(fenced("ls"), "```\nls\n```");
    }

    /// A title's code span shows all of it on one line.
    #[test]
    fn inline_code_shows_whole_on_one_line() {
        for text in HOSTILE {
            let shown = rendered(&inline_code(text));
            assert_eq!(shown, one_line(text), "{}", inline_code(text));
            assert!(!shown.contains('\n'));
        }
        assert_eq!(inline_code("ls -la"), "`ls -la`");
        assert_eq!(rendered(&inline_code("`a`")), "`a`");
        assert_eq!(one_line("a\r\nb\u{1b}[2J"), "a ⏎ b\\u{1b}[2J");
    }

    /// A permission request's call: a title naming the command or the files, and where the
    /// files are.
    #[test]
    fn a_permission_call_has_a_title_and_locations() {
        let t = translator();
        let question = |tool: &str, previews: Vec<Preview>| PermissionQuestion {
            token: "q_1".into(),
            id: "c1".into(),
            tool: tool.into(),
            side_effect: SideEffect::Write,
            risk: None,
            reason: String::new(),
            rule: String::new(),
            always: splice_core::bus::AlwaysScope::Session,
            previews,
        };
        let write = Preview::Write {
            path: "a.txt".into(),
            before: Some("one\ntwo\n".into()),
            after: Some("one\n2\n".into()),
        };
        let call = t.permission_call(&question("edit_file", vec![write]));
        assert_eq!(call.fields.title.as_deref(), Some("Edit `a.txt`"));
        let at = call.fields.locations.unwrap_or_default();
        assert_eq!(at[0].path, PathBuf::from("/work/a.txt"));
        assert_eq!(at[0].line, Some(2));
        let run = question("run_command", vec![Preview::Command("cargo test".into())]);
        let call = t.permission_call(&run);
        assert_eq!(call.fields.title.as_deref(), Some("Run `cargo test`"));
        assert_eq!(call.fields.locations, None);
        let mcp = Preview::Call {
            tool: "get-sum".into(),
            server: Some("ev".into()),
            input: "{}".into(),
        };
        let call = t.permission_call(&question("mcp__ev__get-sum", vec![mcp]));
        assert_eq!(call.fields.title.as_deref(), Some("Call `get-sum` on `ev`"));
    }

    #[test]
    fn a_result_carries_the_writes_diff_again() {
        let mut t = translator();
        let shown = t.changes(
            "c1",
            &[Preview::Write {
                path: "a.txt".into(),
                before: Some("old".into()),
                after: Some("new".into()),
            }],
        );
        assert_eq!(shown.len(), 1);
        let SessionUpdate::ToolCallUpdate(diff) = &shown[0] else {
            panic!("not an update: {shown:?}");
        };
        let at = diff.fields.locations.clone().unwrap_or_default();
        assert_eq!(at[0].path, PathBuf::from("/work/a.txt"));
        assert_eq!(at[0].line, Some(1));
        let result = t.event(
            None,
            &Event::ToolResult {
                id: "c1".into(),
                status: ToolStatus::Ok,
                output: "wrote a.txt".into(),
                truncated: false,
                changed_files: None,
                display: None,
            },
        );
        let SessionUpdate::ToolCallUpdate(update) = &result[0] else {
            panic!("not an update: {result:?}");
        };
        let content = update.fields.content.clone().unwrap_or_default();
        assert!(matches!(&content[0], ToolCallContent::Diff(d) if d.new_text == "new"));
        assert_eq!(content.len(), 2);
        assert_eq!(update.fields.status, Some(ToolCallStatus::Completed));
    }
}
