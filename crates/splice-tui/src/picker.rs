//! `--resume` without an id: a list of this directory's recent sessions; Enter opens the
//! selected one, Esc (or Ctrl-C, `q`) leaves without opening anything.

use std::time::SystemTime;

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures_util::{Stream, StreamExt};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Paragraph, Widget};

use super::theme::Theme;
use splice_core::session::log::Summary;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickerAction {
    Stay,
    Open(String),
    Cancel,
}

/// `session_x  5 min ago  fix the add function`, cut to `width` columns.
pub(crate) fn line(session: &Summary, now: SystemTime, width: usize) -> String {
    let age = now
        .duration_since(session.modified)
        .unwrap_or_default()
        .as_secs();
    let age = match age {
        0..60 => "just now".to_string(),
        60..3600 => format!("{} min ago", age / 60),
        3600..86_400 => format!("{} h ago", age / 3600),
        _ => format!("{} d ago", age / 86_400),
    };
    let line = format!("{}  {age:>10}  {}", session.id, session.first_prompt);
    super::wrap::truncate(&line, width)
}

pub struct Picker {
    sessions: Vec<Summary>,
    selected: usize,
    now: SystemTime,
}

impl Picker {
    pub fn new(sessions: Vec<Summary>, now: SystemTime) -> Picker {
        Picker {
            sessions,
            selected: 0,
            now,
        }
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> PickerAction {
        if key.kind == KeyEventKind::Release {
            return PickerAction::Stay;
        }
        let last = self.sessions.len().saturating_sub(1);
        match key.code {
            KeyCode::Char('c' | 'd') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return PickerAction::Cancel;
            }
            KeyCode::Esc | KeyCode::Char('q') => return PickerAction::Cancel,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => self.selected = (self.selected + 1).min(last),
            KeyCode::Home => self.selected = 0,
            KeyCode::End => self.selected = last,
            KeyCode::Enter => {
                if let Some(session) = self.sessions.get(self.selected) {
                    return PickerAction::Open(session.id.clone());
                }
                return PickerAction::Cancel;
            }
            _ => {}
        }
        PickerAction::Stay
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        theme.clear(area, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Rounded)
            .border_style(theme.border())
            .title(Span::styled(" Resume a session ", theme.bold(theme.accent)))
            .title_bottom(Span::styled(
                " ↑/↓ choose · Enter open · Esc cancel ",
                theme.dim(),
            ));
        let inner = block.inner(area);
        block.render(area, buf);
        let width = usize::from(inner.width.saturating_sub(2));
        // Keep the selection in view when the list is taller than the box.
        let rows = usize::from(inner.height).max(1);
        let first = self.selected.saturating_sub(rows - 1);
        let lines: Vec<Line> = self
            .sessions
            .iter()
            .enumerate()
            .skip(first)
            .take(rows)
            .map(|(i, session)| {
                let text = line(session, self.now, width);
                if i == self.selected {
                    Line::from(Span::styled(format!("› {text}"), theme.bold(theme.accent)))
                } else {
                    Line::from(Span::styled(format!("  {text}"), theme.text()))
                }
            })
            .collect();
        Paragraph::new(lines).render(inner, buf);
    }
}

/// Show the picker until a session is chosen (its id) or the person cancels (`None`).
pub async fn choose<B, E>(
    terminal: &mut Terminal<B>,
    events: &mut E,
    mut picker: Picker,
    theme: &Theme,
) -> std::io::Result<Option<String>>
where
    B: Backend,
    E: Stream<Item = std::io::Result<TermEvent>> + Unpin,
{
    loop {
        terminal
            .draw(|frame| {
                let area = frame.area();
                picker.render(area, frame.buffer_mut(), theme);
            })
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        match events.next().await {
            Some(Ok(TermEvent::Key(key))) => match picker.handle_key(key) {
                PickerAction::Stay => {}
                PickerAction::Open(id) => return Ok(Some(id)),
                PickerAction::Cancel => return Ok(None),
            },
            Some(Ok(_)) => {}
            Some(Err(e)) => return Err(e),
            None => return Ok(None),
        }
    }
}
