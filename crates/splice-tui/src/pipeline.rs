//! The pipeline panel, built only from `\x00STAGE` markers in reasoning deltas, so any
//! stream-json stream can drive it. Earlier iterations stay visible as one summary row each.

use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget};

use super::theme::Theme;
use super::wrap::{str_width, truncate, wrap_line};
use splice_core::pipeline::tiers;
use splice_core::protocol::marker::{
    MARKER_PREFIX, ReasoningPiece, StageMarker, StageStatus, split_markers,
};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
pub const PANEL_WIDTH: u16 = 30;
/// Most unnamed slots a marker's `total` may open: a stream is data, not an allocation size.
const MAX_SLOTS: u32 = 16;
/// The key that shows or hides failure details in full (the help text names it too).
pub const DETAIL_KEY_HINT: &str = "Ctrl-T";

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

impl StageState {
    fn settled(&self) -> bool {
        matches!(
            self,
            StageState::Done { .. } | StageState::Failed { .. } | StageState::Skipped
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct StageRow {
    /// Empty for a slot no marker has named yet (a stage list no tier defines).
    pub name: String,
    pub state: StageState,
}

impl StageRow {
    fn label(&self, slot: usize) -> String {
        if self.name.is_empty() {
            format!("stage {}", slot + 1)
        } else {
            self.name.replace('_', " ")
        }
    }
}

/// A design-plan task that runs beside others (its markers carry `taskId`): its current stage.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub id: String,
    pub stage: String,
    pub state: StageState,
}

/// One iteration's stages, in their scheduled order.
#[derive(Debug, Clone, PartialEq)]
pub struct Iteration {
    pub number: u32,
    pub stages: Vec<StageRow>,
}

#[derive(Debug, Default)]
pub struct Pipeline {
    /// Every iteration of the pipeline run in progress, oldest first.
    pub iterations: Vec<Iteration>,
    /// The most iterations the run may take, when the front end knows it (its own runs'
    /// settings): the markers' payload, as docs/stream-json.md fixes it, does not carry it.
    pub max_iterations: Option<u32>,
    /// Design-plan tasks side by side (`--jobs`), in the order they started: their markers
    /// interleave, so each keeps only its current stage, on a row of its own.
    pub tasks: Vec<TaskRow>,
    /// Failure details shown in full rather than cut to one row.
    pub expanded: bool,
    /// The unfinished tail of a delta: a marker may arrive split across reasoning events.
    carry: String,
}

impl Pipeline {
    /// Whether the run has a pipeline at all (the panel is hidden otherwise).
    pub fn visible(&self) -> bool {
        !self.iterations.is_empty() || !self.tasks.is_empty()
    }

    /// The iteration in progress (the newest one).
    pub fn current(&self) -> Option<&Iteration> {
        self.iterations.last()
    }

    /// Rows the panel needs at `width` columns, its title included.
    pub fn height(&self, width: u16) -> usize {
        let theme = Theme::ansi();
        1 + self.lines(width, &theme, Instant::now(), 0).len()
    }

    pub fn running(&self) -> bool {
        self.iterations
            .iter()
            .flat_map(|it| it.stages.iter().map(|s| &s.state))
            .chain(self.tasks.iter().map(|t| &t.state))
            .any(|state| matches!(state, StageState::Running { .. }))
    }

    pub fn reset(&mut self) {
        self.iterations.clear();
        self.tasks.clear();
        self.expanded = false;
        self.carry.clear();
    }

    /// Show or hide failure details in full.
    pub fn toggle_detail(&mut self) {
        self.expanded = !self.expanded;
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
        for state in self
            .iterations
            .iter_mut()
            .flat_map(|it| it.stages.iter_mut().map(|s| &mut s.state))
            .chain(self.tasks.iter_mut().map(|t| &mut t.state))
        {
            if matches!(state, StageState::Running { .. }) {
                *state = StageState::Failed {
                    ms: None,
                    detail: Some("interrupted".into()),
                };
            }
        }
    }

    pub fn apply(&mut self, marker: &StageMarker, now: Instant) {
        if let Some(task) = &marker.task_id {
            self.apply_task(task, marker, now);
            return;
        }
        if self.restarts(marker) {
            // The next pipeline (a design plan's next task) counts its iterations afresh.
            self.iterations.clear();
        }
        if self
            .iterations
            .last()
            .is_none_or(|it| it.number != marker.iteration)
        {
            let stages = self.planned(marker);
            self.iterations.push(Iteration {
                number: marker.iteration,
                stages,
            });
        }
        let Some(iteration) = self.iterations.last_mut() else {
            return;
        };
        let state = match marker.status {
            StageStatus::Start => StageState::Running { since: now },
            StageStatus::Done => StageState::Done { ms: marker.ms },
            StageStatus::Failed => StageState::Failed {
                ms: marker.ms,
                detail: marker.detail.clone(),
            },
            StageStatus::Skipped => StageState::Skipped,
        };
        let rows = &mut iteration.stages;
        match slot_of(rows, marker) {
            Some(slot) => {
                rows[slot].name.clone_from(&marker.stage);
                rows[slot].state = state;
            }
            None => rows.push(StageRow {
                name: marker.stage.clone(),
                state,
            }),
        }
    }

    /// A task's marker: its row shows the stage it is at now.
    fn apply_task(&mut self, task: &str, marker: &StageMarker, now: Instant) {
        let state = match marker.status {
            StageStatus::Start => StageState::Running { since: now },
            StageStatus::Done => StageState::Done { ms: marker.ms },
            StageStatus::Failed => StageState::Failed {
                ms: marker.ms,
                detail: marker.detail.clone(),
            },
            // A stage its task skipped says nothing about where the task is.
            StageStatus::Skipped => return,
        };
        let row = TaskRow {
            id: task.to_string(),
            stage: marker.stage.clone(),
            state,
        };
        match self.tasks.iter_mut().find(|t| t.id == task) {
            Some(found) => *found = row,
            None => self.tasks.push(row),
        }
    }

    /// Whether `marker` begins a new pipeline: its iteration goes back, or it starts a stage
    /// that already ended in this iteration (every stage starts once per iteration).
    fn restarts(&self, marker: &StageMarker) -> bool {
        let Some(last) = self.iterations.last() else {
            return false;
        };
        if marker.iteration < last.number {
            return true;
        }
        marker.iteration == last.number
            && matches!(marker.status, StageStatus::Start | StageStatus::Skipped)
            && slot_of(&last.stages, marker).is_some_and(|slot| last.stages[slot].state.settled())
    }

    /// The stage list of a new iteration: the tier the marker names (`tiers.rs` defines them),
    /// else the previous iteration's, else `total` slots named as markers arrive.
    fn planned(&self, marker: &StageMarker) -> Vec<StageRow> {
        let pending = |name: &str| StageRow {
            name: name.to_string(),
            state: StageState::Pending,
        };
        if let Some(list) = tiers::stages_for_marker(&marker.stage, marker.index, marker.total) {
            return list.iter().map(|s| pending(s.name())).collect();
        }
        if let Some(previous) = self.iterations.last()
            && u32::try_from(previous.stages.len()).is_ok_and(|n| n == marker.total)
        {
            return previous.stages.iter().map(|s| pending(&s.name)).collect();
        }
        (0..marker.total.min(MAX_SLOTS))
            .map(|_| pending(""))
            .collect()
    }

    pub fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant, tick: u64) {
        let running = self
            .tasks
            .iter()
            .filter(|t| matches!(t.state, StageState::Running { .. }))
            .count();
        let title = match (self.current(), self.max_iterations) {
            _ if !self.tasks.is_empty() => format!(" pipeline · {running} tasks running "),
            (Some(it), Some(max)) => format!(" pipeline · iteration {} of {max} ", it.number),
            (Some(it), None) => format!(" pipeline · iteration {} ", it.number),
            (None, _) => " pipeline ".to_string(),
        };
        let block = Block::default()
            .borders(Borders::LEFT)
            .border_style(theme.border())
            .title(Span::styled(title, theme.bold(theme.accent)));
        let lines = self.lines(area.width, theme, now, tick);
        // Taller than its area (many iterations, an expanded detail): the newest rows, the
        // iteration in progress, stay in view.
        let visible = block.inner(area).height;
        let hidden = u16::try_from(lines.len())
            .unwrap_or(u16::MAX)
            .saturating_sub(visible);
        Paragraph::new(lines)
            .block(block)
            .scroll((hidden, 0))
            .render(area, buf);
    }

    /// The panel's rows below its title for a panel `width` columns wide (border included).
    fn lines(&self, width: u16, theme: &Theme, now: Instant, tick: u64) -> Vec<Line<'static>> {
        let inner = usize::from(width.saturating_sub(2)).max(1);
        let mut lines = Vec::new();
        let mut cut = false;
        for task in &self.tasks {
            let (icon, style) = icon(&task.state, theme, tick);
            let extra = match &task.state {
                StageState::Running { since } => seconds(now.saturating_duration_since(*since)),
                StageState::Done { ms } | StageState::Failed { ms, .. } => ms_text(*ms),
                StageState::Pending | StageState::Skipped => String::new(),
            };
            let room = inner.saturating_sub(str_width(&extra) + 3);
            let label = truncate(
                &format!("{} · {}", task.id, task.stage.replace('_', " ")),
                room,
            );
            let pad = inner.saturating_sub(str_width(&label) + str_width(&extra) + 2);
            lines.push(Line::from(vec![
                Span::styled(format!("{icon} "), style),
                Span::styled(label, style),
                Span::raw(" ".repeat(pad)),
                Span::styled(extra, theme.dim()),
            ]));
        }
        let Some((current, earlier)) = self.iterations.split_last() else {
            return lines;
        };
        for it in earlier {
            let mut spans = vec![Span::styled(
                format!("iteration {} ", it.number),
                theme.dim(),
            )];
            for row in &it.stages {
                let (icon, style) = icon(&row.state, theme, tick);
                spans.push(Span::styled(format!("{icon} "), style));
            }
            lines.push(Line::from(spans));
            for (slot, row) in it.stages.iter().enumerate() {
                if let StageState::Failed { detail, .. } = &row.state {
                    let text = match detail {
                        Some(detail) => format!("✗ {}: {detail}", row.label(slot)),
                        None => format!("✗ {}", row.label(slot)),
                    };
                    cut |= self.push_detail(&mut lines, &text, inner, theme);
                }
            }
        }
        if !earlier.is_empty() {
            lines.push(Line::from(Span::styled(
                format!("iteration {}", current.number),
                theme.bold(theme.text),
            )));
        }
        for (slot, row) in current.stages.iter().enumerate() {
            let (icon, style) = icon(&row.state, theme, tick);
            let extra = match &row.state {
                StageState::Pending => String::new(),
                StageState::Running { since } => seconds(now.saturating_duration_since(*since)),
                StageState::Done { ms } | StageState::Failed { ms, .. } => ms_text(*ms),
                StageState::Skipped => "skipped".to_string(),
            };
            let room = inner.saturating_sub(str_width(&extra) + 3);
            let label = truncate(&row.label(slot), room);
            let pad = inner.saturating_sub(str_width(&label) + str_width(&extra) + 2);
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
                cut |= self.push_detail(&mut lines, detail, inner, theme);
            }
        }
        if cut {
            lines.push(Line::from(Span::styled(
                format!("{DETAIL_KEY_HINT} full detail"),
                theme.dim(),
            )));
        } else if self.expanded && self.has_detail() {
            lines.push(Line::from(Span::styled(
                format!("{DETAIL_KEY_HINT} fold detail"),
                theme.dim(),
            )));
        }
        lines
    }

    /// A failure's detail, indented: all of it when expanded, else one row. Says whether it was
    /// cut short.
    fn push_detail(
        &self,
        lines: &mut Vec<Line<'static>>,
        detail: &str,
        inner: usize,
        theme: &Theme,
    ) -> bool {
        let style = Style::default().fg(theme.error);
        let room = inner.saturating_sub(2).max(1);
        if self.expanded {
            let detail = Line::from(Span::styled(detail.to_string(), style));
            for row in wrap_line(&detail, room) {
                let mut spans = vec![Span::raw("  ")];
                spans.extend(row.spans);
                lines.push(Line::from(spans));
            }
            return false;
        }
        lines.push(Line::from(Span::styled(
            format!("  {}", truncate(detail, room)),
            style,
        )));
        str_width(detail) > room
    }

    fn has_detail(&self) -> bool {
        self.iterations
            .iter()
            .flat_map(|it| it.stages.iter())
            .any(|row| matches!(row.state, StageState::Failed { .. }))
    }
}

/// Which row a marker updates: its `index` when that slot is unnamed or has its name, else the
/// row with its name.
fn slot_of(rows: &[StageRow], marker: &StageMarker) -> Option<usize> {
    let by_index = marker
        .index
        .checked_sub(1)
        .map(|i| i as usize)
        .filter(|&i| {
            rows.get(i)
                .is_some_and(|row| row.name.is_empty() || row.name == marker.stage)
        });
    by_index.or_else(|| rows.iter().position(|row| row.name == marker.stage))
}

fn icon(state: &StageState, theme: &Theme, tick: u64) -> (&'static str, Style) {
    match state {
        StageState::Pending => ("·", theme.dim()),
        StageState::Running { .. } => (
            SPINNER[(tick as usize) % SPINNER.len()],
            theme.bold(theme.accent),
        ),
        StageState::Done { .. } => ("✓", Style::default().fg(theme.success)),
        StageState::Failed { .. } => ("✗", Style::default().fg(theme.error)),
        StageState::Skipped => ("–", theme.dim()),
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

    fn at(stage: &str, status: StageStatus, iteration: u32, index: u32, total: u32) -> String {
        StageMarker {
            stage: stage.into(),
            status,
            iteration,
            index,
            total,
            ms: Some(1500),
            detail: (status == StageStatus::Failed).then(|| "exit code 1".into()),
            task_id: None,
        }
        .encode()
    }

    fn marker(stage: &str, status: StageStatus, iteration: u32) -> String {
        let index = match stage {
            "code_writer" => 1,
            "test_runner" => 2,
            _ => 3,
        };
        at(stage, status, iteration, index, 3)
    }

    fn names(it: &Iteration) -> Vec<&str> {
        it.stages.iter().map(|s| s.name.as_str()).collect()
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
        let stages = |p: &Pipeline| p.current().map(|it| it.stages.clone()).unwrap_or_default();
        assert_eq!(stages(&p).len(), 3);
        assert!(matches!(stages(&p)[0].state, StageState::Running { .. }));
        assert_eq!(stages(&p)[1].state, StageState::Pending);
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 1), now);
        assert_eq!(stages(&p)[0].state, StageState::Done { ms: Some(1500) });
        // A partial prefix at the end of a delta waits for the rest.
        let next = marker("test_runner", StageStatus::Start, 1);
        assert_eq!(p.take_reasoning(&next[..3], now), "");
        assert_eq!(p.take_reasoning(&next[3..], now), "");
        assert!(p.running());
    }

    #[test]
    fn a_new_iteration_keeps_the_earlier_ones() {
        let mut p = Pipeline::default();
        let now = Instant::now();
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 1), now);
        p.take_reasoning(&marker("test_runner", StageStatus::Failed, 1), now);
        p.take_reasoning(&marker("code_writer", StageStatus::Start, 2), now);
        assert_eq!(p.iterations.len(), 2);
        assert_eq!(
            p.iterations[0].stages[1].state,
            StageState::Failed {
                ms: Some(1500),
                detail: Some("exit code 1".into())
            }
        );
        assert_eq!(p.iterations[1].number, 2);
        assert_eq!(p.iterations[1].stages[1].state, StageState::Pending);
        assert!(!Pipeline::default().visible());
    }

    #[test]
    fn the_stage_list_comes_from_the_tier_the_marker_names_not_the_count() {
        let now = Instant::now();
        let mut full = Pipeline::default();
        full.take_reasoning(&at("code_writer", StageStatus::Start, 1, 1, 6), now);
        let list: Vec<&str> = tiers::stages(splice_core::settings::Tier::Full)
            .iter()
            .map(|s| s.name())
            .collect();
        assert_eq!(full.current().map(names), Some(list));
        // Three stages that are not `standard`'s: slots named as their markers arrive.
        let mut other = Pipeline::default();
        other.take_reasoning(&at("lint", StageStatus::Start, 1, 1, 3), now);
        other.take_reasoning(&at("lint", StageStatus::Done, 1, 1, 3), now);
        other.take_reasoning(&at("docs", StageStatus::Skipped, 1, 3, 3), now);
        assert_eq!(other.current().map(names), Some(vec!["lint", "", "docs"]));
        // A hostile total opens no more than a panel's worth of slots.
        let mut huge = Pipeline::default();
        huge.take_reasoning(&at("x", StageStatus::Start, 1, 1, u32::MAX), now);
        assert!(huge.current().is_some_and(|it| it.stages.len() <= 16));
    }

    #[test]
    fn a_stage_started_again_in_the_same_iteration_is_a_new_pipeline() {
        let mut p = Pipeline::default();
        let now = Instant::now();
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 1), now);
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 2), now);
        // The next plan task: its iterations count from 1 again.
        p.take_reasoning(&marker("code_writer", StageStatus::Start, 1), now);
        assert_eq!(p.iterations.len(), 1);
        p.take_reasoning(&marker("code_writer", StageStatus::Done, 1), now);
        p.take_reasoning(&marker("code_writer", StageStatus::Start, 1), now);
        assert_eq!(p.iterations.len(), 1);
        assert!(p.running());
    }

    #[test]
    fn a_long_detail_is_cut_to_a_row_until_expanded() {
        let mut p = Pipeline::default();
        let now = Instant::now();
        let detail =
            "test_parse failed: expected 5 got 4 in tests/test_calc.py line 12, and the END";
        let failed = StageMarker {
            detail: Some(detail.into()),
            ..StageMarker {
                stage: "test_runner".into(),
                status: StageStatus::Failed,
                iteration: 1,
                index: 2,
                total: 3,
                ms: None,
                detail: None,
                task_id: None,
            }
        };
        p.take_reasoning(&failed.encode(), now);
        let text = |p: &Pipeline| -> String {
            p.lines(PANEL_WIDTH, &Theme::ansi(), now, 0)
                .iter()
                .flat_map(|l| l.spans.iter().map(|s| s.content.to_string()))
                .collect::<Vec<_>>()
                .join("")
        };
        assert!(!text(&p).contains("END"), "{}", text(&p));
        assert!(text(&p).contains("Ctrl-T full detail"));
        let folded = p.height(PANEL_WIDTH);
        p.toggle_detail();
        assert!(text(&p).contains("END"), "{}", text(&p));
        assert!(p.height(PANEL_WIDTH) > folded);
    }

    #[test]
    fn a_panel_taller_than_its_area_keeps_the_current_iteration_in_view() {
        let mut p = Pipeline {
            max_iterations: Some(3),
            ..Pipeline::default()
        };
        let now = Instant::now();
        for iteration in 1..=6 {
            p.take_reasoning(&marker("code_writer", StageStatus::Done, iteration), now);
            p.take_reasoning(&marker("test_runner", StageStatus::Failed, iteration), now);
            p.take_reasoning(
                &marker("acceptance_verifier", StageStatus::Skipped, iteration),
                now,
            );
        }
        p.take_reasoning(&marker("code_writer", StageStatus::Start, 7), now);
        let area = Rect::new(0, 0, PANEL_WIDTH, 8);
        let mut buf = Buffer::empty(area);
        p.render(area, &mut buf, &Theme::ansi(), now, 0);
        let rows: Vec<String> = (0..area.height)
            .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect())
            .collect();
        assert!(rows[0].contains("iteration 7 of 3"), "{rows:#?}");
        assert!(
            rows.iter().any(|r| r.contains("acceptance verifier")),
            "{rows:#?}"
        );
    }

    #[test]
    fn tasks_side_by_side_each_show_their_current_stage() {
        let now = Instant::now();
        let mut p = Pipeline::default();
        let of = |task: &str, stage: &str, status: StageStatus, index: u32| {
            StageMarker {
                task_id: Some(task.into()),
                ..serde_json::from_str::<StageMarker>(&format!(
                    r#"{{"stage":"{stage}","status":"{}","iteration":1,"index":{index},"total":3}}"#,
                    status.as_str()
                ))
                .expect("marker")
            }
            .encode()
        };
        p.take_reasoning(&of("A", "code_writer", StageStatus::Start, 1), now);
        p.take_reasoning(&of("B", "code_writer", StageStatus::Start, 1), now);
        p.take_reasoning(&of("A", "code_writer", StageStatus::Done, 1), now);
        p.take_reasoning(&of("A", "test_runner", StageStatus::Start, 1), now);
        p.take_reasoning(&of("C", "code_writer", StageStatus::Start, 1), now);
        p.take_reasoning(&of("C", "code_writer", StageStatus::Failed, 1), now);
        assert!(p.visible() && p.running() && p.iterations.is_empty());
        let area = Rect::new(0, 0, PANEL_WIDTH, 5);
        let mut buf = Buffer::empty(area);
        p.render(
            area,
            &mut buf,
            &Theme::ansi(),
            now + Duration::from_millis(1200),
            0,
        );
        let rows: Vec<String> = (0..area.height)
            .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect())
            .collect();
        insta::assert_snapshot!(rows.join("\n"));
        p.settle();
        assert!(!p.running());
    }
}
