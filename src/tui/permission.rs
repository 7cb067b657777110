//! The permission prompt: a modal view over the transcript showing the tool, its side effect,
//! its risk and the exact command or a diff of the write; one key answers it.

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Padding, Paragraph, Widget};
use similar::{ChangeTag, TextDiff};

use super::theme::Theme;
use super::wrap::wrap_line;
use crate::bus::{Answer, PermissionAsk, PermissionQuestion, Preview};
use crate::protocol::events::Risk;

/// Rows of diff shown at most; the rest is summarised.
const MAX_PREVIEW_ROWS: usize = 400;

/// A view drawn over everything else that takes all keys while open.
pub trait ModalView {
    /// Handle a key; true when the view is finished and should close.
    fn handle_key(&mut self, key: KeyEvent) -> bool;
    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme);
}

pub struct PermissionModal {
    pub question: PermissionQuestion,
    reply: Option<tokio::sync::oneshot::Sender<Answer>>,
    /// How many prompts wait behind this one.
    pub queued: usize,
    pub answer: Option<Answer>,
}

impl PermissionModal {
    pub fn new(ask: PermissionAsk) -> PermissionModal {
        PermissionModal {
            question: ask.question,
            reply: Some(ask.reply),
            queued: 0,
            answer: None,
        }
    }

    pub fn answer(&mut self, answer: Answer) {
        if let Some(reply) = self.reply.take() {
            // The run may have ended meanwhile (interrupt); then nobody waits for the answer.
            let _ = reply.send(answer.clone());
        }
        self.answer = Some(answer);
    }
}

impl Drop for PermissionModal {
    fn drop(&mut self) {
        // Never leave a run waiting on a prompt that disappeared.
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(Answer::Deny);
        }
    }
}

impl ModalView for PermissionModal {
    fn handle_key(&mut self, key: KeyEvent) -> bool {
        let answer = match key.code {
            KeyCode::Char('y' | 'Y') => Answer::AllowOnce,
            KeyCode::Char('a' | 'A') => Answer::AllowAlways,
            KeyCode::Char('n' | 'N') | KeyCode::Esc => Answer::Deny,
            _ => return false,
        };
        self.answer(answer);
        true
    }

    fn render(&self, area: Rect, buf: &mut Buffer, theme: &Theme) {
        let width = area.width.saturating_sub(4).clamp(20, 100).min(area.width);
        let inner_width = usize::from(width.saturating_sub(4));
        let q = &self.question;
        let risk = match q.risk {
            Some(Risk::High) => ("high", theme.error),
            Some(Risk::Medium) => ("medium", theme.warning),
            Some(Risk::Low) => ("low", theme.success),
            None => ("unrated", theme.dim),
        };
        let mut lines = vec![
            Line::from(vec![
                Span::styled(q.tool.clone(), theme.bold(theme.text)),
                Span::styled(format!("  {}", q.side_effect.as_str()), theme.accent()),
                Span::styled("  risk ", theme.dim()),
                Span::styled(
                    risk.0,
                    Style::default().fg(risk.1).add_modifier(Modifier::BOLD),
                ),
            ]),
            Line::from(Span::styled(q.reason.clone(), theme.dim())),
            Line::default(),
        ];
        for preview in &q.previews {
            preview_lines(&mut lines, preview, theme);
        }
        let mut rows: Vec<Line<'static>> = lines
            .iter()
            .flat_map(|l| wrap_line(l, inner_width))
            .collect();
        let mut footer = vec![
            Line::default(),
            Line::from(vec![
                Span::styled("y", theme.bold(theme.success)),
                Span::styled(" allow once  ", theme.text()),
                Span::styled("a", theme.bold(theme.success)),
                Span::styled(format!(" allow always ({})  ", q.rule), theme.text()),
                Span::styled("n", theme.bold(theme.error)),
                Span::styled("/", theme.dim()),
                Span::styled("Esc", theme.bold(theme.error)),
                Span::styled(" deny", theme.text()),
            ]),
        ];
        if self.queued > 0 {
            footer.push(Line::from(Span::styled(
                format!("{} more waiting", self.queued),
                theme.dim(),
            )));
        }
        let footer: Vec<Line<'static>> = footer
            .iter()
            .flat_map(|l| wrap_line(l, inner_width))
            .collect();
        let max_body = usize::from(area.height.saturating_sub(2))
            .saturating_sub(footer.len())
            .max(1);
        if rows.len() > max_body {
            let hidden = rows.len() - max_body + 1;
            rows.truncate(max_body - 1);
            rows.push(Line::from(Span::styled(
                format!("… {hidden} more rows"),
                theme.dim(),
            )));
        }
        rows.extend(footer);
        let height = u16::try_from(rows.len() + 2)
            .unwrap_or(u16::MAX)
            .min(area.height);
        let rect = Rect {
            x: area.x + (area.width - width) / 2,
            y: area.y + (area.height - height) / 2,
            width,
            height,
        };
        theme.clear(rect, buf);
        let block = Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Rounded)
            .padding(Padding::horizontal(1))
            .border_style(Style::default().fg(risk.1))
            .title(Span::styled(
                " Permission needed ",
                theme.bold(theme.warning),
            ));
        Paragraph::new(rows).block(block).render(rect, buf);
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
        Preview::None => {}
    }
}

/// A unified diff with three lines of context, additions and removals coloured.
pub fn diff_lines(out: &mut Vec<Line<'static>>, before: &str, after: &str, theme: &Theme) {
    let diff = TextDiff::from_lines(before, after);
    let mut rows = 0usize;
    for (n, group) in diff.grouped_ops(3).iter().enumerate() {
        if n > 0 {
            out.push(Line::from(Span::styled("  ⋯".to_string(), theme.dim())));
        }
        for op in group {
            for change in diff.iter_changes(op) {
                rows += 1;
                if rows > MAX_PREVIEW_ROWS {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SideEffect;
    use crossterm::event::KeyModifiers;

    fn ask() -> (PermissionAsk, tokio::sync::oneshot::Receiver<Answer>) {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let question = PermissionQuestion {
            id: "c1".into(),
            tool: "run_command".into(),
            side_effect: SideEffect::Execute,
            risk: Some(Risk::Medium),
            reason: "Runs a shell command.".into(),
            rule: "run_command(cargo test)".into(),
            previews: vec![Preview::Command("cargo test".into())],
        };
        (PermissionAsk { question, reply }, rx)
    }

    #[test]
    fn keys_send_the_answer_once() {
        for (code, expected) in [
            (KeyCode::Char('y'), Answer::AllowOnce),
            (KeyCode::Char('a'), Answer::AllowAlways),
            (KeyCode::Char('n'), Answer::Deny),
            (KeyCode::Esc, Answer::Deny),
        ] {
            let (ask, mut rx) = ask();
            let mut modal = PermissionModal::new(ask);
            assert!(!modal.handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)));
            assert!(rx.try_recv().is_err());
            assert!(modal.handle_key(KeyEvent::new(code, KeyModifiers::NONE)));
            assert_eq!(rx.try_recv().ok(), Some(expected));
        }
    }

    #[test]
    fn a_dropped_prompt_denies() {
        let (ask, mut rx) = ask();
        drop(PermissionModal::new(ask));
        assert_eq!(rx.try_recv().ok(), Some(Answer::Deny));
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
