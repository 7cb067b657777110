//! The pipeline panel, built only from `\x00STAGE` markers in reasoning deltas.

use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::theme::Theme;
use super::wrap::truncate;
use crate::protocol::marker::{
    MARKER_PREFIX, ReasoningPiece, STAGE_NAMES, StageMarker, StageStatus, split_markers,
};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
pub const PANEL_WIDTH: u16 = 30;

#[derive(Debug, Clone, PartialEq)]
pub enum StageState {
    Pending,
    Running {
        since: Instant,
    },
    Done {
        ms: Option<u64>,
    },
    Failed {
        ms: Option<u64>,
        detail: Option<String>,
    },
    Skipped,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StageRow {
    pub name: String,
    pub state: StageState,
}

#[derive(Debug, Default)]
pub struct Pipeline {
    pub stages: Vec<StageRow>,
    pub iteration: u32,
    /// The unfinished tail of a delta: a marker may arrive split across reasoning events.
    carry: String,
}

impl Pipeline {
    /// Whether the run has a pipeline at all (the panel is hidden otherwise).
    pub fn visible(&self) -> bool {
        !self.stages.is_empty()
    }

    /// Rows the panel needs: a title, each stage, and a line per failure detail.
    pub fn height(&self) -> usize {
        let details = self
            .stages
            .iter()
            .filter(|s| {
                matches!(
                    s.state,
                    StageState::Failed {
                        detail: Some(_),
                        ..
                    }
                )
            })
            .count();
        1 + self.stages.len() + details
    }

    pub fn running(&self) -> bool {
        self.stages
            .iter()
            .any(|s| matches!(s.state, StageState::Running { .. }))
    }

    pub fn reset(&mut self) {
        self.stages.clear();
        self.iteration = 0;
        self.carry.clear();
    }

    /// Take a reasoning delta: apply its markers and return the text to show (no NUL bytes).
    pub fn take_reasoning(&mut self, delta: &str, now: Instant) -> String {
        let mut text = std::mem::take(&mut self.carry);
        text.push_str(delta);
        let cut = unfinished_marker(&text);
        self.carry = text[cut..].to_string();
        let mut shown = String::new();
        for piece in split_markers(&text[..cut]) {
            match piece {
                ReasoningPiece::Text(t) => shown.push_str(&t),
                ReasoningPiece::Marker(marker) => self.apply(&marker, now),
            }
        }
        shown
    }

    /// A run that ended without closing its stages (a session saved by a process that died):
    /// what was running failed, nothing is left spinning.
    pub fn settle(&mut self) {
        for row in &mut self.stages {
            if matches!(row.state, StageState::Running { .. }) {
                row.state = StageState::Failed {
                    ms: None,
                    detail: Some("interrupted".into()),
                };
            }
        }
    }

    pub fn apply(&mut self, marker: &StageMarker, now: Instant) {
        if marker.iteration != self.iteration {
            // A new iteration starts its stages afresh.
            self.iteration = marker.iteration;
            for row in &mut self.stages {
                row.state = StageState::Pending;
            }
        }
        if self.stages.is_empty() {
            self.stages = planned_stages(marker.total)
                .into_iter()
                .map(|name| StageRow {
                    name: name.to_string(),
                    state: StageState::Pending,
                })
                .collect();
        }
        let state = match marker.status {
            StageStatus::Start => StageState::Running { since: now },
            StageStatus::Done => StageState::Done { ms: marker.ms },
            StageStatus::Failed => StageState::Failed {
                ms: marker.ms,
                detail: marker.detail.clone(),
            },
            StageStatus::Skipped => StageState::Skipped,
        };
        match self.stages.iter_mut().find(|s| s.name == marker.stage) {
            Some(row) => row.state = state,
            None => self.stages.push(StageRow {
                name: marker.stage.clone(),
                state,
            }),
        }
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant, tick: u64) {
        let title = format!(" pipeline · iteration {} ", self.iteration);
        let block = Block::default()
            .borders(Borders::LEFT)
            .border_style(theme.border())
            .title(Span::styled(title, theme.bold(theme.accent)));
        let inner_width = usize::from(area.width.saturating_sub(2));
        let mut lines = Vec::new();
        for row in &self.stages {
            let (icon, style, extra) = match &row.state {
                StageState::Pending => ("·".to_string(), theme.dim(), String::new()),
                StageState::Running { since } => (
                    SPINNER[(tick as usize) % SPINNER.len()].to_string(),
                    theme.bold(theme.accent),
                    seconds(now.saturating_duration_since(*since)),
                ),
                StageState::Done { ms } => (
                    "✓".to_string(),
                    Style::default().fg(theme.success),
                    ms_text(*ms),
                ),
                StageState::Failed { ms, .. } => (
                    "✗".to_string(),
                    Style::default().fg(theme.error),
                    ms_text(*ms),
                ),
                StageState::Skipped => ("–".to_string(), theme.dim(), "skipped".to_string()),
            };
            let label = row.name.replace('_', " ");
            let room = inner_width.saturating_sub(extra.len() + 3);
            let label = truncate(&label, room);
            let pad = inner_width.saturating_sub(label.chars().count() + extra.len() + 2);
            lines.push(Line::from(vec![
                Span::styled(format!("{icon} "), style),
                Span::styled(label, style),
                Span::raw(" ".repeat(pad)),
                Span::styled(extra, theme.dim()),
            ]));
            if let StageState::Failed {
                detail: Some(detail),
                ..
            } = &row.state
            {
                lines.push(Line::from(Span::styled(
                    format!("  {}", truncate(detail, inner_width.saturating_sub(2))),
                    Style::default().fg(theme.error),
                )));
            }
        }
        Paragraph::new(lines).block(block).render(area, buf);
    }
}

/// The stages a tier schedules, from the marker's `total` (DECISIONS.md: standard has three,
/// full all six); other totals show stages as they are seen.
fn planned_stages(total: u32) -> Vec<&'static str> {
    match total {
        6 => STAGE_NAMES.to_vec(),
        3 => vec!["code_writer", "test_runner", "acceptance_verifier"],
        _ => Vec::new(),
    }
}

/// Where an unterminated marker (or a partial marker prefix) starts, else the text's length.
fn unfinished_marker(text: &str) -> usize {
    let mut done = 0;
    while let Some(found) = text[done..].find(MARKER_PREFIX) {
        let start = done + found;
        let body = start + MARKER_PREFIX.len();
        match text[body..].find('\u{0}') {
            Some(end) => done = body + end + 1,
            None => return start,
        }
    }
    if let Some(nul) = text[done..].rfind('\u{0}') {
        let tail = &text[done + nul..];
        if tail.len() < MARKER_PREFIX.len() && MARKER_PREFIX.starts_with(tail) {
            return done + nul;
        }
    }
    text.len()
}

fn seconds(elapsed: Duration) -> String {
    format!("{:.1}s", elapsed.as_secs_f64())
}

fn ms_text(ms: Option<u64>) -> String {
    ms.map(|ms| seconds(Duration::from_millis(ms)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marker(stage: &str, status: StageStatus, iteration: u32) -> String {
        StageMarker {
            stage: stage.into(),
            status,
            iteration,
            index: 1,
            total: 3,
            ms: Some(1500),
            detail: None,
        }
        .encode()
    }

    #[test]
    fn markers_split_across_deltas_drive_the_stages_and_never_leak() {
        let mut p = Pipeline::default();
        let now = Instant::now();
        let whole = format!(
            "Starting pipeline iteration 1\n{}",
            marker("code_writer", StageStatus::Start, 1)
        );
        let (a, b) = whole.split_at(whole.len() - 7);
        let mut shown = p.take_reasoning(a, now);
        shown.push_str(&p.take_reasoning(b, now));
        assert_eq!(shown, "Starting pipeline iteration 1\n");
        assert!(!shown.contains('\u{0}'));
        assert_eq!(p.stages.len(), 3);
        assert!(matches!(p.stages[0].state, StageState::Running { .. }));
        assert_eq!(p.stages[1].state, StageState::Pending);
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 1), now);
        assert_eq!(p.stages[0].state, StageState::Done { ms: Some(1500) });
        // A partial prefix at the end of a delta waits for the rest.
        let next = marker("test_runner", StageStatus::Start, 1);
        assert_eq!(p.take_reasoning(&next[..3], now), "");
        assert_eq!(p.take_reasoning(&next[3..], now), "");
        assert!(p.running());
    }

    #[test]
    fn a_new_iteration_resets_states() {
        let mut p = Pipeline::default();
        let now = Instant::now();
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 1), now);
        p.take_reasoning(&marker("test_runner", StageStatus::Failed, 1), now);
        p.take_reasoning(&marker("code_writer", StageStatus::Start, 2), now);
        assert_eq!(p.iteration, 2);
        assert_eq!(p.stages[1].state, StageState::Pending);
        assert!(!Pipeline::default().visible());
    }
}
