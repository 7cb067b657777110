//! `/mcp`: an overlay listing the session's MCP servers, each with where it was configured, its
//! state, what it runs or reaches, its tools and its last error. Up/Down select a server, `a`
//! asks to approve a selected unapproved project server, PgUp/PgDn scroll, Esc closes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::mcp_approval::exact;
use super::modal_frame::{self, Border, Fit, Rows, Scroll};
use super::theme::Theme;
use super::wrap::wrap_line;
use splice_core::mcp::{ServerState, ServerStatus};

/// What a key did to the overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverlayKey {
    Close,
    Handled,
    /// `a` on an unapproved project server: ask the person about this one.
    Approve(String),
}

pub struct McpOverlay {
    statuses: Vec<ServerStatus>,
    selected: usize,
    /// First row shown, and the rows visible at the last draw (a page).
    scroll: Scroll,
}

impl McpOverlay {
    pub fn new(statuses: Vec<ServerStatus>) -> McpOverlay {
        McpOverlay {
            statuses,
            selected: 0,
            scroll: Scroll::default(),
        }
    }

    /// The hub's newest view (a server came up, failed, listed new tools).
    pub fn update(&mut self, statuses: Vec<ServerStatus>) {
        self.statuses = statuses;
        self.selected = self.selected.min(self.statuses.len().saturating_sub(1));
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> OverlayKey {
        let plain = (key.modifiers - KeyModifiers::SHIFT).is_empty();
        let page = self.scroll.page();
        match key.code {
            KeyCode::Esc => return OverlayKey::Close,
            KeyCode::Char('q') if plain => return OverlayKey::Close,
            KeyCode::Up => self.select(-1),
            KeyCode::Down => self.select(1),
            KeyCode::PageUp => self.scroll.by(-page),
            KeyCode::PageDown => self.scroll.by(page),
            KeyCode::Char('a' | 'A') if plain => {
                if let Some(status) = self.statuses.get(self.selected)
                    && status.state == ServerState::Unapproved
                {
                    return OverlayKey::Approve(status.name.clone());
                }
            }
            _ => {}
        }
        OverlayKey::Handled
    }

    fn select(&mut self, by: isize) {
        let last = self.statuses.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(by).min(last);
        // Brought into view when drawn.
        self.scroll.first = usize::MAX;
    }

    /// Every row, and the first row of the selected server.
    fn lines(&self, theme: &Theme, width: usize) -> (Vec<Line<'static>>, usize) {
        let mut lines = Vec::new();
        let mut selected_row = 0;
        if self.statuses.is_empty() {
            lines.push(Line::from(Span::styled(
                "No MCP servers: add one with `splice mcp add`, or name one in .mcp.json",
                theme.dim(),
            )));
            return (lines, 0);
        }
        for (n, status) in self.statuses.iter().enumerate() {
            if n > 0 {
                lines.push(Line::default());
            }
            if n == self.selected {
                selected_row = lines.len();
            }
            let (state, colour) = state_style(status.state, theme);
            let marker = if n == self.selected { "› " } else { "  " };
            let mut name_style = theme.bold(theme.text);
            if n == self.selected && self.statuses.len() > 1 {
                name_style = name_style.add_modifier(Modifier::REVERSED);
            }
            let header = Line::from(vec![
                Span::styled(marker.to_string(), theme.accent()),
                Span::styled(exact(&status.name), name_style),
                Span::styled(format!("  {}  ", status.source.as_str()), theme.dim()),
                Span::styled(
                    state.to_string(),
                    Style::default().fg(colour).add_modifier(Modifier::BOLD),
                ),
            ]);
            lines.extend(wrap_line(&header, width));
            let mut detail = |label: &str, text: String, style: Style| {
                let label = Span::styled(format!("    {label:<8}"), theme.dim());
                lines.extend(hanging(label, Span::styled(text, style), width));
            };
            detail("target", exact(&status.target), theme.bold(theme.code));
            match status.state {
                ServerState::Unapproved => detail(
                    "",
                    "not started: this project's server needs your approval (a)".to_string(),
                    theme.text(),
                ),
                ServerState::Starting => detail("", "starting…".to_string(), theme.dim()),
                ServerState::Ready | ServerState::Failed => {}
            }
            if let Some(error) = &status.last_error {
                detail("error", exact(error), Style::default().fg(theme.error));
            }
            if status.state == ServerState::Ready {
                let count = status.tools.len();
                detail(
                    "tools",
                    format!("{count} tool{}", if count == 1 { "" } else { "s" }),
                    theme.text(),
                );
                for tool in &status.tools {
                    let tool = Span::styled(exact(tool), theme.text());
                    lines.extend(hanging(Span::raw("      "), tool, width));
                }
            }
        }
        (lines, selected_row)
    }

    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let fit = Fit::new(area, 110);
        let (lines, selected_row) = self.lines(theme, fit.inner);
        let keys = if self
            .statuses
            .iter()
            .any(|s| s.state == ServerState::Unapproved)
        {
            " ↑/↓ select · a approve · Esc close "
        } else {
            " Esc close "
        };
        modal_frame::draw(
            (area, buf, theme),
            fit,
            Rows {
                header: None,
                body: &lines,
                legend: Vec::new(),
                // After a selection move: the selected server's first row in view.
                follow: Some(selected_row),
            },
            Border {
                title: Span::styled(" MCP servers ", theme.bold(theme.accent)),
                keys: Some(Line::from(Span::styled(keys, theme.dim()))),
                style: theme.border(),
                scroll_keys: "PgUp/PgDn",
            },
            &mut self.scroll,
        );
    }
}

/// `label` then `text`, the text wrapped to `width` with its continuation rows indented under
/// its first, so a long command line or error reads as one block beside its label.
pub fn hanging(label: Span<'static>, text: Span<'static>, width: usize) -> Vec<Line<'static>> {
    let indent = super::wrap::str_width(&label.content);
    if width <= indent + 8 {
        return wrap_line(&Line::from(vec![label, text]), width);
    }
    let rows = wrap_line(&Line::from(text), width - indent);
    let mut out = Vec::with_capacity(rows.len());
    for (n, row) in rows.into_iter().enumerate() {
        let head = if n == 0 {
            label.clone()
        } else {
            Span::raw(" ".repeat(indent))
        };
        let mut spans = vec![head];
        spans.extend(row.spans);
        out.push(Line::from(spans));
    }
    out
}

/// Each state in its own colour: ready as success, starting as the accent, failed as an error,
/// unapproved as a warning.
fn state_style(state: ServerState, theme: &Theme) -> (&'static str, Color) {
    let colour = match state {
        ServerState::Ready => theme.success,
        ServerState::Starting => theme.accent,
        ServerState::Failed => theme.error,
        ServerState::Unapproved => theme.warning,
    };
    (state.as_str(), colour)
}

#[cfg(test)]
mod tests {
    use super::*;
    use splice_core::mcp::Source;

    fn status(name: &str, state: ServerState) -> ServerStatus {
        ServerStatus {
            name: name.into(),
            source: Source::Project,
            target: "node server.js".into(),
            state,
            tools: vec![],
            last_error: None,
        }
    }

    #[test]
    fn a_approves_only_an_unapproved_server_and_selection_stays_in_the_list() {
        let key = |code| KeyEvent::new(code, KeyModifiers::NONE);
        let mut overlay = McpOverlay::new(vec![
            status("ready", ServerState::Ready),
            status("asked", ServerState::Unapproved),
        ]);
        assert_eq!(
            overlay.handle_key(key(KeyCode::Char('a'))),
            OverlayKey::Handled
        );
        overlay.handle_key(key(KeyCode::Down));
        overlay.handle_key(key(KeyCode::Down));
        assert_eq!(
            overlay.handle_key(key(KeyCode::Char('a'))),
            OverlayKey::Approve("asked".into())
        );
        // The server list shrank under the selection: it moves to the last one.
        overlay.update(vec![status("ready", ServerState::Ready)]);
        assert_eq!(
            overlay.handle_key(key(KeyCode::Char('a'))),
            OverlayKey::Handled
        );
        assert_eq!(overlay.handle_key(key(KeyCode::Esc)), OverlayKey::Close);
    }
}
