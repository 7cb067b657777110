//! Transcript cells: pure, width-aware renderings of what happened, one cell per prompt, answer,
//! tool call or notice.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use super::markdown;
use super::theme::Theme;
use super::wrap::{truncate, wrap_line};
use crate::protocol::SideEffect;
use crate::protocol::events::ToolStatus;

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
        result: Option<ToolOutcome>,
        expanded: bool,
    },
    Notice(Level, String),
}

impl Cell {
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
                result,
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
                    result: result.as_ref(),
                    expanded: *expanded,
                },
                width,
            ),
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
    result: Option<&'a ToolOutcome>,
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
                truncate(&summary, width.saturating_sub(view.name.len() + 3))
            ),
            theme.text(),
        ),
        Span::styled(format!("  {}", view.side_effect.as_str()), theme.dim()),
    ]));
    if let Some(decision) = view.decision {
        out.push(Line::from(Span::styled(
            format!("  ⎿ {decision}"),
            theme.dim(),
        )));
    }
    let Some(result) = view.result else {
        out.push(Line::from(Span::styled(
            "  ⎿ running…".to_string(),
            theme.dim(),
        )));
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
    out.push(Line::from(Span::styled(head, Style::default().fg(color))));
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

/// The argument a reader cares about: the path, the command, the pattern; else compact JSON.
fn args_summary(name: &str, args: &Value) -> String {
    let get = |key: &str| args.get(key).and_then(Value::as_str);
    match name {
        "run_command" => get("command").map(|c| format!("$ {c}")),
        "search_files" => get("pattern").map(|p| match get("path") {
            Some(path) => format!("{p:?} in {path}"),
            None => format!("{p:?}"),
        }),
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
    fn tool_result_is_folded_to_three_lines() {
        let cell = Cell::Tool {
            id: "c1".into(),
            name: "read_file".into(),
            args: json!({"path": "src/lib.rs"}),
            side_effect: SideEffect::Read,
            decision: None,
            result: Some(ToolOutcome {
                status: ToolStatus::Ok,
                output: "1\n2\n3\n4\n5\n".into(),
                truncated: false,
            }),
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
    fn user_prompt_wraps_to_the_width() {
        let cell = Cell::User("please fix the failing test in parser".into());
        let rows = cell.lines(&Theme::ansi(), 20);
        assert!(rows.len() > 2, "{:?}", plain(&rows));
        for row in &rows {
            assert!(row.width() <= 20);
        }
    }
}
