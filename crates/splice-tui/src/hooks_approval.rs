//! The project-hooks approval: a modal asking whether the hooks of the repository's
//! settings files (`.splice/settings.json`, Claude Code's `.claude/settings*.json`) may run. It shows every command with the event it runs at, exactly
//! as configured, and that they run as the person, outside any sandbox. An approval covers
//! exactly these hooks: a changed configuration is asked about again. Keys typed ahead go to
//! the composer, as for the MCP approval.

use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::mcp_approval::{
    Approval, approval_frame, approval_key, approval_legend, covered_files, exact,
};
use super::mcp_overlay::hanging;
use super::modal_frame::Scroll;
use super::permission::{KeyGuard, KeyOutcome, ModalView};
use super::theme::Theme;

pub struct HooksApprovalModal {
    /// The fingerprint of the hooks shown: what an approval covers.
    pub fingerprint: String,
    /// `(event, command)`, in the file's order.
    pub commands: Vec<(String, String)>,
    /// The files those commands run, covered by the approval by their content.
    pub files: Vec<String>,
    /// The settings files that configure them, beneath the root.
    pub settings: Vec<String>,
    pub answer: Option<Approval>,
    guard: KeyGuard,
    scroll: Scroll,
}

impl HooksApprovalModal {
    pub fn new(
        fingerprint: String,
        commands: Vec<(String, String)>,
        files: Vec<String>,
        settings: Vec<String>,
        now: Instant,
    ) -> HooksApprovalModal {
        HooksApprovalModal {
            fingerprint,
            commands,
            files,
            settings,
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
                    exact(&self.settings.join(", "))
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
        lines.extend(covered_files(&self.files, theme, width));
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            "They run as you, unsandboxed: they can read and change your files and use the network."
                .to_string(),
            theme.bold(theme.warning),
        )));
        lines
    }

    fn legend(&self, now: Instant, theme: &Theme) -> Line<'static> {
        approval_legend(self.guard.guarded(now), " approve these hooks  ", theme)
    }
}

impl ModalView for HooksApprovalModal {
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
        let frame = approval_frame(
            (area, buf, theme),
            " Run this project's hooks? ",
            body,
            &legend,
        );
        frame.draw(&mut self.scroll);
    }
}

#[cfg(test)]
mod tests {
    use super::super::permission::{GUARD, TYPING_GAP};
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    #[test]
    fn y_approves_and_esc_does_not_after_the_guard() {
        let t0 = Instant::now();
        let commands = vec![("PreToolUse".to_string(), "./check.sh".to_string())];
        let mut modal = HooksApprovalModal::new("fp".into(), commands.clone(), vec![], vec![], t0);
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
        let mut modal = HooksApprovalModal::new("fp".into(), commands, vec![], vec![], t0);
        assert!(matches!(
            modal.handle_key(key(KeyCode::Esc), later),
            KeyOutcome::Answered
        ));
        assert_eq!(modal.answer, Some(Approval::NotNow));
    }
}
