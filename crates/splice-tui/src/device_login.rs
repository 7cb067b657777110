//! The device-code login modal: whoever issues the code (the registry's `/login`, the Scribiz
//! CLI), it shows the user code large, the link, a QR code of the complete link, a countdown,
//! then the outcome. It takes every key while open; Esc cancels the login, which ends its task.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::modal_frame;
use super::qr::QrImage;
use super::theme::Theme;
use super::wrap::wrap_line;
use splice_core::device_login::DeviceLoginEvent;
use splice_core::sanitize::terminal::strip_controls;

/// Text column width next to (or under) the QR code.
const TEXT_WIDTH: u16 = 44;
/// The narrowest text column beside a QR code.
const MIN_TEXT_WIDTH: u16 = 30;
/// Columns between the text and the QR code.
const GAP: u16 = 2;
/// Border and padding: one column of border and one of padding each side.
const FRAME_X: u16 = 4;
const FRAME_Y: u16 = 2;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginState {
    /// Asking for a code.
    Starting,
    Waiting {
        user_code: String,
        verification_uri: String,
        verification_uri_complete: String,
        deadline: Instant,
    },
    SignedIn {
        account: String,
    },
    Failed {
        message: String,
        hint: Option<String>,
    },
}

/// What a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginKey {
    /// Used (or swallowed: keys never reach the composer while the modal is open).
    Handled,
    /// Close the modal; `cancelled` when the login was still going.
    Close { cancelled: bool },
}

pub struct DeviceLoginModal {
    /// What is signed in to, e.g. `registry http://127.0.0.1:7878`.
    pub service: String,
    pub state: LoginState,
    qr: Option<QrImage>,
    /// The countdown second last drawn, so a tick redraws only when it changes.
    shown_secs: Option<u64>,
}

/// Seconds left as `mm:ss`, `expired` at zero.
pub fn countdown(secs: u64) -> String {
    if secs == 0 {
        "expired".to_string()
    } else {
        format!("{:02}:{:02}", secs / 60, secs % 60)
    }
}

/// Whole seconds left before `deadline`, rounded up: a code with 0.4 s left is not expired.
pub fn seconds_left(deadline: Instant, now: Instant) -> u64 {
    let left = deadline.saturating_duration_since(now);
    left.as_secs() + u64::from(left.subsec_nanos() > 0)
}

impl DeviceLoginModal {
    /// The modal for a login the session started; the app hands it the login's events.
    pub fn new(service: &str) -> DeviceLoginModal {
        DeviceLoginModal {
            service: strip_controls(service).replace('\n', " "),
            state: LoginState::Starting,
            qr: None,
            shown_secs: None,
        }
    }

    /// Whether the login is still going (no outcome yet).
    pub fn is_pending(&self) -> bool {
        matches!(
            self.state,
            LoginState::Starting | LoginState::Waiting { .. }
        )
    }

    /// The login's next event, received at `now`; `None` when its producer ended.
    pub fn apply(&mut self, event: Option<DeviceLoginEvent>, now: Instant) {
        let Some(event) = event else {
            if self.is_pending() {
                self.state = LoginState::Failed {
                    message: "the login ended without an answer".into(),
                    hint: None,
                };
            }
            return;
        };
        if !self.is_pending() {
            return;
        }
        self.state = match event.sanitized() {
            DeviceLoginEvent::Code {
                user_code,
                verification_uri,
                verification_uri_complete,
                expires_in,
            } => {
                self.qr = QrImage::new(&verification_uri_complete);
                LoginState::Waiting {
                    user_code,
                    verification_uri,
                    verification_uri_complete,
                    deadline: now + Duration::from_secs(expires_in),
                }
            }
            DeviceLoginEvent::SignedIn { account } => LoginState::SignedIn { account },
            DeviceLoginEvent::Failed { message, hint } => LoginState::Failed { message, hint },
        };
    }

    pub fn handle_key(&mut self, key: KeyEvent) -> LoginKey {
        match key.code {
            KeyCode::Esc => LoginKey::Close {
                cancelled: self.is_pending(),
            },
            KeyCode::Enter if !self.is_pending() => LoginKey::Close { cancelled: false },
            _ => LoginKey::Handled,
        }
    }

    /// Whether a frame at `now` would show another countdown second.
    pub fn countdown_changed(&self, now: Instant) -> bool {
        match &self.state {
            LoginState::Waiting { deadline, .. } => {
                self.shown_secs != Some(seconds_left(*deadline, now))
            }
            _ => false,
        }
    }

    /// The text column's lines; `qr` says whether the QR code is drawn beside them.
    fn lines(&self, theme: &Theme, now: Instant, qr: bool) -> Vec<Line<'static>> {
        let t = theme;
        let text = |s: &str, style: Style| Line::from(Span::styled(s.to_string(), style));
        let mut lines = Vec::new();
        match &self.state {
            LoginState::Starting => {
                lines.push(text(
                    &format!("Asking {} for a code…", self.service),
                    t.text(),
                ));
                lines.push(Line::default());
                lines.push(legend(t, "Esc", " cancel"));
            }
            LoginState::Waiting {
                user_code,
                verification_uri,
                deadline,
                ..
            } => {
                lines.push(text("Your code:", t.dim()));
                // Large: letter-spaced, bold, in reverse video.
                let spaced: Vec<String> = user_code.chars().map(String::from).collect();
                lines.push(Line::from(Span::styled(
                    format!(" {} ", spaced.join(" ")),
                    t.bold(t.accent).add_modifier(Modifier::REVERSED),
                )));
                lines.push(Line::default());
                lines.push(text("Open this link and enter the code:", t.text()));
                lines.push(text(verification_uri, t.bold(t.accent)));
                if qr {
                    lines.push(text("or scan the QR code with a phone.", t.text()));
                }
                lines.push(Line::default());
                let secs = seconds_left(*deadline, now);
                let style = if secs < 60 {
                    t.bold(t.warning)
                } else {
                    t.text()
                };
                let left = if secs == 0 {
                    text("The code has expired", t.bold(t.error))
                } else {
                    Line::from(vec![
                        Span::styled("Expires in ", t.text()),
                        Span::styled(countdown(secs), style),
                    ])
                };
                lines.push(left);
                lines.push(text("Waiting for approval…", t.dim()));
                lines.push(Line::default());
                lines.push(legend(t, "Esc", " cancel"));
                if !qr && self.qr.is_some() {
                    lines.push(text("(a larger window shows a QR code)", t.dim()));
                }
            }
            LoginState::SignedIn { account } => {
                lines.push(Line::from(vec![
                    Span::styled("✓ ", t.bold(t.success)),
                    Span::styled(format!("Signed in as {account}"), t.bold(t.success)),
                ]));
                lines.push(Line::default());
                lines.push(legend(t, "Enter", " close"));
            }
            LoginState::Failed { message, hint } => {
                lines.push(Line::from(vec![
                    Span::styled("✗ ", t.bold(t.error)),
                    Span::styled(message.clone(), t.bold(t.error)),
                ]));
                if let Some(hint) = hint {
                    lines.push(text(hint, t.text()));
                }
                lines.push(Line::default());
                lines.push(legend(t, "Enter", " close"));
            }
        }
        lines
    }

    /// Draw centred in `area`. The QR code goes beside the text, else under it, else (a small
    /// window) not at all: never clipped.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
        if let LoginState::Waiting { deadline, .. } = &self.state {
            self.shown_secs = Some(seconds_left(*deadline, now));
        }
        let qr = self.qr.as_ref().filter(|_| self.is_waiting());
        let wrap = |lines: Vec<Line<'static>>, width: u16| -> Vec<Line<'static>> {
            lines
                .iter()
                .flat_map(|l| wrap_line(l, usize::from(width)))
                .collect()
        };
        let rows = |lines: &Vec<Line<'static>>| u16::try_from(lines.len()).unwrap_or(u16::MAX);
        if let Some(qr) = qr {
            // Beside: text on the left, the code on the right.
            let text_width = area
                .width
                .saturating_sub(FRAME_X + GAP + qr.width())
                .min(TEXT_WIDTH);
            if text_width >= MIN_TEXT_WIDTH {
                let lines = wrap(self.lines(theme, now, true), text_width);
                let height = rows(&lines).max(qr.height()) + FRAME_Y;
                if height <= area.height {
                    let width = text_width + GAP + qr.width() + FRAME_X;
                    let inner = self.frame(area, width, height, buf, theme);
                    Paragraph::new(lines).render(
                        Rect {
                            width: text_width,
                            ..inner
                        },
                        buf,
                    );
                    qr.render(
                        Rect {
                            x: inner.x + text_width + GAP,
                            width: qr.width(),
                            ..inner
                        },
                        buf,
                    );
                    return;
                }
            }
            // Under: the text, then the code.
            let width = qr.width().max(MIN_TEXT_WIDTH) + FRAME_X;
            if width <= area.width {
                let text_width = width - FRAME_X;
                let lines = wrap(self.lines(theme, now, true), text_width);
                let height = rows(&lines) + 1 + qr.height() + FRAME_Y;
                if height <= area.height {
                    let inner = self.frame(area, width, height, buf, theme);
                    let text_rows = rows(&lines);
                    Paragraph::new(lines).render(inner, buf);
                    let left = inner.x + (inner.width - qr.width()) / 2;
                    qr.render(
                        Rect {
                            x: left,
                            y: inner.y + text_rows + 1,
                            width: qr.width(),
                            height: qr.height(),
                        },
                        buf,
                    );
                    return;
                }
            }
        }
        // The code and link only.
        let bordered = area.width >= MIN_TEXT_WIDTH && area.height >= 6;
        if !bordered {
            let mut lines = vec![Line::from(Span::styled(
                self.title(),
                theme.bold(theme.accent),
            ))];
            lines.extend(self.lines(theme, now, false));
            theme.clear(area, buf);
            Paragraph::new(wrap(lines, area.width.max(1))).render(area, buf);
            return;
        }
        let width = (TEXT_WIDTH + FRAME_X).min(area.width);
        let lines = wrap(self.lines(theme, now, false), width - FRAME_X);
        let height = (rows(&lines) + FRAME_Y).min(area.height);
        let inner = self.frame(area, width, height, buf, theme);
        Paragraph::new(lines).render(inner, buf);
    }

    fn is_waiting(&self) -> bool {
        matches!(self.state, LoginState::Waiting { .. })
    }

    fn title(&self) -> String {
        format!("Sign in to {}", self.service)
    }

    /// A cleared, bordered box of `width` x `height` centred in `area`, titled; its inside.
    fn frame(&self, area: Rect, width: u16, height: u16, buf: &mut Buffer, theme: &Theme) -> Rect {
        let title = Span::styled(format!(" {} ", self.title()), theme.bold(theme.text));
        let block = modal_frame::border(title, theme.bold(theme.accent));
        modal_frame::boxed(area, (width, height), block, buf, theme)
    }
}

fn legend(theme: &Theme, key: &str, what: &str) -> Line<'static> {
    let mut spans = vec![
        Span::styled(key.to_string(), theme.bold(theme.accent)),
        Span::styled(what.to_string(), theme.text()),
    ];
    if key == "Enter" {
        spans.insert(1, Span::styled("/", theme.dim()));
        spans.insert(2, Span::styled("Esc".to_string(), theme.bold(theme.accent)));
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn code(expires_in: u64) -> DeviceLoginEvent {
        DeviceLoginEvent::Code {
            user_code: "BCDF-GHJK".into(),
            verification_uri: "http://127.0.0.1:7878/device".into(),
            verification_uri_complete: "http://127.0.0.1:7878/device?user_code=BCDF-GHJK".into(),
            expires_in,
        }
    }

    fn press(modal: &mut DeviceLoginModal, code: KeyCode) -> LoginKey {
        modal.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    #[test]
    fn countdown_is_minutes_and_seconds_then_expired() {
        assert_eq!(countdown(600), "10:00");
        assert_eq!(countdown(61), "01:01");
        assert_eq!(countdown(1), "00:01");
        assert_eq!(countdown(0), "expired");
    }

    /// The clock is injected: the countdown follows `now`, whatever the wall clock does.
    #[test]
    fn the_countdown_follows_the_clock_it_is_given() {
        let mut modal = DeviceLoginModal::new("registry http://r");
        let t0 = Instant::now();
        modal.apply(Some(code(90)), t0);
        let LoginState::Waiting { deadline, .. } = modal.state.clone() else {
            panic!("not waiting: {:?}", modal.state);
        };
        assert_eq!(seconds_left(deadline, t0), 90);
        assert_eq!(
            seconds_left(deadline, t0 + Duration::from_millis(500)),
            90,
            "rounded up"
        );
        assert_eq!(seconds_left(deadline, t0 + Duration::from_secs(1)), 89);
        assert_eq!(seconds_left(deadline, t0 + Duration::from_secs(90)), 0);
        assert_eq!(seconds_left(deadline, t0 + Duration::from_secs(3600)), 0);
        // A redraw is wanted only when the second shown changes.
        let mut buf = Buffer::empty(Rect::new(0, 0, 100, 30));
        modal.render(buf.area, &mut buf, &Theme::ansi(), t0);
        assert!(!modal.countdown_changed(t0 + Duration::from_millis(900)));
        assert!(modal.countdown_changed(t0 + Duration::from_secs(1)));
    }

    #[test]
    fn esc_cancels_a_pending_login_and_closes_an_ended_one() {
        let mut modal = DeviceLoginModal::new("registry http://r");
        assert_eq!(press(&mut modal, KeyCode::Enter), LoginKey::Handled);
        assert_eq!(press(&mut modal, KeyCode::Char('x')), LoginKey::Handled);
        assert_eq!(
            press(&mut modal, KeyCode::Esc),
            LoginKey::Close { cancelled: true }
        );
        modal.apply(
            Some(DeviceLoginEvent::SignedIn {
                account: "alice".into(),
            }),
            Instant::now(),
        );
        assert!(!modal.is_pending(), "the login is over");
        assert_eq!(
            press(&mut modal, KeyCode::Enter),
            LoginKey::Close { cancelled: false }
        );
        assert_eq!(
            press(&mut modal, KeyCode::Esc),
            LoginKey::Close { cancelled: false }
        );
    }

    #[test]
    fn a_login_that_ends_without_an_outcome_fails() {
        let mut modal = DeviceLoginModal::new("registry http://r");
        modal.apply(None, Instant::now());
        assert!(matches!(modal.state, LoginState::Failed { .. }));
        // Nothing after the outcome changes it.
        modal.apply(Some(code(60)), Instant::now());
        assert!(matches!(modal.state, LoginState::Failed { .. }));
    }
}
