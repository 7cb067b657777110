//! The transcript: a list of cells with their wrapped rows cached per width, drawn bottom-up so a
//! frame only touches the cells that are visible, however long the session.

use std::collections::HashMap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::cells::{Cell, ToolOutcome};
use super::theme::Theme;
use splice_core::protocol::events::ToolStatus;

struct Entry {
    cell: Cell,
    /// Rows for the width they were wrapped at; cleared when the cell changes.
    rows: Option<(u16, Vec<Line<'static>>)>,
}

impl Entry {
    fn rows(&mut self, theme: &Theme, width: u16) -> &[Line<'static>] {
        if self.rows.as_ref().is_none_or(|(w, _)| *w != width) {
            self.rows = Some((width, self.cell.lines(theme, width)));
        }
        self.rows.as_ref().map_or(&[], |(_, rows)| rows.as_slice())
    }
}

#[derive(Default)]
pub struct Transcript {
    entries: Vec<Entry>,
    /// Tool call id to entry index, to attach results and decisions.
    tools: HashMap<String, usize>,
    /// Rows scrolled up from the bottom; 0 keeps the view pinned to the newest row.
    scroll: usize,
    /// The width of the last frame, to keep a scrolled-up view still while rows arrive.
    last_width: u16,
    last_height: u16,
}

impl Transcript {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn cells(&self) -> impl Iterator<Item = &Cell> {
        self.entries.iter().map(|e| &e.cell)
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.tools.clear();
        self.scroll = 0;
    }

    pub fn push(&mut self, cell: Cell) {
        if let Cell::Tool { id, .. } | Cell::Submission { id, .. } = &cell {
            self.tools.insert(id.clone(), self.entries.len());
        }
        self.entries.push(Entry { cell, rows: None });
        let index = self.entries.len() - 1;
        self.keep_view(index, 0);
    }

    pub fn last(&self) -> Option<&Cell> {
        self.entries.last().map(|e| &e.cell)
    }

    /// Give every tool call still waiting for its result an `interrupted` one (a replayed
    /// session whose run never ended).
    pub fn settle_open_tools(&mut self) {
        let open: Vec<usize> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.cell, Cell::Tool { result: None, .. }))
            .map(|(i, _)| i)
            .collect();
        for index in open {
            self.update(index, |cell| {
                if let Cell::Tool { result, .. } = cell {
                    *result = Some(ToolOutcome {
                        status: ToolStatus::Error,
                        output: "interrupted".into(),
                        truncated: false,
                    });
                }
            });
        }
    }

    pub fn update_tool(&mut self, id: &str, change: impl FnOnce(&mut Cell)) -> bool {
        match self.tools.get(id).copied() {
            Some(index) => {
                self.update(index, change);
                true
            }
            None => false,
        }
    }

    /// Change the cell at `index` in place (a streamed delta to the cell it belongs to).
    pub fn update(&mut self, index: usize, change: impl FnOnce(&mut Cell)) {
        let Some(entry) = self.entries.get_mut(index) else {
            return;
        };
        let before = entry.rows.as_ref().map_or(0, |(_, r)| r.len());
        change(&mut entry.cell);
        entry.rows = None;
        self.keep_view(index, before);
    }

    /// While scrolled up, rows added below must not move what the user is reading.
    fn keep_view(&mut self, index: usize, rows_before: usize) {
        if self.scroll == 0 || self.last_width == 0 {
            return;
        }
        let theme = Theme::ansi();
        if let Some(entry) = self.entries.get_mut(index) {
            let after = entry.rows(&theme, self.last_width).len();
            // Theme only affects styles, not row counts; drop the ansi-styled cache.
            entry.rows = None;
            self.scroll += after.saturating_sub(rows_before);
        }
    }

    pub fn scrolled(&self) -> bool {
        self.scroll > 0
    }

    pub fn scroll_up(&mut self, rows: usize) {
        self.scroll = self.scroll.saturating_add(rows);
        // Clamp so PageDown works at once after scrolling past the top.
        let total: usize = self
            .entries
            .iter()
            .map(|e| e.rows.as_ref().map_or(1, |(_, r)| r.len()))
            .sum();
        self.scroll = self
            .scroll
            .min(total.saturating_sub(usize::from(self.last_height)));
    }

    pub fn scroll_down(&mut self, rows: usize) {
        self.scroll = self.scroll.saturating_sub(rows);
    }

    pub fn page(&self) -> usize {
        usize::from(self.last_height.saturating_sub(2).max(1))
    }

    pub fn toggle_tool_folding(&mut self) {
        // The newest cell with something to fold is the one a reader means (a short result
        // after a submission's diff does not take the key from it).
        if let Some(index) = self.entries.iter().rposition(|e| e.cell.folds()) {
            self.update(index, |cell| {
                if let Cell::Tool { expanded, .. } | Cell::Submission { expanded, .. } = cell {
                    *expanded = !*expanded;
                }
            });
        }
    }

    /// Draw the visible window: walk cells from the newest until the rows above the scroll
    /// offset fill the area.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        self.last_width = area.width;
        self.last_height = area.height;
        if area.height == 0 || area.width == 0 {
            return;
        }
        let needed = self.scroll + usize::from(area.height);
        let mut collected: Vec<(usize, usize)> = Vec::new();
        let mut total = 0usize;
        for index in (0..self.entries.len()).rev() {
            let rows = self.entries[index].rows(theme, area.width).len();
            collected.push((index, rows));
            total += rows;
            if total >= needed {
                break;
            }
        }
        // Rows of `collected` (oldest first) to skip so the window ends `scroll` rows up.
        let skip = total.saturating_sub(needed);
        let mut row_index = 0usize;
        let mut y = area.y;
        for (index, _) in collected.into_iter().rev() {
            for line in self.entries[index].rows(theme, area.width) {
                if row_index >= skip {
                    if y >= area.bottom() {
                        return;
                    }
                    buf.set_line(area.x, y, line, area.width);
                    y += 1;
                }
                row_index += 1;
            }
        }
    }
}
