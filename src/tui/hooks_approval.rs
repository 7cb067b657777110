//! The project-hooks approval: a modal asking whether the hooks of the repository's
//! `.splice/settings.json` may run. It shows every command with the event it runs at, exactly
//! as configured, and that they run as the person, outside any sandbox. An approval covers
//! exactly these hooks: a changed configuration is asked about again. Keys typed ahead go to
//! the composer, as for the MCP approval.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::mcp_approval::{Approval, exact};
use super::mcp_overlay::hanging;
use super::modal_frame::{self, Border, Fit, Rows, Scroll};
use super::permission::{KeyGuard, KeyOutcome, ModalView};
use super::theme::Theme;
use super::wrap::wrap_line;

pub struct HooksApprovalModal {
    /// The fingerprint of the hooks shown: what an approval covers.
    pub fingerprint: String,
    /// `(event, command)`, in the file's order.
    pub commands: Vec<(String, String)>,
    pub answer: Option<Approval>,
    guard: KeyGuard,
    scroll: Scroll,
}

impl HooksApprovalModal {
    pub fn new(
        fingerprint: String,
        commands: Vec<(String, String)>,
        now: Instant,
    ) -> HooksApprovalModal {
        HooksApprovalModal {
            fingerprint,
            commands,
            answer: None,
            guard: KeyGuard::new(now),
            scroll: Scroll::default(),
        }
    }

    pub fn reveal(&mut self, now: Instant) {
        self.guard.reveal(now);
    }

    fn body(&self, theme: &Theme, width: usize) -> Vec<Line<'static>> {
        let mut lines = vec![
            Line::from(Span::styled(
                format!(
                    "This project's {} configures hooks:",
                    crate::hooks::config::PROJECT_FILE
                ),
                theme.dim(),
            )),
            Line::default(),
        ];
        let code = theme.bold(theme.code);
        for (event, command) in &self.commands {
            lines.extend(hanging(
                Span::styled(format!("{:<18}", exact(event)), theme.dim()),
                Span::styled(exact(command), code),
                width,
            ));
        }
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            "They run as you, unsandboxed: they can read and change your files and use the network."
                .to_string(),
            theme.bold(theme.warning),
        )));
        lines
    }

    fn legend(&self, now: Instant, theme: &Theme) -> Line<'static> {
        if self.guard.guarded(now) {
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
            Span::styled(" approve these hooks  ", theme.text()),
            Span::styled("n", theme.bold(theme.error)),
            Span::styled("/", theme.dim()),
            Span::styled("Esc", theme.bold(theme.error)),
            Span::styled(" not now (asked again next session)", theme.text()),
        ])
    }
}

impl ModalView for HooksApprovalModal {
    fn handle_key(&mut self, key: KeyEvent, now: Instant) -> KeyOutcome {
        if self.guard.guarded(now) {
            self.guard.still_typing(now);
            return KeyOutcome::ToComposer;
        }
        let plain = (key.modifiers - KeyModifiers::SHIFT).is_empty();
        let page = self.scroll.page();
        let answer = match key.code {
            KeyCode::Up => return self.scrolled(-1),
            KeyCode::Down => return self.scrolled(1),
            KeyCode::PageUp => return self.scrolled(-page),
            KeyCode::PageDown => return self.scrolled(page),
            KeyCode::Char('y' | 'Y' | 'a' | 'A') if plain => Approval::Approve,
            KeyCode::Char('n' | 'N') if plain => Approval::NotNow,
            KeyCode::Esc => Approval::NotNow,
            _ => {
                self.guard.typed(now);
                return KeyOutcome::ToComposer;
            }
        };
        self.answer = Some(answer);
        KeyOutcome::Answered
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
        let fit = Fit::new(area, 100);
        let inner = fit.inner;
        let body: Vec<Line<'static>> = self
            .body(theme, inner)
            .iter()
            .flat_map(|l| wrap_line(l, inner))
            .collect();
        modal_frame::draw(
            (area, buf, theme),
            fit,
            Rows {
                header: None,
                body: &body,
                legend: wrap_line(&self.legend(now, theme), inner),
                follow: None,
            },
            Border {
                title: Span::styled(" Run this project's hooks? ", theme.bold(theme.warning)),
                keys: None,
                style: Style::default().fg(theme.warning),
                scroll_keys: "↑/↓",
            },
            &mut self.scroll,
        );
    }
}

impl HooksApprovalModal {
    fn scrolled(&mut self, rows: isize) -> KeyOutcome {
        self.scroll.by(rows);
        KeyOutcome::Handled
    }
}

#[cfg(test)]
mod tests {
    use super::super::permission::{GUARD, TYPING_GAP};
    use super::*;

    #[test]
    fn y_approves_and_esc_does_not_after_the_guard() {
        let t0 = Instant::now();
        let commands = vec![("PreToolUse".to_string(), "./check.sh".to_string())];
        let mut modal = HooksApprovalModal::new("fp".into(), commands.clone(), t0);
        let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
        // Too soon: the key belongs to the composer.
        assert!(matches!(
            modal.handle_key(key(KeyCode::Char('y')), t0),
            KeyOutcome::ToComposer
        ));
        let later = t0 + GUARD + TYPING_GAP * 2;
        assert!(matches!(
            modal.handle_key(key(KeyCode::Char('y')), later),
            KeyOutcome::Answered
        ));
        assert_eq!(modal.answer, Some(Approval::Approve));
        let mut modal = HooksApprovalModal::new("fp".into(), commands, t0);
        assert!(matches!(
            modal.handle_key(key(KeyCode::Esc), later),
            KeyOutcome::Answered
        ));
        assert_eq!(modal.answer, Some(Approval::NotNow));
    }
}
