//! The permission prompt: a modal view over the transcript showing the tool, its side effect,
//! its risk and the exact command or a diff of the write. It cannot be answered by accident:
//! keys are the composer's for a moment after it appears and while the person is typing,
//! "allow always" asks twice (and is not offered for high-risk calls), and every key that is
//! not the prompt's goes back to the composer. A question that can be saved to the config file
//! (a blocked host) offers "always, saved" beside "for the session", asked twice as well.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use similar::{ChangeTag, TextDiff};

use super::modal_frame::{self, Border, Fit, Rows, Scroll};
use super::theme::Theme;
use super::wrap::{str_width, wrap_line};
use splice_core::bus::{AlwaysScope, Answer, ConfigSave, PermissionQuestion, Preview};
use splice_core::protocol::events::Risk;
use splice_core::sanitize::terminal::strip_controls;

/// Rows of diff shown at most; a diff longer than this says so at its end.
const MAX_PREVIEW_ROWS: usize = 20_000;
/// The most time a prompt's diff may take to compute.
const DIFF_TIMEOUT: Duration = Duration::from_millis(100);
/// How long after a prompt appears its keys still belong to the composer: a person typing
/// when it pops up has not read it.
pub const GUARD: Duration = Duration::from_millis(400);
/// Keys closer together than this are typing; the prompt waits for a pause.
pub const TYPING_GAP: Duration = Duration::from_millis(400);

/// Keeps keys typed ahead from answering a modal: for [`GUARD`] after it comes to the front,
/// and after that until a pause in typing. Shared by every modal that asks a person to approve.
#[derive(Debug, Clone, Copy)]
pub struct KeyGuard {
    until: Instant,
}

impl KeyGuard {
    pub fn new(now: Instant) -> KeyGuard {
        KeyGuard { until: now + GUARD }
    }

    /// The modal comes to the front at `now`: a key meant for what was in front must not
    /// answer it, so the guard starts again.
    pub fn reveal(&mut self, now: Instant) {
        self.until = self.until.max(now + GUARD);
    }

    /// Whether keys at `now` still go to the composer.
    pub fn guarded(&self, now: Instant) -> bool {
        now < self.until
    }

    /// A key at `now` while guarded: still typing, so the guard lasts until a pause.
    pub fn still_typing(&mut self, now: Instant) {
        self.until = self.until.max(now + TYPING_GAP);
    }

    /// A key at `now` that is no answer: someone typing, so the modal waits for a pause.
    pub fn typed(&mut self, now: Instant) {
        self.until = now + TYPING_GAP;
    }
}

/// What became of a key given to the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOutcome {
    /// The prompt is answered and closes.
    Answered,
    /// The prompt used the key (scrolling, the first `a`).
    Handled,
    /// Not the prompt's key (or it came too soon): it belongs to the composer.
    ToComposer,
}

/// A view drawn over the transcript that answers to its own keys while open.
pub trait ModalView {
    /// Handle a key pressed at `now`.
    fn handle_key(&mut self, key: KeyEvent, now: Instant) -> KeyOutcome;
    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant);
}

/// Which "always" waits to be confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Always {
    /// `a`: the question's rule for the rest of the session.
    Session,
    /// `s`: and the question's setting written to the config file.
    Saved,
}

pub struct PermissionModal {
    pub question: PermissionQuestion,
    /// The question as drawn: controls and bidirectional overrides removed.
    shown: PermissionQuestion,
    /// Whether `shown` lost characters, which the prompt then says.
    altered: bool,
    /// How many prompts wait behind this one.
    pub queued: usize,
    pub answer: Option<Answer>,
    /// Keys before this instant go to the composer.
    guard: KeyGuard,
    /// `a` (or `s`) was pressed once; the same key again or Enter grants it.
    pub confirming: Option<Always>,
    /// First body row shown, and the body rows visible at the last draw (a page).
    scroll: Scroll,
    /// The body's lines wrapped to a width (and compact or not), kept between frames: a diff
    /// is computed once.
    body: Option<((usize, bool), Vec<Line<'static>>)>,
}

impl PermissionModal {
    /// A prompt shown from `now`; the app sends its answer to the session (a prompt dropped
    /// unanswered is denied there, at the interrupt or the run's end that dropped it).
    pub fn new(question: PermissionQuestion, now: Instant) -> PermissionModal {
        let (shown, altered) = sanitize(&question);
        PermissionModal {
            question,
            shown,
            altered,
            queued: 0,
            answer: None,
            guard: KeyGuard::new(now),
            confirming: None,
            scroll: Scroll::default(),
            body: None,
        }
    }

    /// The prompt comes to the front at `now` (the one before it was answered): the guard
    /// starts again, since a key meant for the previous prompt must not answer this one.
    pub fn reveal(&mut self, now: Instant) {
        self.guard.reveal(now);
    }

    /// Whether keys at `now` still go to the composer.
    pub fn guarded(&self, now: Instant) -> bool {
        self.guard.guarded(now)
    }

    /// "Allow always" is not offered for a high-risk call: each must be approved on its own.
    pub fn offers_always(&self) -> bool {
        self.question.risk != Some(Risk::High)
    }

    /// "Always, saved" is offered where the question says what it saves (and "always" is).
    pub fn offers_save(&self) -> bool {
        self.offers_always() && self.question.always.save().is_some()
    }

    pub fn answer(&mut self, answer: Answer) {
        self.answer = Some(answer);
    }

    /// The reason, a warning when characters were removed, and the previews; `compact` (a
    /// tiny window) keeps only what the call would do.
    fn body_lines(&self, theme: &Theme, compact: bool) -> Vec<Line<'static>> {
        let q = &self.shown;
        let mut lines = Vec::new();
        if !compact {
            lines.push(Line::from(Span::styled(q.reason.clone(), theme.dim())));
        }
        if self.altered {
            lines.push(Line::from(Span::styled(
                "control or bidirectional characters are not shown",
                theme.bold(theme.warning),
            )));
        }
        if !compact {
            lines.push(Line::default());
        }
        for preview in &q.previews {
            preview_lines(&mut lines, preview, theme);
        }
        lines
    }

    /// The key legend for the prompt's state, shortest first when space is short.
    fn legend(&self, now: Instant, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let key = |k: &str, style: Style| Span::styled(k.to_string(), style);
        let ok = theme.bold(theme.success);
        let no = theme.bold(theme.error);
        let mut lines = Vec::new();
        if self.guarded(now) {
            lines.push(Line::from(Span::styled(
                "keys go to the composer while you type; y/n in a moment",
                theme.dim(),
            )));
        } else if self.confirming == Some(Always::Saved) {
            let host = match self.shown.always.save() {
                Some(ConfigSave::AllowedDomain(host)) => host.clone(),
                None => String::new(),
            };
            lines.push(Line::from(vec![
                Span::styled("always: ", theme.bold(theme.warning)),
                Span::styled(host, theme.bold(theme.code)),
                Span::styled(
                    " added to sandbox.network.allowedDomains in the config file, for every \
                     session?",
                    theme.text(),
                ),
            ]));
            lines.push(confirm_keys("s", theme));
        } else if self.confirming == Some(Always::Session) {
            lines.push(Line::from(vec![
                Span::styled("allow always: ", theme.bold(theme.warning)),
                Span::styled(self.shown.rule.clone(), theme.bold(theme.code)),
                Span::styled(
                    match self.shown.always {
                        AlwaysScope::Kept => ", kept for later sessions?",
                        AlwaysScope::Session | AlwaysScope::SessionOrSaved(_) => {
                            " for the rest of the session?"
                        }
                    },
                    theme.text(),
                ),
            ]));
            lines.push(confirm_keys("a", theme));
        } else {
            let mut long = vec![key("y", ok), Span::styled(" allow once  ", theme.text())];
            let mut short = vec![key("y", ok), Span::styled(" once ", theme.text())];
            if self.offers_save() {
                long.push(key("a", ok));
                long.push(Span::styled(" this session…  ", theme.text()));
                long.push(key("s", ok));
                long.push(Span::styled(" always (saved in config)…  ", theme.text()));
                short.push(key("a", ok));
                short.push(Span::styled(" session ", theme.text()));
                short.push(key("s", ok));
                short.push(Span::styled(" always ", theme.text()));
            } else if self.offers_always() {
                long.push(key("a", ok));
                long.push(Span::styled(
                    format!(" allow always ({})…  ", self.shown.rule),
                    theme.text(),
                ));
                short.push(key("a", ok));
                short.push(Span::styled(" always ", theme.text()));
            }
            long.extend([
                key("n", no),
                Span::styled("/", theme.dim()),
                key("Esc", no),
                Span::styled(" deny", theme.text()),
            ]);
            short.extend([key("n", no), Span::styled(" deny", theme.text())]);
            let long = Line::from(long);
            lines.push(if line_width(&long) <= width {
                long
            } else {
                Line::from(short)
            });
            if !self.offers_always() {
                lines.push(Line::from(Span::styled(
                    "high risk: no allow-always, each call is approved on its own",
                    theme.dim(),
                )));
            }
        }
        if self.queued > 0 {
            lines.push(Line::from(Span::styled(
                format!("{} more waiting", self.queued),
                theme.dim(),
            )));
        }
        lines
    }
}

fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| str_width(&s.content)).sum()
}

/// What the prompt shows of `text`: no escape sequences, controls or bidirectional overrides,
/// so a command cannot be drawn reordered or hidden.
fn safe(text: &str, altered: &mut bool) -> String {
    let clean = strip_controls(text);
    // `strip_controls` drops the `\r` of `\r\n`; that is no disguise.
    if clean.len() != text.len() && clean != text.replace("\r\n", "\n") {
        *altered = true;
    }
    clean.into_owned()
}

/// What the prompt shows of a command: as `safe`, and whitespace the shell does not split
/// words on (a no-break or em space) written as its `\u{…}` escape, so `./check\u{a0}--help`,
/// which runs a file named `check --help`, is not drawn as `./check --help`.
fn safe_command(text: &str, altered: &mut bool) -> String {
    let clean = safe(text, altered);
    if !clean.chars().any(hidden_space) {
        return clean;
    }
    *altered = true;
    clean
        .chars()
        .map(|c| {
            if hidden_space(c) {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Whitespace that looks like a word break but is none to the shell.
fn hidden_space(c: char) -> bool {
    c.is_whitespace() && !matches!(c, ' ' | '\t' | '\n')
}

fn sanitize(question: &PermissionQuestion) -> (PermissionQuestion, bool) {
    let mut altered = false;
    let mut shown = question.clone();
    shown.tool = safe(&question.tool, &mut altered);
    shown.reason = safe(&question.reason, &mut altered);
    shown.rule = safe(&question.rule, &mut altered);
    if let AlwaysScope::SessionOrSaved(ConfigSave::AllowedDomain(host)) = &mut shown.always {
        *host = safe(host, &mut altered);
    }
    for preview in &mut shown.previews {
        match preview {
            Preview::Command(command) => *command = safe_command(command, &mut altered),
            Preview::Write {
                path,
                before,
                after,
            } => {
                *path = safe(path, &mut altered);
                for text in [before, after].into_iter().flatten() {
                    *text = safe(text, &mut altered);
                }
            }
            Preview::Call {
                tool,
                server,
                input,
            } => {
                *tool = safe(tool, &mut altered);
                *input = safe(input, &mut altered);
                if let Some(server) = server {
                    *server = safe(server, &mut altered);
                }
            }
            Preview::Note(note) => *note = safe(note, &mut altered),
            Preview::None => {}
        }
    }
    (shown, altered)
}

impl ModalView for PermissionModal {
    fn handle_key(&mut self, key: KeyEvent, now: Instant) -> KeyOutcome {
        if self.guarded(now) {
            // Still typing: the guard lasts until a pause.
            self.guard.still_typing(now);
            return KeyOutcome::ToComposer;
        }
        // A letter with Ctrl or Alt is some other shortcut, never an answer.
        let plain = (key.modifiers - KeyModifiers::SHIFT).is_empty();
        let page = self.scroll.page();
        let answer = match key.code {
            KeyCode::PageUp => return self.scrolled(-page),
            KeyCode::PageDown => return self.scrolled(page),
            KeyCode::Up => return self.scrolled(-1),
            KeyCode::Down => return self.scrolled(1),
            KeyCode::Home => return self.scrolled_to(0),
            KeyCode::End => return self.scrolled_to(usize::MAX),
            KeyCode::Char('y' | 'Y') if plain => Answer::AllowOnce,
            KeyCode::Char('n' | 'N') if plain => Answer::Deny,
            KeyCode::Esc if self.confirming.is_some() => {
                self.confirming = None;
                return KeyOutcome::Handled;
            }
            KeyCode::Esc => Answer::Deny,
            KeyCode::Char('a' | 'A') | KeyCode::Enter
                if plain && self.confirming == Some(Always::Session) && self.offers_always() =>
            {
                Answer::AllowAlways
            }
            KeyCode::Char('s' | 'S') | KeyCode::Enter
                if plain && self.confirming == Some(Always::Saved) && self.offers_save() =>
            {
                Answer::AllowAndSave
            }
            KeyCode::Char('a' | 'A') if plain && self.offers_always() => {
                self.confirming = Some(Always::Session);
                return KeyOutcome::Handled;
            }
            KeyCode::Char('s' | 'S') if plain && self.offers_save() => {
                self.confirming = Some(Always::Saved);
                return KeyOutcome::Handled;
            }
            _ => {
                // Someone typing: back to the composer, and the prompt waits for a pause.
                self.confirming = None;
                self.guard.typed(now);
                return KeyOutcome::ToComposer;
            }
        };
        self.answer(answer);
        KeyOutcome::Answered
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
        let fit = Fit::new(area, 100);
        let risk = match self.shown.risk {
            Some(Risk::High) => ("high", theme.error),
            Some(Risk::Medium) => ("medium", theme.warning),
            Some(Risk::Low) => ("low", theme.success),
            None => ("unrated", theme.dim),
        };
        let inner_width = fit.inner;
        let legend: Vec<Line<'static>> = self
            .legend(now, inner_width, theme)
            .iter()
            .flat_map(|l| wrap_line(l, inner_width))
            .collect();
        let header = Line::from(vec![
            Span::styled(self.shown.tool.clone(), theme.bold(theme.text)),
            Span::styled(
                format!("  {}", self.shown.side_effect.as_str()),
                theme.accent(),
            ),
            Span::styled("  risk ", theme.dim()),
            Span::styled(
                risk.0,
                Style::default().fg(risk.1).add_modifier(Modifier::BOLD),
            ),
        ]);
        // Cached by width; a tiny window (no border) gets the compact body.
        let key = (inner_width, fit.bordered());
        if self.body.as_ref().is_none_or(|(w, _)| *w != key) {
            let wrapped = self
                .body_lines(theme, !fit.bordered())
                .iter()
                .flat_map(|l| wrap_line(l, inner_width))
                .collect();
            self.body = Some((key, wrapped));
        }
        let body = self.body.as_ref().map_or(&[][..], |(_, b)| b.as_slice());
        modal_frame::draw(
            (area, buf, theme),
            fit,
            Rows {
                header: Some(header),
                body,
                legend,
                follow: None,
            },
            Border {
                title: Span::styled(" Permission needed ", theme.bold(theme.warning)),
                keys: None,
                style: Style::default().fg(risk.1),
                scroll_keys: "PgUp/PgDn",
            },
            &mut self.scroll,
        );
    }
}

impl PermissionModal {
    /// Scrolling is clamped to the body when it is drawn.
    fn scrolled(&mut self, rows: isize) -> KeyOutcome {
        self.scroll.by(rows);
        KeyOutcome::Handled
    }

    fn scrolled_to(&mut self, row: usize) -> KeyOutcome {
        self.scroll.first = row;
        KeyOutcome::Handled
    }
}

fn preview_lines(out: &mut Vec<Line<'static>>, preview: &Preview, theme: &Theme) {
    match preview {
        Preview::Command(command) => {
            for line in command.lines() {
                out.push(Line::from(vec![
                    Span::styled("$ ", theme.dim()),
                    Span::styled(line.to_string(), theme.bold(theme.code)),
                ]));
            }
        }
        Preview::Write {
            path,
            before,
            after,
        } => {
            let what = match (before, after) {
                (None, _) => "new file",
                (Some(_), None) => "delete",
                _ => "edit",
            };
            out.push(Line::from(vec![
                Span::styled(path.clone(), theme.bold(theme.accent)),
                Span::styled(format!("  ({what})"), theme.dim()),
            ]));
            diff_lines(
                out,
                before.as_deref().unwrap_or(""),
                after.as_deref().unwrap_or(""),
                theme,
            );
        }
        // A tool call, not a command line: which tool (of which MCP server) and its input.
        Preview::Call {
            tool,
            server,
            input,
        } => {
            let mut head = vec![
                Span::styled("tool   ", theme.dim()),
                Span::styled(tool.clone(), theme.bold(theme.code)),
            ];
            if let Some(server) = server {
                head.push(Span::styled("  of MCP server ", theme.dim()));
                head.push(Span::styled(server.clone(), theme.bold(theme.accent)));
            }
            out.push(Line::from(head));
            for (i, line) in input.lines().enumerate() {
                let label = if i == 0 { "input  " } else { "       " };
                out.push(Line::from(vec![
                    Span::styled(label, theme.dim()),
                    Span::styled(line.to_string(), theme.text()),
                ]));
            }
        }
        Preview::Note(note) => {
            out.push(Line::default());
            for line in note.lines() {
                out.push(Line::from(Span::styled(
                    line.to_string(),
                    theme.bold(theme.warning),
                )));
            }
        }
        Preview::None => {}
    }
}

/// A unified diff with three lines of context, additions and removals coloured.
pub fn diff_lines(out: &mut Vec<Line<'static>>, before: &str, after: &str, theme: &Theme) {
    // Drawn on the UI thread: a pathological pair of files gets a coarser diff, never a stall.
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after);
    let mut rows = 0usize;
    for (n, group) in diff.grouped_ops(3).iter().enumerate() {
        if n > 0 {
            out.push(Line::from(Span::styled("  ⋯".to_string(), theme.dim())));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                rows += 1;
                if rows > MAX_PREVIEW_ROWS {
                    out.push(Line::from(Span::styled(
                        format!("… the diff goes on past {MAX_PREVIEW_ROWS} rows"),
                        theme.bold(theme.warning),
                    )));
                    return;
                }
                let (sign, style) = match change.tag() {
                    ChangeTag::Delete => ("-", Style::default().fg(theme.removed)),
                    ChangeTag::Insert => ("+", Style::default().fg(theme.added)),
                    ChangeTag::Equal => (" ", theme.dim()),
                };
                let number = change
                    .new_index()
                    .or(change.old_index())
                    .map_or(0, |i| i + 1);
                let text = change
                    .value()
                    .trim_end_matches(['\n', '\r'])
                    .replace('\t', "    ");
                out.push(Line::from(vec![
                    Span::styled(format!("{number:>4} "), theme.dim()),
                    Span::styled(format!("{sign} {text}"), style),
                ]));
            }
        }
    }
}

/// The keys of an "always" confirmation: `confirm` (or Enter), once only, back, deny.
fn confirm_keys(confirm: &str, theme: &Theme) -> Line<'static> {
    let key = |k: &str, style: Style| Span::styled(k.to_string(), style);
    let ok = theme.bold(theme.success);
    Line::from(vec![
        key(confirm, ok),
        Span::styled("/", theme.dim()),
        key("Enter", ok),
        Span::styled(" confirm  ", theme.text()),
        key("y", ok),
        Span::styled(" once only  ", theme.text()),
        key("Esc", theme.bold(theme.warning)),
        Span::styled(" back  ", theme.text()),
        key("n", theme.bold(theme.error)),
        Span::styled(" deny", theme.text()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;
    use splice_core::protocol::SideEffect;

    fn ask() -> PermissionQuestion {
        PermissionQuestion {
            token: "q_1".into(),
            id: "c1".into(),
            tool: "run_command".into(),
            side_effect: SideEffect::Execute,
            risk: Some(Risk::Medium),
            reason: "Runs a shell command.".into(),
            rule: "run_command(cargo test)".into(),
            always: splice_core::bus::AlwaysScope::Session,
            previews: vec![Preview::Command("cargo test".into())],
        }
    }

    fn press(modal: &mut PermissionModal, code: KeyCode, at: Instant) -> KeyOutcome {
        modal.handle_key(KeyEvent::new(code, KeyModifiers::NONE), at)
    }

    #[test]
    fn keys_send_the_answer_once() {
        let t0 = Instant::now();
        let late = t0 + GUARD;
        for (codes, expected) in [
            (&[KeyCode::Char('y')][..], Answer::AllowOnce),
            (
                &[KeyCode::Char('a'), KeyCode::Char('a')][..],
                Answer::AllowAlways,
            ),
            (
                &[KeyCode::Char('a'), KeyCode::Enter][..],
                Answer::AllowAlways,
            ),
            (
                &[KeyCode::Char('a'), KeyCode::Char('y')][..],
                Answer::AllowOnce,
            ),
            (&[KeyCode::Char('n')][..], Answer::Deny),
            (&[KeyCode::Esc][..], Answer::Deny),
        ] {
            let ask = ask();
            let mut modal = PermissionModal::new(ask, t0);
            let (last, first) = codes.split_last().unwrap_or_else(|| panic!("no keys"));
            for code in first {
                assert_eq!(press(&mut modal, *code, late), KeyOutcome::Handled);
            }
            assert!(modal.answer.is_none());
            assert_eq!(press(&mut modal, *last, late), KeyOutcome::Answered);
            assert_eq!(modal.answer, Some(expected));
        }
    }

    #[test]
    fn keys_in_the_guard_or_while_typing_go_to_the_composer() {
        let t0 = Instant::now();
        let ask = ask();
        let mut modal = PermissionModal::new(ask, t0);
        let soon = t0 + GUARD - Duration::from_millis(1);
        assert_eq!(
            press(&mut modal, KeyCode::Char('y'), soon),
            KeyOutcome::ToComposer
        );
        // Typing goes on past the guard: the pause has to come first.
        let typing = soon + TYPING_GAP - Duration::from_millis(1);
        assert_eq!(
            press(&mut modal, KeyCode::Char('y'), typing),
            KeyOutcome::ToComposer
        );
        // A key that is not the prompt's also goes back, and starts the wait again.
        let paused = typing + TYPING_GAP;
        assert_eq!(
            press(&mut modal, KeyCode::Char('x'), paused),
            KeyOutcome::ToComposer
        );
        assert_eq!(
            press(
                &mut modal,
                KeyCode::Char('y'),
                paused + Duration::from_millis(50)
            ),
            KeyOutcome::ToComposer
        );
        assert!(modal.answer.is_none());
        let answered = paused + Duration::from_millis(50) + TYPING_GAP;
        assert_eq!(
            press(&mut modal, KeyCode::Char('y'), answered),
            KeyOutcome::Answered
        );
        assert_eq!(modal.answer, Some(Answer::AllowOnce));
    }

    #[test]
    fn a_high_risk_prompt_has_no_allow_always() {
        let t0 = Instant::now();
        let mut ask = ask();
        ask.risk = Some(Risk::High);
        let mut modal = PermissionModal::new(ask, t0);
        let late = t0 + GUARD;
        assert_eq!(
            press(&mut modal, KeyCode::Char('a'), late),
            KeyOutcome::ToComposer
        );
        assert_eq!(
            press(&mut modal, KeyCode::Enter, late + TYPING_GAP),
            KeyOutcome::ToComposer
        );
        assert!(modal.answer.is_none());
        assert!(modal.confirming.is_none());
    }

    #[test]
    fn bidi_overrides_and_controls_are_not_shown() {
        let mut ask = ask();
        ask.previews = vec![Preview::Command(
            "echo safe \u{202e}fr- mr\u{202c} \u{1b}]0;x\u{7}done".into(),
        )];
        let (shown, altered) = sanitize(&ask);
        assert!(altered);
        assert_eq!(
            shown.previews,
            [Preview::Command("echo safe fr- mr done".into())]
        );
        let (_, plain) = sanitize(&self::tests::ask());
        assert!(!plain);
    }

    #[test]
    fn spaces_the_shell_does_not_split_on_are_escaped_in_commands() {
        let mut ask = ask();
        ask.previews = vec![Preview::Command(
            "sh ./check\u{a0}--help; . \u{2003}".into(),
        )];
        let (shown, altered) = sanitize(&ask);
        assert!(altered);
        assert_eq!(
            shown.previews,
            [Preview::Command(
                "sh ./check\\u{a0}--help; . \\u{2003}".into()
            )]
        );
    }

    #[test]
    fn diff_marks_changed_lines() {
        let mut out = Vec::new();
        diff_lines(&mut out, "a\nb\nc\n", "a\nB\nc\n", &Theme::ansi());
        let text: Vec<String> = out
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert_eq!(text, ["   1   a", "   2 - b", "   2 + B", "   3   c"]);
    }
}
