//! A running tool's progress history, built from its `tool_progress` reports, and the live view
//! drawn from it inside the tool's cell. Generic for any tool; richest for the conventions the
//! `transcribe` tool follows:
//! - stage reports: detail `"<status>"` or `"<status> · <note>"`, status `start|done|skipped|failed`;
//! - chunk reports: detail `"chunk <n>/<total> <status>"`;
//! - the plan: stage `plan`, detail `"estimate $<low>–$<high>"`;
//! - retries: detail `"retry <attempt>/<max>"`.
//!
//! A tool whose reports carry no stage (an MCP tool's `fraction`/`detail`) keeps a one-line view.

use std::collections::BTreeMap;

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::wrap::{str_width, truncate};
use splice_core::sanitize::terminal::strip_controls;

/// Stages kept per call; reports of further new stages are dropped.
pub const MAX_STAGES: usize = 24;
/// Chunks kept per call (by number); reports of further new chunks are dropped.
pub const MAX_CHUNKS: usize = 4096;
/// Columns kept of a stage name.
const MAX_NAME_COLS: usize = 32;
/// Columns kept of any other reported text.
const MAX_TEXT_COLS: usize = 120;
/// Widest progress bar, in columns.
const MAX_BAR_COLS: usize = 30;
/// Indent of the live view under the tool's header.
const INDENT: &str = "    ";

/// Scribiz's stages in the order it runs them: a stage reported late is still listed in place.
const SCRIBIZ_ORDER: [&str; 13] = [
    "resolve",
    "download",
    "extract",
    "chunk",
    "upload",
    "transcribe",
    "verify",
    "repair",
    "proofread",
    "visual-prep",
    "visual",
    "synthesize",
    "render",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    Running,
    Done,
    Skipped,
    Failed,
}

impl StageState {
    fn parse(word: &str) -> Option<StageState> {
        match word {
            "start" => Some(StageState::Running),
            "done" => Some(StageState::Done),
            "skipped" => Some(StageState::Skipped),
            "failed" => Some(StageState::Failed),
            _ => None,
        }
    }

    fn is_final(self) -> bool {
        self != StageState::Running
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: String,
    pub state: StageState,
    /// The latest fraction (0..1) reported while it ran.
    pub fraction: Option<f64>,
    /// The latest other text reported for it (`3/6 MB`, `1 chunk, 9 s of speech`).
    pub note: Option<String>,
    /// When it was last reported (a report counter), to tell the current stage.
    touched: u64,
    /// Never reported a status (Scribiz sends no `start` for its transcribe step, only chunk
    /// lines): it ends when its fraction reaches 1 or all the chunks are done.
    implicit: bool,
}

/// Chunk states in the order a summary lists them (after `done`).
const CHUNK_STATES: [&str; 8] = [
    "done",
    "failed",
    "retry",
    "repairing",
    "verifying",
    "transcribing",
    "uploading",
    "queued",
];

/// One report as it came, for the one-line view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub stage: Option<String>,
    pub fraction: Option<f64>,
    pub detail: Option<String>,
}

/// Everything a running tool reported, bounded: stages in order with their state, the chunk
/// states, the estimate, the latest retry, and the latest report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolProgress {
    stages: Vec<Stage>,
    /// Chunk number to an index into `CHUNK_STATES`.
    chunks: BTreeMap<u32, u8>,
    chunk_total: Option<u32>,
    estimate: Option<String>,
    /// The latest retry: its stage and `retry 1/3`.
    retry: Option<(Option<String>, String)>,
    last: Report,
    reports: u64,
}

impl ToolProgress {
    /// Take in one report. Text is stripped of controls and cut to a bound; a fraction outside
    /// 0..1 is clamped, a non-finite one dropped.
    pub fn record(&mut self, stage: Option<&str>, fraction: Option<f64>, detail: Option<&str>) {
        self.reports += 1;
        let stage = stage
            .map(|s| clean(s, MAX_NAME_COLS))
            .filter(|s| !s.is_empty());
        let fraction = fraction
            .filter(|f| f.is_finite())
            .map(|f| f.clamp(0.0, 1.0));
        let detail = detail
            .map(|d| clean(d, MAX_TEXT_COLS))
            .filter(|d| !d.is_empty());
        self.last = Report {
            stage: stage.clone(),
            fraction,
            detail: detail.clone(),
        };
        if stage.as_deref() == Some("plan") {
            if let Some(estimate) = detail.as_deref().and_then(|d| d.strip_prefix("estimate ")) {
                self.estimate = Some(estimate.to_string());
            }
            return;
        }
        let detail = detail.as_deref().unwrap_or("");
        if let Some(rest) = detail.strip_prefix("chunk ") {
            self.record_chunk(rest);
            if let Some(stage) = &stage {
                self.touch(stage, None, None, None);
                // The stage the chunks are reported under ends with them when it said no `done`.
                let (counts, total) = self.chunk_counts();
                if total > 0
                    && counts[0] == total
                    && let Some(s) = self
                        .stages
                        .iter_mut()
                        .find(|s| s.name == *stage && s.implicit)
                {
                    s.state = StageState::Done;
                    if matches!(&self.retry, Some((Some(r), _)) if r == stage) {
                        self.retry = None;
                    }
                }
            }
            return;
        }
        if detail.starts_with("retry ") {
            self.retry = Some((stage.clone(), detail.to_string()));
            if let Some(stage) = &stage {
                self.touch(stage, None, fraction, None);
            }
            return;
        }
        let Some(stage) = stage else { return };
        let (status, note) = match detail.split_once(" · ") {
            Some((word, note)) => (StageState::parse(word), Some(note)),
            None => (StageState::parse(detail), None),
        };
        let note = match status {
            Some(_) => note,
            None => Some(detail).filter(|d| !d.is_empty()),
        };
        self.touch(&stage, status, fraction, note);
    }

    /// A stage's report: created where it belongs if new (while there is room), its state moved
    /// on unless it already ended (a late or repeated report does not revive it).
    fn touch(
        &mut self,
        name: &str,
        status: Option<StageState>,
        fraction: Option<f64>,
        note: Option<&str>,
    ) {
        let index = match self.stages.iter().position(|s| s.name == name) {
            Some(index) => index,
            None if self.stages.len() < MAX_STAGES => {
                let at = insert_position(&self.stages, name);
                self.stages.insert(
                    at,
                    Stage {
                        name: name.to_string(),
                        state: StageState::Running,
                        fraction: None,
                        note: None,
                        touched: 0,
                        implicit: true,
                    },
                );
                at
            }
            None => return,
        };
        let stage = &mut self.stages[index];
        if stage.state.is_final() {
            return;
        }
        stage.touched = self.reports;
        if let Some(status) = status {
            stage.state = status;
            stage.implicit = false;
        }
        if let Some(fraction) = fraction {
            stage.fraction = Some(fraction);
        }
        if stage.implicit && stage.fraction == Some(1.0) {
            stage.state = StageState::Done;
        }
        if let Some(note) = note {
            stage.note = Some(note.to_string());
        }
        if stage.state.is_final()
            && let Some((Some(retried), _)) = &self.retry
            && *retried == stage.name
        {
            self.retry = None;
        }
    }

    /// `<n>/<total> <status>`; a number out of range or an unknown status is ignored.
    fn record_chunk(&mut self, rest: &str) {
        let mut words = rest.split_whitespace();
        let (Some(count), Some(status)) = (words.next(), words.next()) else {
            return;
        };
        let Some(state) = CHUNK_STATES.iter().position(|s| *s == status) else {
            return;
        };
        let (number, total) = count.split_once('/').unwrap_or((count, "?"));
        let total = total.parse::<u32>().ok().filter(|t| *t > 0);
        if let Some(total) = total {
            self.chunk_total = Some(total);
        }
        let Ok(number) = number.parse::<u32>() else {
            return;
        };
        if number == 0 || self.chunk_total.is_some_and(|t| number > t) {
            return;
        }
        if self.chunks.len() >= MAX_CHUNKS && !self.chunks.contains_key(&number) {
            return;
        }
        self.chunks.insert(number, state as u8);
    }

    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    pub fn estimate(&self) -> Option<&str> {
        self.estimate.as_deref()
    }

    /// How many chunks are in each state, `CHUNK_STATES` order, and the total.
    pub fn chunk_counts(&self) -> ([usize; CHUNK_STATES.len()], usize) {
        let mut counts = [0usize; CHUNK_STATES.len()];
        for state in self.chunks.values() {
            counts[usize::from(*state)] += 1;
        }
        let highest = self.chunks.keys().next_back().copied().unwrap_or(0);
        let total = self.chunk_total.map_or(highest, |t| t.max(highest));
        (counts, total as usize)
    }

    /// Whether there is more than a bare fraction and detail to show.
    fn is_rich(&self) -> bool {
        !self.stages.is_empty() || !self.chunks.is_empty() || self.estimate.is_some()
    }

    /// The running stage reported last.
    fn current(&self) -> Option<&Stage> {
        self.stages
            .iter()
            .filter(|s| s.state == StageState::Running)
            .max_by_key(|s| s.touched)
    }

    /// `transcribe 42% · chunk 2/3 done`: the latest report's known parts.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let head = match (&self.last.stage, self.last.fraction) {
            (Some(stage), Some(f)) => Some(format!("{stage} {}", percent(f))),
            (Some(stage), None) => Some(stage.clone()),
            (None, Some(f)) => Some(percent(f)),
            (None, None) => None,
        };
        parts.extend(head);
        parts.extend(self.last.detail.clone());
        parts.join(" · ")
    }

    /// The line a finished call keeps of its live view: `7 stages, 1 failed · 5 chunks`.
    pub fn folded(&self) -> Option<String> {
        if !self.is_rich() {
            return None;
        }
        let mut parts = Vec::new();
        if !self.stages.is_empty() {
            let n = self.stages.len();
            let mut text = format!("{n} stage{}", if n == 1 { "" } else { "s" });
            let failed = self
                .stages
                .iter()
                .filter(|s| s.state == StageState::Failed)
                .count();
            if failed > 0 {
                text.push_str(&format!(", {failed} failed"));
            }
            parts.push(text);
        }
        let (_, total) = self.chunk_counts();
        if total > 0 {
            parts.push(format!(
                "{total} chunk{}",
                if total == 1 { "" } else { "s" }
            ));
        }
        Some(parts.join(" · ")).filter(|s| !s.is_empty())
    }

    /// The live view under a running tool's header, rows of at most `width` columns.
    pub fn live_lines(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        if !self.is_rich() {
            let summary = self.summary();
            let text = if summary.is_empty() {
                "  ⎿ running…".to_string()
            } else {
                format!("  ⎿ running… {summary}")
            };
            return vec![Line::from(Span::styled(text, theme.dim()))];
        }
        let mut out = vec![Line::from(Span::styled("  ⎿ running…", theme.dim()))];
        let room = width.saturating_sub(INDENT.len()).max(1);
        out.extend(self.stage_rows(theme, room));
        out.extend(self.bar_row(theme, room));
        let parts = |parts: Vec<String>, style: Style| {
            let items = parts.into_iter().map(|p| vec![(p, style)]).collect();
            pack(items, (" · ", style), room)
        };
        if let Some(chunks) = self.chunk_parts() {
            out.extend(parts(chunks, theme.text()));
        }
        let mut tail = Vec::new();
        if let Some(estimate) = &self.estimate {
            // Narrow: the figures matter more than the word.
            let worded = format!("estimate {estimate}");
            tail.push(if str_width(&worded) <= room {
                worded
            } else {
                estimate.clone()
            });
        }
        if let Some((stage, retry)) = &self.retry {
            tail.push(match stage {
                Some(stage) => format!("{stage} {retry}"),
                None => retry.clone(),
            });
        }
        out.extend(parts(tail, theme.dim()));
        out
    }

    /// `✓ resolve  ◐ transcribe 42%  – visual`: items packed into rows, never split.
    fn stage_rows(&self, theme: &Theme, room: usize) -> Vec<Line<'static>> {
        let items = self.stages.iter().map(|stage| {
            let (mark, style) = match stage.state {
                StageState::Done => ("✓ ", Style::default().fg(theme.success)),
                StageState::Running => ("◐ ", theme.bold(theme.accent)),
                StageState::Failed => ("✗ ", Style::default().fg(theme.error)),
                StageState::Skipped => ("– ", theme.dim()),
            };
            let mut label = stage.name.clone();
            if stage.state == StageState::Running
                && let Some(f) = stage.fraction
            {
                label.push(' ');
                label.push_str(&percent(f));
            }
            let text_style = match stage.state {
                StageState::Skipped => theme.dim(),
                _ => theme.text(),
            };
            vec![(mark.to_string(), style), (label, text_style)]
        });
        pack(items.collect(), ("  ", Style::default()), room)
    }

    /// A bar for the current stage's fraction with its percent, name and note; the bar is left
    /// out when the row is too narrow for it.
    fn bar_row(&self, theme: &Theme, room: usize) -> Option<Line<'static>> {
        let stage = self.current()?;
        let fraction = stage.fraction?;
        let mut label = format!("{} {}", percent(fraction), stage.name);
        if let Some(note) = &stage.note {
            label.push_str(" · ");
            label.push_str(note);
        }
        let bar = (room / 2).min(MAX_BAR_COLS);
        let mut spans = vec![Span::raw(INDENT)];
        let label_room = if bar >= 6 {
            // Rounded down: a bar is full only when the stage is.
            let filled = ((fraction * bar as f64) as usize).min(bar);
            spans.push(Span::styled("━".repeat(filled), theme.accent()));
            spans.push(Span::styled("─".repeat(bar - filled), theme.dim()));
            spans.push(Span::raw(" "));
            room - bar - 1
        } else {
            room
        };
        spans.push(Span::styled(
            truncate(&label, label_room.max(1)),
            theme.text(),
        ));
        Some(Line::from(spans))
    }

    /// `chunks 3/5 done`, `1 transcribing`, `1 queued`.
    fn chunk_parts(&self) -> Option<Vec<String>> {
        let (counts, total) = self.chunk_counts();
        if total == 0 {
            return None;
        }
        let mut parts = vec![format!("chunks {}/{total} done", counts[0])];
        for (state, count) in CHUNK_STATES.iter().zip(counts).skip(1) {
            if count > 0 {
                parts.push(format!("{count} {state}"));
            }
        }
        Some(parts)
    }
}

/// Items (each a few styled pieces) packed into indented rows of at most `room` columns after
/// the indent, `separator` between items on a row; an item is never split across rows, and one
/// wider than a row is cut.
fn pack(
    items: Vec<Vec<(String, Style)>>,
    separator: (&str, Style),
    room: usize,
) -> Vec<Line<'static>> {
    let gap = str_width(separator.0);
    let mut rows: Vec<Vec<Span<'static>>> = Vec::new();
    let mut used = 0usize;
    for item in items {
        let width: usize = item.iter().map(|(text, _)| str_width(text)).sum();
        if !rows.is_empty() && used + gap + width <= room {
            if let Some(row) = rows.last_mut() {
                row.push(Span::styled(separator.0.to_string(), separator.1));
            }
            used += gap + width;
        } else {
            rows.push(vec![Span::raw(INDENT)]);
            used = width.min(room);
        }
        let Some(row) = rows.last_mut() else { continue };
        let mut left = room;
        for (text, style) in item {
            if left == 0 {
                break;
            }
            let piece = truncate(&text, left);
            left = left.saturating_sub(str_width(&piece));
            row.push(Span::styled(piece, style));
        }
    }
    rows.into_iter().map(Line::from).collect()
}

/// Where a new stage goes: a Scribiz stage before the first listed stage that Scribiz runs
/// after it; any other stage last.
fn insert_position(stages: &[Stage], name: &str) -> usize {
    let rank = |n: &str| SCRIBIZ_ORDER.iter().position(|s| *s == n);
    let Some(new) = rank(name) else {
        return stages.len();
    };
    stages
        .iter()
        .position(|s| rank(&s.name).is_some_and(|r| r > new))
        .unwrap_or(stages.len())
}

fn clean(text: &str, cols: usize) -> String {
    let text = strip_controls(text);
    truncate(text.replace(['\n', '\t'], " ").trim(), cols)
}

/// Whole percent, rounded, but 100% only when the stage says it is complete.
fn percent(fraction: f64) -> String {
    let mut whole = (fraction * 100.0).round();
    if whole >= 100.0 && fraction < 1.0 {
        whole = 99.0;
    }
    format!("{whole:.0}%")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn states(p: &ToolProgress) -> Vec<(String, StageState)> {
        p.stages()
            .iter()
            .map(|s| (s.name.clone(), s.state))
            .collect()
    }

    #[test]
    fn stages_follow_their_status_and_a_late_report_does_not_revive_one() {
        let mut p = ToolProgress::default();
        p.record(Some("extract"), None, Some("start"));
        p.record(Some("extract"), Some(1.0), Some("done"));
        // Late and repeated reports of an ended stage.
        p.record(Some("extract"), None, Some("start"));
        p.record(Some("extract"), Some(0.3), None);
        p.record(Some("extract"), Some(1.0), Some("done"));
        p.record(Some("visual"), None, Some("skipped"));
        p.record(Some("verify"), None, Some("failed · 2 chunks unreadable"));
        assert_eq!(
            states(&p),
            [
                ("extract".to_string(), StageState::Done),
                ("verify".to_string(), StageState::Failed),
                ("visual".to_string(), StageState::Skipped),
            ]
        );
        assert_eq!(p.stages()[0].fraction, Some(1.0));
        assert_eq!(p.stages()[1].note.as_deref(), Some("2 chunks unreadable"));
    }

    #[test]
    fn a_stage_reported_out_of_order_is_listed_where_scribiz_runs_it() {
        let mut p = ToolProgress::default();
        p.record(Some("transcribe"), None, Some("start"));
        p.record(Some("my-step"), None, Some("start"));
        p.record(Some("extract"), None, Some("done"));
        p.record(Some("resolve"), None, Some("done"));
        let names: Vec<&str> = p.stages().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["resolve", "extract", "transcribe", "my-step"]);
    }

    #[test]
    fn chunks_are_counted_by_their_latest_state() {
        let mut p = ToolProgress::default();
        for (n, status) in [
            (1, "queued"),
            (2, "queued"),
            (1, "transcribing"),
            (1, "done"),
            (1, "done"),
            (2, "uploading"),
            (3, "bogus"),
            (0, "done"),
            (9, "done"),
        ] {
            p.record(
                Some("transcribe"),
                None,
                Some(&format!("chunk {n}/4 {status}")),
            );
        }
        let (counts, total) = p.chunk_counts();
        assert_eq!(total, 4);
        assert_eq!(counts[0], 1, "done");
        assert_eq!(counts[6], 1, "uploading");
        assert_eq!(
            counts.iter().sum::<usize>(),
            2,
            "0, 9 and a bogus status are ignored"
        );
        assert_eq!(
            p.chunk_parts().unwrap_or_default(),
            ["chunks 1/4 done", "1 uploading"]
        );
        // A chunk report also marks its stage as running.
        assert_eq!(
            states(&p),
            [("transcribe".to_string(), StageState::Running)]
        );
    }

    /// Scribiz sends no `start`/`done` for its transcribe step, only chunk lines.
    #[test]
    fn a_stage_without_a_status_ends_when_its_chunks_or_its_fraction_do() {
        let mut p = ToolProgress::default();
        for status in ["uploading", "transcribing", "done"] {
            p.record(
                Some("transcribe"),
                None,
                Some(&format!("chunk 1/2 {status}")),
            );
            assert_eq!(p.stages()[0].state, StageState::Running, "{status}");
        }
        p.record(Some("transcribe"), None, Some("chunk 2/2 done"));
        assert_eq!(p.stages()[0].state, StageState::Done);
        p.record(Some("upload"), Some(0.5), Some("3/6 MB"));
        assert_eq!(p.stages()[0].name, "upload");
        assert_eq!(p.stages()[0].state, StageState::Running);
        p.record(Some("upload"), Some(1.0), None);
        assert_eq!(p.stages()[0].state, StageState::Done);
        // A stage that said `start` waits for its own `done`.
        p.record(Some("verify"), None, Some("start"));
        p.record(Some("verify"), Some(1.0), None);
        assert_eq!(p.stages()[2].state, StageState::Running);
    }

    #[test]
    fn caps_hold() {
        let mut p = ToolProgress::default();
        for i in 0..MAX_STAGES + 10 {
            p.record(Some(&format!("step-{i}")), None, Some("start"));
        }
        assert_eq!(p.stages().len(), MAX_STAGES);
        for n in 1..=(MAX_CHUNKS as u32 + 100) {
            p.record(None, None, Some(&format!("chunk {n}/999999 done")));
        }
        assert_eq!(p.chunks.len(), MAX_CHUNKS);
        // A kept chunk still changes state at the cap.
        p.record(None, None, Some("chunk 1/999999 failed"));
        assert_eq!(p.chunk_counts().0[1], 1);
        let long = "x".repeat(10_000);
        p.record(Some(&long), Some(7.0), Some(&long));
        let Report {
            stage,
            fraction,
            detail,
        } = &p.last;
        assert!(
            stage
                .as_deref()
                .is_some_and(|s| str_width(s) <= MAX_NAME_COLS)
        );
        assert!(
            detail
                .as_deref()
                .is_some_and(|d| str_width(d) <= MAX_TEXT_COLS)
        );
        assert_eq!(*fraction, Some(1.0));
    }

    #[test]
    fn hostile_text_is_stripped_and_the_plan_is_an_estimate_not_a_stage() {
        let mut p = ToolProgress::default();
        p.record(Some("plan"), None, Some("estimate $0.01–$0.02"));
        p.record(
            Some("up\u{1b}]0;pwned\u{7}load"),
            Some(f64::NAN),
            Some("start\u{1b}[2J"),
        );
        assert_eq!(p.estimate(), Some("$0.01–$0.02"));
        assert_eq!(states(&p), [("upload".to_string(), StageState::Running)]);
        assert_eq!(p.stages()[0].fraction, None);
    }

    #[test]
    fn a_retry_is_shown_until_its_stage_ends() {
        let mut p = ToolProgress::default();
        p.record(Some("transcribe"), None, Some("start"));
        p.record(Some("transcribe"), None, Some("retry 1/3"));
        let theme = Theme::ansi();
        let text = |p: &ToolProgress| -> String {
            p.live_lines(&theme, 80)
                .iter()
                .map(|l| {
                    l.spans
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(text(&p).contains("transcribe retry 1/3"), "{}", text(&p));
        p.record(Some("transcribe"), Some(1.0), Some("done"));
        assert!(!text(&p).contains("retry"), "{}", text(&p));
    }
}
