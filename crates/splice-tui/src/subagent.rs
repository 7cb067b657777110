//! A subagent's live view under the `agent` call that started it: what it is doing while it
//! runs (its latest tool calls and the last line of its notes), folded to one line of what it
//! did once the call has its result (Ctrl-O unfolds its calls and its answer).

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::truncate;
use splice_core::protocol::Event;
use splice_core::protocol::events::ToolStatus;
use splice_core::sanitize::terminal::strip_controls;

/// Tool calls shown while a subagent runs (its latest).
const LIVE_CALLS: usize = 3;
/// Tool calls kept for the unfolded view.
const MAX_CALLS: usize = 200;

#[derive(Debug, Clone, PartialEq)]
struct Call {
    id: String,
    text: String,
    status: Option<ToolStatus>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubagentView {
    id: String,
    name: String,
    calls: Vec<Call>,
    /// How many calls it made (more than are kept, for a long one).
    made: usize,
    /// The last line of its notes (its prose streams as reasoning).
    note: String,
    /// Its notes' line being streamed.
    partial: String,
    tokens: u64,
}

impl SubagentView {
    pub fn new(id: &str, name: &str) -> SubagentView {
        SubagentView {
            id: strip_controls(id).into_owned(),
            name: strip_controls(name).into_owned(),
            ..SubagentView::default()
        }
    }

    /// Take in one of its events.
    pub fn record(&mut self, event: &Event) {
        match event {
            Event::ToolCall { id, name, args, .. } => {
                self.made += 1;
                if self.calls.len() < MAX_CALLS {
                    let summary = super::cells::args_summary(name, args);
                    self.calls.push(Call {
                        id: id.clone(),
                        text: strip_controls(&format!("{name} {summary}")).into_owned(),
                        status: None,
                    });
                }
            }
            Event::ToolResult { id, status, .. } => {
                if let Some(call) = self.calls.iter_mut().find(|c| &c.id == id) {
                    call.status = Some(*status);
                }
            }
            Event::Usage(usage) => self.tokens += usage.total_tokens,
            Event::Reasoning { delta } | Event::Text { delta } => {
                self.partial.push_str(delta);
                if let Some(end) = self.partial.rfind('\n') {
                    let done: String = self.partial.drain(..=end).collect();
                    if let Some(last) = done.lines().rev().find(|l| !l.trim().is_empty()) {
                        self.note = strip_controls(last.trim()).into_owned();
                    }
                }
            }
            _ => {}
        }
    }

    fn label(&self) -> String {
        let mut text = format!("{} ({})", self.id, self.name);
        text.push_str(&format!(
            " · {} tool call{}",
            self.made,
            if self.made == 1 { "" } else { "s" }
        ));
        if self.tokens > 0 {
            text.push_str(&format!(" · {} tokens", compact(self.tokens)));
        }
        text
    }

    /// While it runs: who it is and what it did so far, then its latest calls and note.
    pub fn live_lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let mut out = vec![Line::from(vec![
            Span::styled("  ⎿ ", theme.dim()),
            Span::styled(
                truncate(
                    &format!("{} running…", self.label()),
                    width.saturating_sub(4),
                ),
                Style::default().fg(theme.accent),
            ),
        ])];
        let skip = self.calls.len().saturating_sub(LIVE_CALLS);
        out.extend(self.call_lines(theme, width, skip));
        let note = self.note_now();
        if !note.is_empty() {
            out.push(Line::from(Span::styled(
                format!("    {}", truncate(note, width.saturating_sub(4))),
                theme.dim().add_modifier(Modifier::ITALIC),
            )));
        }
        out
    }

    /// Once it ended: one line of what it did.
    pub fn summary(&self) -> String {
        self.label()
    }

    /// Unfolded: each of its calls.
    pub fn all_calls(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let mut out = self.call_lines(theme, width, 0);
        if self.made > self.calls.len() {
            out.push(Line::from(Span::styled(
                format!("    … {} more calls", self.made - self.calls.len()),
                theme.dim().add_modifier(Modifier::ITALIC),
            )));
        }
        out
    }

    fn note_now(&self) -> &str {
        let partial = self.partial.trim();
        if partial.is_empty() {
            &self.note
        } else {
            partial
        }
    }

    fn call_lines(&self, theme: &Theme, width: usize, skip: usize) -> Vec<Line<'static>> {
        self.calls
            .iter()
            .skip(skip)
            .map(|call| {
                let (mark, color) = match call.status {
                    None => ("◌ ", theme.accent),
                    Some(ToolStatus::Ok) => ("● ", theme.success),
                    Some(ToolStatus::Denied | ToolStatus::Blocked) => ("○ ", theme.warning),
                    Some(ToolStatus::Error | ToolStatus::Timeout) => ("✗ ", theme.error),
                };
                Line::from(vec![
                    Span::raw("    "),
                    Span::styled(mark.to_string(), Style::default().fg(color)),
                    Span::styled(truncate(&call.text, width.saturating_sub(6)), theme.text()),
                ])
            })
            .collect()
    }
}

/// `1234` → `1.2k`.
fn compact(tokens: u64) -> String {
    if tokens < 1000 {
        tokens.to_string()
    } else {
        format!("{:.1}k", tokens as f64 / 1000.0)
    }
}
