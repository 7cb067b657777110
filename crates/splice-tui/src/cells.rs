//! Transcript cells: pure, width-aware renderings of what happened, one cell per prompt, answer,
//! tool call or notice.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::markdown;
use super::permission::diff_lines;
use super::theme::Theme;
use super::wrap::{str_width, truncate, wrap_line};
use splice_core::bus::{DENIED_IN_TUI, Preview};
use splice_core::protocol::SideEffect;
use splice_core::protocol::events::ToolStatus;
use splice_core::sanitize::terminal::strip_controls;

/// Lines of a tool result shown while folded.
const FOLDED_RESULT_LINES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub status: ToolStatus,
    pub output: String,
    pub truncated: bool,
}

pub use super::progress::ToolProgress;
pub use super::subagent::SubagentView;

#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    User(String),
    /// The model's answer as it streams in; rendered as Markdown.
    Assistant(String),
    /// Progress and model reasoning, markers already removed; shown dimmed.
    Reasoning(String),
    Tool {
        id: String,
        name: String,
        args: Value,
        side_effect: SideEffect,
        /// Set for a permission decision made in this session ("approved in TUI").
        decision: Option<String>,
        /// A permission prompt for it is open: it waits for the person, not running yet.
        waiting: bool,
        result: Option<ToolOutcome>,
        /// What the tool reported while it ran (its live view; folded once the result is in).
        /// Boxed: most cells never have one.
        progress: Option<Box<ToolProgress>>,
        /// The subagent an `agent` call started: live under the call while it runs, one line
        /// once it ended (Ctrl-O unfolds it).
        agent: Option<Box<SubagentView>>,
        expanded: bool,
    },
    /// A pipeline stage's typed output (`submit_code`, `submit_verdict`, …) as it streams in; it
    /// is data, not an execution, so it never has a result.
    Submission {
        id: String,
        name: String,
        raw: String,
        /// The files it changed once applied (their contents before and after): its diff.
        changes: Vec<Preview>,
        /// The diff is shown (Ctrl-O); folded to a line of counts otherwise.
        expanded: bool,
    },
    Notice(Level, String),
}

impl Cell {
    /// Whether Ctrl-O changes it: a tool result longer than its folded lines, or a
    /// submission's diff.
    pub fn folds(&self) -> bool {
        match self {
            Cell::Tool {
                result: Some(_),
                agent: Some(_),
                ..
            } => true,
            Cell::Tool {
                result: Some(result),
                ..
            } => result.output.lines().count() > FOLDED_RESULT_LINES,
            Cell::Submission { changes, .. } => !changes.is_empty(),
            _ => false,
        }
    }

    /// The cell as terminal rows for `width` columns, ending with one blank separator row.
    pub fn lines(&self, theme: &Theme, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width.max(4));
        let mut logical: Vec<Line<'static>> = Vec::new();
        match self {
            Cell::User(text) => {
                let style = theme.bold(theme.user);
                for (i, line) in text.lines().enumerate() {
                    let mark = if i == 0 { "› " } else { "  " };
                    logical.push(Line::from(vec![
                        Span::styled(mark.to_string(), style),
                        Span::styled(line.to_string(), theme.text().add_modifier(Modifier::BOLD)),
                    ]));
                }
            }
            Cell::Assistant(text) => logical = markdown::render(text, theme),
            Cell::Reasoning(text) => {
                let style = theme.dim().add_modifier(Modifier::ITALIC);
                for line in text.trim_end().lines() {
                    logical.push(Line::from(Span::styled(line.to_string(), style)));
                }
            }
            Cell::Tool {
                name,
                args,
                side_effect,
                decision,
                waiting,
                result,
                progress,
                agent,
                expanded,
                ..
            } => tool_lines(
                &mut logical,
                theme,
                ToolView {
                    name,
                    args,
                    side_effect: *side_effect,
                    decision: decision.as_deref(),
                    waiting: *waiting,
                    result: result.as_ref(),
                    progress: progress.as_deref(),
                    agent: agent.as_deref(),
                    expanded: *expanded,
                },
                width,
            ),
            Cell::Submission {
                name,
                raw,
                changes,
                expanded,
                ..
            } => {
                submission_lines(&mut logical, theme, name, raw);
                change_lines(&mut logical, theme, changes, *expanded);
            }
            Cell::Notice(level, text) => {
                let (label, color) = match level {
                    Level::Error => ("error: ", theme.error),
                    Level::Warning => ("warning: ", theme.warning),
                    Level::Info => ("", theme.dim),
                };
                for (i, line) in text.lines().enumerate() {
                    let head = if i == 0 { label } else { "" };
                    logical.push(Line::from(vec![
                        Span::styled(head.to_string(), theme.bold(color)),
                        Span::styled(line.to_string(), Style::default().fg(color)),
                    ]));
                }
            }
        }
        let mut rows: Vec<Line<'static>> = logical
            .iter()
            .flat_map(|line| wrap_line(line, width))
            .collect();
        rows.push(Line::default());
        rows
    }
}

struct ToolView<'a> {
    name: &'a str,
    args: &'a Value,
    side_effect: SideEffect,
    decision: Option<&'a str>,
    waiting: bool,
    result: Option<&'a ToolOutcome>,
    progress: Option<&'a ToolProgress>,
    agent: Option<&'a SubagentView>,
    expanded: bool,
}

fn tool_lines(out: &mut Vec<Line<'static>>, theme: &Theme, view: ToolView<'_>, width: usize) {
    let (bullet, color) = match view.result.map(|r| r.status) {
        None => ("◌ ", theme.accent),
        Some(ToolStatus::Ok) => ("● ", theme.success),
        Some(ToolStatus::Denied | ToolStatus::Blocked) => ("○ ", theme.warning),
        Some(ToolStatus::Error | ToolStatus::Timeout) => ("✗ ", theme.error),
    };
    let summary = args_summary(view.name, view.args);
    out.push(Line::from(vec![
        Span::styled(bullet.to_string(), Style::default().fg(color)),
        Span::styled(view.name.to_string(), theme.bold(theme.text)),
        Span::styled(
            format!(
                " {}",
                truncate(&summary, width.saturating_sub(str_width(view.name) + 3))
            ),
            theme.text(),
        ),
        // A call with no side effect of its own (`agent`: its tools say theirs) shows none.
        Span::styled(
            match view.side_effect {
                SideEffect::None => String::new(),
                other => format!("  {}", other.as_str()),
            },
            theme.dim(),
        ),
    ]));
    // A refused call says so once, in words: not the decision, the status and the output.
    if let Some(result) = view.result
        && matches!(result.status, ToolStatus::Denied | ToolStatus::Blocked)
    {
        out.push(Line::from(Span::styled(
            format!("  ⎿ {}", refusal(view.decision, result)),
            Style::default().fg(color),
        )));
        return;
    }
    if let Some(decision) = view.decision {
        out.push(Line::from(Span::styled(
            format!("  ⎿ {decision}"),
            theme.dim(),
        )));
    }
    let Some(result) = view.result else {
        match view.progress {
            _ if view.waiting => out.push(Line::from(Span::styled(
                "  ⎿ waiting for your approval",
                Style::default().fg(theme.warning),
            ))),
            _ if view.agent.is_some() => {
                out.extend(
                    view.agent
                        .map(|a| a.live_lines(theme, width))
                        .unwrap_or_default(),
                );
            }
            Some(progress) => out.extend(progress.live_lines(theme, width)),
            None => out.push(Line::from(Span::styled("  ⎿ running…", theme.dim()))),
        }
        return;
    };
    let status = match result.status {
        ToolStatus::Ok => "ok",
        ToolStatus::Error => "error",
        ToolStatus::Denied => "denied",
        ToolStatus::Blocked => "blocked",
        ToolStatus::Timeout => "timed out",
    };
    let lines: Vec<&str> = result.output.lines().collect();
    let shown = if view.expanded {
        lines.len()
    } else {
        lines.len().min(FOLDED_RESULT_LINES)
    };
    let mut head = format!("  ⎿ {status}");
    if result.truncated {
        head.push_str(" (output truncated)");
    }
    // A subagent that ended folds to one line of what it did; unfolded, its calls and answer.
    if let Some(agent) = view.agent {
        out.push(Line::from(vec![
            Span::styled(format!("  ⎿ {status}"), Style::default().fg(color)),
            Span::styled(
                format!(
                    " · {}",
                    truncate(
                        &agent.summary(),
                        width.saturating_sub(str_width(status) + 7)
                    )
                ),
                theme.dim(),
            ),
        ]));
        if view.expanded {
            out.extend(agent.all_calls(theme, width));
            for line in result.output.lines() {
                out.push(Line::from(Span::styled(
                    format!("    {}", line.replace('\t', "    ")),
                    theme.dim(),
                )));
            }
        }
        return;
    }
    // The live view folds to one line of what the run went through.
    let folded = view.progress.and_then(ToolProgress::folded);
    let mut spans = vec![Span::styled(head, Style::default().fg(color))];
    if let Some(folded) = folded {
        spans.push(Span::styled(format!(" · {folded}"), theme.dim()));
    }
    out.push(Line::from(spans));
    for line in &lines[..shown] {
        out.push(Line::from(Span::styled(
            format!("    {}", line.replace('\t', "    ")),
            theme.dim(),
        )));
    }
    if shown < lines.len() {
        out.push(Line::from(Span::styled(
            format!("    … {} more lines", lines.len() - shown),
            theme.dim().add_modifier(Modifier::ITALIC),
        )));
    }
}

/// One line for a refused call: "you denied it" for the person's answer, else the reason the
/// policy or a check gave (`denied: …`, `blocked: …`).
fn refusal(decision: Option<&str>, result: &ToolOutcome) -> String {
    if decision == Some(DENIED_IN_TUI) {
        return "you denied it".to_string();
    }
    let reason = result.output.lines().next().unwrap_or("").trim();
    match (result.status, reason) {
        (ToolStatus::Blocked, "") => "blocked".to_string(),
        (_, "") => "denied".to_string(),
        (_, reason) => reason.to_string(),
    }
}

/// Most findings or reasons listed under a submission.
const MAX_SUBMISSION_ITEMS: usize = 5;

/// A submission, decoded for a reader once its JSON is complete: the files it writes, its
/// findings by severity, or its verdict with the reasons.
fn submission_lines(out: &mut Vec<Line<'static>>, theme: &Theme, name: &str, raw: &str) {
    out.push(Line::from(vec![
        Span::styled("◆ ".to_string(), Style::default().fg(theme.accent)),
        Span::styled(name.to_string(), theme.bold(theme.text)),
    ]));
    let item = |text: String, style: Style| Line::from(Span::styled(format!("  {text}"), style));
    let Ok(value) = serde_json::from_str::<Value>(raw) else {
        out.push(item(
            format!("⎿ receiving… ({} bytes)", raw.len()),
            theme.dim(),
        ));
        return;
    };
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    if let Some(files) = value.get("files").and_then(Value::as_array) {
        let names: Vec<String> = files
            .iter()
            .filter_map(|f| {
                let path = f.get("path").and_then(Value::as_str)?;
                Some(if f.get("delete") == Some(&Value::Bool(true)) {
                    format!("{path} (delete)")
                } else {
                    path.to_string()
                })
            })
            .collect();
        let files = if names.is_empty() {
            "no files".to_string()
        } else {
            names.join(", ")
        };
        out.push(item(format!("⎿ {files}"), theme.text()));
        if let Some(summary) = text("summary") {
            out.push(item(summary, theme.dim()));
        }
    } else if let Some(findings) = value.get("findings").and_then(Value::as_array) {
        let head = match findings.len() {
            0 => "⎿ no findings".to_string(),
            1 => "⎿ 1 finding".to_string(),
            n => format!("⎿ {n} findings"),
        };
        out.push(item(head, theme.text()));
        for finding in findings.iter().take(MAX_SUBMISSION_ITEMS) {
            let field = |key: &str| {
                finding.get(key).map_or(String::new(), |v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
            };
            let severity = field("severity");
            let color = match severity.as_str() {
                "high" | "critical" => theme.error,
                "medium" => theme.warning,
                _ => theme.dim,
            };
            out.push(item(
                format!(
                    "{severity} {}:{} {}",
                    field("path"),
                    field("line"),
                    field("message")
                ),
                Style::default().fg(color),
            ));
        }
    } else if let Some(accepted) = value.get("accepted").and_then(Value::as_bool) {
        let (mark, color) = if accepted {
            ("⎿ accepted", theme.success)
        } else {
            ("⎿ rejected", theme.error)
        };
        out.push(item(mark.to_string(), theme.bold(color)));
        let reasons = value.get("reasons").and_then(Value::as_array);
        for reason in reasons.into_iter().flatten().take(MAX_SUBMISSION_ITEMS) {
            if let Some(reason) = reason.as_str() {
                out.push(item(format!("• {reason}"), theme.dim()));
            }
        }
    } else {
        out.push(item(format!("⎿ {value}"), theme.dim()));
    }
}

/// A submission's diff: folded, one line of counts and the key that unfolds it; unfolded,
/// each file's unified diff (terminal controls removed: the model wrote it).
fn change_lines(out: &mut Vec<Line<'static>>, theme: &Theme, changes: &[Preview], expanded: bool) {
    let writes: Vec<(&str, &str, &str, &str)> = changes
        .iter()
        .filter_map(|c| match c {
            Preview::Write {
                path,
                before,
                after,
            } => Some((
                path.as_str(),
                match (before, after) {
                    (None, _) => "new file",
                    (Some(_), None) => "delete",
                    _ => "edit",
                },
                before.as_deref().unwrap_or(""),
                after.as_deref().unwrap_or(""),
            )),
            _ => None,
        })
        .collect();
    if writes.is_empty() {
        return;
    }
    if !expanded {
        let (added, removed) = writes
            .iter()
            .map(|(_, _, before, after)| diff_counts(before, after))
            .fold((0, 0), |(a, r), (da, dr)| (a + da, r + dr));
        out.push(Line::from(vec![
            Span::styled("  ⎿ ".to_string(), theme.dim()),
            Span::styled(format!("+{added}"), Style::default().fg(theme.added)),
            Span::styled(" ".to_string(), theme.dim()),
            Span::styled(format!("-{removed}"), Style::default().fg(theme.removed)),
            Span::styled(
                " lines · Ctrl-O shows the diff".to_string(),
                theme.dim().add_modifier(Modifier::ITALIC),
            ),
        ]));
        return;
    }
    for (path, what, before, after) in writes {
        out.push(Line::from(vec![
            Span::styled(
                format!("  {}", strip_controls(path)),
                theme.bold(theme.accent),
            ),
            Span::styled(format!("  ({what})"), theme.dim()),
        ]));
        let mut diff = Vec::new();
        diff_lines(
            &mut diff,
            &strip_controls(before),
            &strip_controls(after),
            theme,
        );
        out.extend(diff.into_iter().map(|line| {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(line.spans);
            Line::from(spans)
        }));
    }
}

/// Lines added and removed from `before` to `after`.
fn diff_counts(before: &str, after: &str) -> (usize, usize) {
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(100))
        .diff_lines(before, after);
    diff.iter_all_changes()
        .fold((0, 0), |(added, removed), change| match change.tag() {
            similar::ChangeTag::Insert => (added + 1, removed),
            similar::ChangeTag::Delete => (added, removed + 1),
            similar::ChangeTag::Equal => (added, removed),
        })
}

/// The argument a reader cares about: the path, the command, the pattern; else (and for a
/// package tool) compact JSON.
pub(crate) fn args_summary(name: &str, args: &Value) -> String {
    use splice_core::protocol::{Builtin, ToolIdentity};
    let get = |key: &str| args.get(key).and_then(Value::as_str);
    match ToolIdentity::parse(name) {
        Some(ToolIdentity::Builtin(Builtin::RunCommand)) => {
            get("command").map(|c| format!("$ {c}"))
        }
        Some(ToolIdentity::Builtin(Builtin::SearchFiles)) => {
            get("pattern").map(|p| match get("path") {
                Some(path) => format!("{p:?} in {path}"),
                None => format!("{p:?}"),
            })
        }
        // A subagent: its task's label, and the agent when the call names one.
        None if name == splice_core::tools::runner::AGENT_TOOL => {
            get("description").map(|d| match get("agent") {
                Some(agent) => format!("{d} · {agent}"),
                None => d.to_string(),
            })
        }
        // A package tool (`namespace.name.tool`): its keys mean what the package says.
        Some(ToolIdentity::Package(_)) => None,
        _ => get("path").map(str::to_string),
    }
    .unwrap_or_else(|| match args {
        Value::Object(map) if map.is_empty() => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
    .replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn submissions_are_decoded_for_a_reader() {
        let theme = Theme::ansi();
        let cell = |name: &str, raw: &str| {
            plain(
                &Cell::Submission {
                    id: "c".into(),
                    name: name.into(),
                    raw: raw.into(),
                    changes: Vec::new(),
                    expanded: false,
                }
                .lines(&theme, 80),
            )
        };
        assert_eq!(
            cell(
                "submit_code",
                r#"{"files":[{"path":"a.py","content":"x"},{"path":"b.py","delete":true}],"summary":"fix"}"#
            ),
            ["◆ submit_code", "  ⎿ a.py, b.py (delete)", "  fix", ""]
        );
        assert_eq!(
            cell(
                "submit_audit",
                r#"{"findings":[{"severity":"high","path":"a.py","line":3,"message":"shell=True"}]}"#
            ),
            [
                "◆ submit_audit",
                "  ⎿ 1 finding",
                "  high a.py:3 shell=True",
                ""
            ]
        );
        assert_eq!(
            cell(
                "submit_verdict",
                r#"{"accepted":false,"reasons":["no test"]}"#
            ),
            ["◆ submit_verdict", "  ⎿ rejected", "  • no test", ""]
        );
        assert_eq!(
            cell("submit_code", r#"{"files":[{"pa"#),
            ["◆ submit_code", "  ⎿ receiving… (14 bytes)", ""]
        );
    }

    #[test]
    fn tool_result_is_folded_to_three_lines() {
        let cell = Cell::Tool {
            id: "c1".into(),
            name: "read_file".into(),
            args: json!({"path": "src/lib.rs"}),
            side_effect: SideEffect::Read,
            decision: None,
            waiting: false,
            result: Some(ToolOutcome {
                status: ToolStatus::Ok,
                output: "1\n2\n3\n4\n5\n".into(),
                truncated: false,
            }),
            progress: None,
            agent: None,
            expanded: false,
        };
        let text = plain(&cell.lines(&Theme::ansi(), 60));
        assert_eq!(
            text,
            [
                "● read_file src/lib.rs  read",
                "  ⎿ ok",
                "    1",
                "    2",
                "    3",
                "    … 2 more lines",
                ""
            ]
        );
    }

    #[test]
    fn a_running_tool_shows_what_it_last_reported() {
        let running = |progress: Option<ToolProgress>| Cell::Tool {
            id: "c1".into(),
            name: "transcribe".into(),
            args: json!({"path": "demo.mp4"}),
            side_effect: SideEffect::Network,
            decision: None,
            waiting: false,
            result: None,
            progress: progress.map(Box::new),
            agent: None,
            expanded: false,
        };
        let line = |cell: Cell| plain(&cell.lines(&Theme::ansi(), 80))[1].clone();
        assert_eq!(line(running(None)), "  ⎿ running…");
        // Reports without a stage (an MCP tool's): one line of the latest.
        let mut progress = ToolProgress::default();
        progress.record(None, Some(0.2), Some("indexing"));
        progress.record(None, Some(0.42), Some("chunk 2 of 3"));
        assert_eq!(
            line(running(Some(progress))),
            "  ⎿ running… 42% · chunk 2 of 3"
        );
        let mut detail_only = ToolProgress::default();
        detail_only.record(None, None, Some("uploading"));
        assert_eq!(line(running(Some(detail_only))), "  ⎿ running… uploading");
    }

    /// A package tool shows its dotted name and its input as compact JSON: its keys mean what
    /// the package says (`path` of `splice.json.query` is a JSON path, not a file).
    #[test]
    fn a_package_tool_shows_its_dotted_name_and_input() {
        let cell = Cell::Tool {
            id: "c1".into(),
            name: "splice.json.query".into(),
            args: json!({"text": "{\"a\":[5]}", "path": "a[0]"}),
            side_effect: SideEffect::Read,
            decision: None,
            waiting: false,
            result: Some(ToolOutcome {
                status: ToolStatus::Ok,
                output: r#"{"found":true,"value":5,"type":"number"}"#.into(),
                truncated: false,
            }),
            progress: None,
            agent: None,
            expanded: false,
        };
        let text = plain(&cell.lines(&Theme::ansi(), 80));
        assert_eq!(
            text,
            [
                r#"● splice.json.query {"text":"{\"a\":[5]}","path":"a[0]"}  read"#,
                "  ⎿ ok",
                r#"    {"found":true,"value":5,"type":"number"}"#,
                ""
            ]
        );
    }

    #[test]
    fn user_prompt_wraps_to_the_width() {
        let cell = Cell::User("please fix the failing test in parser".into());
        let rows = cell.lines(&Theme::ansi(), 20);
        assert!(rows.len() > 2, "{:?}", plain(&rows));
        for row in &rows {
            assert!(row.width() <= 20);
        }
    }
}
