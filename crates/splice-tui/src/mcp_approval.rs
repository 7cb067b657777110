//! The project-server approval: a modal asking whether a server the repository's `.mcp.json`
//! names may start. It shows exactly what would run (command and arguments, or the URL), the
//! names of the environment variables or headers it is given (never their values) and that it
//! runs as the person, outside any sandbox. Like the permission prompt it cannot be answered
//! by accident: keys go to the composer for a moment after it appears and while the person
//! types, and every key that is not its own goes back to the composer.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::mcp_overlay::hanging;
use super::modal_frame::{self, Border, Fit, Rows, Scroll};
use super::permission::{KeyGuard, KeyOutcome, ModalView};
use super::theme::Theme;
use super::wrap::wrap_line;
use splice_core::mcp::{PROJECT_FILE, ServerConfig, ServerEntry};

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Remember the approval and start the server.
    Approve,
    /// Not this session: it stays unapproved and is asked about again next time.
    NotNow,
}

pub struct McpApprovalModal {
    pub entry: ServerEntry,
    /// How many more servers wait to be asked about after this one.
    pub queued: usize,
    pub answer: Option<Approval>,
    /// Keys typed ahead go to the composer.
    guard: KeyGuard,
    /// First body row shown, and the body rows visible at the last draw.
    scroll: Scroll,
}

impl McpApprovalModal {
    pub fn new(entry: ServerEntry, now: Instant) -> McpApprovalModal {
        McpApprovalModal {
            entry,
            queued: 0,
            answer: None,
            guard: KeyGuard::new(now),
            scroll: Scroll::default(),
        }
    }

    /// It comes to the front at `now`: a key meant for what was in front must not answer it.
    pub fn reveal(&mut self, now: Instant) {
        self.guard.reveal(now);
    }

    pub fn guarded(&self, now: Instant) -> bool {
        self.guard.guarded(now)
    }

    /// The body's rows at `width` (a long command wraps under itself, beside its label).
    fn body(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let label = |text: &str| Span::styled(format!("{text:<9}"), theme.dim());
        let code = theme.bold(theme.code);
        let mut lines = vec![
            Line::from(vec![
                Span::styled(exact(&self.entry.name), theme.bold(theme.accent)),
                Span::styled(format!("  from this project's {PROJECT_FILE}"), theme.dim()),
            ]),
            Line::default(),
        ];
        let (names, what) = match &self.entry.config {
            ServerConfig::Stdio {
                command, args, env, ..
            } => {
                lines.extend(hanging(
                    label("runs"),
                    Span::styled(command_line(command, args), code),
                    width,
                ));
                (env.keys().cloned().collect::<Vec<_>>(), "env")
            }
            ServerConfig::Http { url, headers } => {
                lines.extend(hanging(
                    label("connects"),
                    Span::styled(exact(url), code),
                    width,
                ));
                (headers.keys().cloned().collect(), "headers")
            }
        };
        let names = if names.is_empty() {
            Span::styled("none".to_string(), theme.dim())
        } else {
            let names: Vec<String> = names.iter().map(|n| exact(n)).collect();
            Span::styled(
                format!("{} (values not shown)", names.join(", ")),
                theme.text(),
            )
        };
        lines.extend(hanging(label(what), names, width));
        if let ServerConfig::Stdio {
            env_passthrough, ..
        } = &self.entry.config
            && !env_passthrough.is_empty()
        {
            let passed: Vec<String> = env_passthrough.iter().map(|n| exact(n)).collect();
            lines.extend(hanging(
                label("passes"),
                Span::styled(
                    format!("{} (from your environment)", passed.join(", ")),
                    theme.text(),
                ),
                width,
            ));
        }
        let mut files: Vec<String> = self
            .entry
            .files()
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        // Shown where the covered files are: approved or not, such a server does not start.
        if let Some(reason) = self.entry.refused() {
            files.push(format!(
                "(it will not start: it cannot be pinned, {reason})"
            ));
        }
        lines.extend(covered_files(&files, theme, width));
        lines.push(Line::default());
        let warning = match self.entry.config {
            ServerConfig::Stdio { .. } => {
                "It runs as you, unsandboxed: it can read and change your files and use the network."
            }
            ServerConfig::Http { .. } => {
                "Splice sends it the headers above and whatever the model passes to its tools."
            }
        };
        lines.push(Line::from(Span::styled(
            warning.to_string(),
            theme.bold(theme.warning),
        )));
        if self.queued > 0 {
            lines.push(Line::from(Span::styled(
                format!(
                    "{} more project server(s) wait to be asked about",
                    self.queued
                ),
                theme.dim(),
            )));
        }
        lines
    }

    fn legend(&self, now: Instant, theme: &Theme) -> Line<'static> {
        approval_legend(self.guarded(now), " approve and start  ", theme)
    }
}

impl ModalView for McpApprovalModal {
    fn handle_key(&mut self, key: KeyEvent, now: Instant) -> KeyOutcome {
        approval_key(
            &mut self.guard,
            &mut self.scroll,
            &mut self.answer,
            key,
            now,
        )
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
        let legend = self.legend(now, theme);
        let body = |width| self.body(theme, width);
        let body = approval_frame(
            (area, buf, theme),
            " Start a project MCP server? ",
            body,
            &legend,
        );
        body.draw(&mut self.scroll);
    }
}

/// An approval modal's answer to `key` pressed at `now`: y/a approve, n/Esc not now, arrows and
/// pages scroll; while the person types, and for any other key, the key is the composer's.
pub(super) fn approval_key(
    guard: &mut KeyGuard,
    scroll: &mut Scroll,
    answer: &mut Option<Approval>,
    key: KeyEvent,
    now: Instant,
) -> KeyOutcome {
    if guard.guarded(now) {
        // Still typing: the guard lasts until a pause.
        guard.still_typing(now);
        return KeyOutcome::ToComposer;
    }
    // A letter with Ctrl or Alt is some other shortcut, never an answer.
    let plain = (key.modifiers - KeyModifiers::SHIFT).is_empty();
    let page = scroll.page();
    let rows = match key.code {
        KeyCode::Up => -1,
        KeyCode::Down => 1,
        KeyCode::PageUp => -page,
        KeyCode::PageDown => page,
        KeyCode::Char('y' | 'Y' | 'a' | 'A') if plain => {
            *answer = Some(Approval::Approve);
            return KeyOutcome::Answered;
        }
        KeyCode::Char('n' | 'N') | KeyCode::Esc if plain || key.code == KeyCode::Esc => {
            *answer = Some(Approval::NotNow);
            return KeyOutcome::Answered;
        }
        _ => {
            // Someone typing: back to the composer, and the modal waits for a pause.
            guard.typed(now);
            return KeyOutcome::ToComposer;
        }
    };
    scroll.by(rows);
    KeyOutcome::Handled
}

/// An approval modal's list of the files its approval pins by content, if it names any.
pub(super) fn covered_files(files: &[String], theme: &Theme, width: usize) -> Vec<Line<'static>> {
    if files.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        Line::default(),
        Line::from(Span::styled(
            "The approval covers these files as they are now (a change needs a new one):"
                .to_string(),
            theme.dim(),
        )),
    ];
    for file in files {
        lines.extend(hanging(
            Span::styled("  ".to_string(), theme.dim()),
            Span::styled(exact(file), theme.bold(theme.code)),
            width,
        ));
    }
    lines
}

/// An approval modal's legend: `approve` says what y does; a reminder while keys still go to
/// the composer.
pub(super) fn approval_legend(
    guarded: bool,
    approve: &'static str,
    theme: &Theme,
) -> Line<'static> {
    if guarded {
        return Line::from(Span::styled(
            "keys go to the composer while you type; y/n in a moment",
            theme.dim(),
        ));
    }
    let ok = theme.bold(theme.success);
    Line::from(vec![
        Span::styled("y", ok),
        Span::styled("/", theme.dim()),
        Span::styled("a", ok),
        Span::styled(approve, theme.text()),
        Span::styled("n", theme.bold(theme.error)),
        Span::styled("/", theme.dim()),
        Span::styled("Esc", theme.bold(theme.error)),
        Span::styled(" not now (asked again next session)", theme.text()),
    ])
}

/// An approval modal's frame, ready to draw: its body wrapped at the width it gets.
pub(super) struct ApprovalFrame<'a> {
    target: (Rect, &'a mut Buffer, &'a Theme),
    fit: Fit,
    title: &'static str,
    body: Vec<Line<'static>>,
    legend: Vec<Line<'static>>,
}

pub(super) fn approval_frame<'a>(
    target: (Rect, &'a mut Buffer, &'a Theme),
    title: &'static str,
    body: impl FnOnce(usize) -> Vec<Line<'static>>,
    legend: &Line<'static>,
) -> ApprovalFrame<'a> {
    let fit = Fit::new(target.0, 100);
    let inner = fit.inner;
    ApprovalFrame {
        body: body(inner)
            .iter()
            .flat_map(|l| wrap_line(l, inner))
            .collect(),
        legend: wrap_line(legend, inner),
        target,
        fit,
        title,
    }
}

impl ApprovalFrame<'_> {
    pub(super) fn draw(self, scroll: &mut Scroll) {
        let theme = self.target.2;
        modal_frame::draw(
            self.target,
            self.fit,
            Rows {
                header: None,
                body: &self.body,
                legend: self.legend,
                follow: None,
            },
            Border {
                title: Span::styled(self.title, theme.bold(theme.warning)),
                keys: None,
                style: Style::default().fg(theme.warning),
                scroll_keys: "↑/↓",
            },
            scroll,
        );
    }
}

/// `text` with every character that would not show as itself (controls, bidirectional and
/// invisible characters) written as a `\u{…}` escape: what is approved is exactly what is seen.
pub fn exact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if super::markdown::shown_as_is(c) {
            out.push(c);
        } else {
            out.push_str(&c.escape_unicode().to_string());
        }
    }
    out
}

/// The command and its arguments as shell words: an argument with spaces or quotes is quoted,
/// so the person sees where each one ends.
pub fn command_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|word| exact(&splice_core::permissions::quote_word(word)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::permission::{GUARD, TYPING_GAP};
    use super::*;
    use splice_core::mcp::Source;

    fn entry() -> ServerEntry {
        ServerEntry {
            name: "tools".into(),
            config: ServerConfig::Stdio {
                command: "node".into(),
                args: vec!["server.js".into(), "a b".into()],
                env: [("API_TOKEN".to_string(), "secret-value".to_string())].into(),
                env_passthrough: Vec::new(),
            },
            source: Source::Project,
            pins: Vec::new(),
        }
    }

    fn press(modal: &mut McpApprovalModal, code: KeyCode, at: Instant) -> KeyOutcome {
        modal.handle_key(KeyEvent::new(code, KeyModifiers::NONE), at)
    }

    #[test]
    fn keys_typed_ahead_never_approve() {
        let t0 = Instant::now();
        let mut modal = McpApprovalModal::new(entry(), t0);
        // Typing as it appears: the keys are the composer's, and the pause has to come first.
        let soon = t0 + GUARD - std::time::Duration::from_millis(1);
        assert_eq!(
            press(&mut modal, KeyCode::Char('y'), soon),
            KeyOutcome::ToComposer
        );
        let still_typing = soon + TYPING_GAP - std::time::Duration::from_millis(1);
        assert_eq!(
            press(&mut modal, KeyCode::Char('a'), still_typing),
            KeyOutcome::ToComposer
        );
        assert_eq!(modal.answer, None);
        // Another key after the pause goes back too, and starts the wait again.
        let paused = still_typing + TYPING_GAP;
        assert_eq!(
            press(&mut modal, KeyCode::Char('x'), paused),
            KeyOutcome::ToComposer
        );
        assert_eq!(
            press(&mut modal, KeyCode::Char('y'), paused),
            KeyOutcome::ToComposer
        );
        let later = paused + TYPING_GAP;
        assert_eq!(
            press(&mut modal, KeyCode::Char('y'), later),
            KeyOutcome::Answered
        );
        assert_eq!(modal.answer, Some(Approval::Approve));
    }

    #[test]
    fn each_key_gives_its_answer_and_ctrl_letters_are_not_answers() {
        let t0 = Instant::now();
        let late = t0 + GUARD;
        for (code, answer) in [
            (KeyCode::Char('y'), Approval::Approve),
            (KeyCode::Char('a'), Approval::Approve),
            (KeyCode::Char('n'), Approval::NotNow),
            (KeyCode::Esc, Approval::NotNow),
        ] {
            let mut modal = McpApprovalModal::new(entry(), t0);
            assert_eq!(press(&mut modal, code, late), KeyOutcome::Answered);
            assert_eq!(modal.answer, Some(answer));
        }
        let mut modal = McpApprovalModal::new(entry(), t0);
        let alt_y = KeyEvent::new(KeyCode::Char('y'), KeyModifiers::ALT);
        assert_eq!(modal.handle_key(alt_y, late), KeyOutcome::ToComposer);
        assert_eq!(modal.answer, None);
    }

    /// The files an approval covers are listed (by path) in the question.
    #[test]
    fn the_files_the_approval_covers_are_listed() {
        let mut covered = entry();
        covered.pins = vec![
            splice_core::permissions::Pinned {
                path: "/repo/tools/server.mjs".into(),
                state: "sha256:00".into(),
            },
            splice_core::permissions::Pinned {
                path: "/repo/node".into(),
                state: "absent".into(),
            },
        ];
        let shown: String = McpApprovalModal::new(covered, Instant::now())
            .body(&Theme::ansi(), 80)
            .iter()
            .flat_map(|l| l.spans.iter().map(|s| s.content.to_string()))
            .collect();
        assert!(shown.contains("/repo/tools/server.mjs"), "{shown}");
        assert!(
            !shown.contains("/repo/node"),
            "an absent file is not listed: {shown}"
        );
        assert!(shown.contains("The approval covers these files"));
    }

    /// The variables a server would take from the person's environment are named before it is
    /// approved (an approval covers them: they are in its fingerprint).
    #[test]
    fn passed_through_variables_are_named() {
        let text = |entry: ServerEntry| -> String {
            McpApprovalModal::new(entry, Instant::now())
                .body(&Theme::ansi(), 80)
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
        assert!(!text(entry()).contains("passes"));
        let mut passing = entry();
        if let ServerConfig::Stdio {
            env_passthrough, ..
        } = &mut passing.config
        {
            env_passthrough.push("PIP_INDEX_URL".into());
        }
        let shown = text(passing);
        assert!(
            shown.contains("passes   PIP_INDEX_URL (from your environment)"),
            "{shown}"
        );
    }

    #[test]
    fn the_command_is_shown_exactly_with_word_boundaries_and_hidden_characters_escaped() {
        assert_eq!(
            command_line("node", &["server.js".into(), "a b".into(), String::new()]),
            "node server.js 'a b' ''"
        );
        // A right-to-left override could make `sj.live` read as `evil.js`.
        assert_eq!(
            command_line("node", &["\u{202e}sj.live".into()]),
            "node '\\u{202e}sj.live'"
        );
        assert_eq!(exact("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
    }
}
