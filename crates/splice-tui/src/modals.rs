//! The modals over the transcript: one stack, whose top gets the keys and is drawn last. Which
//! modal wins is said here once, by its layer: a modal goes over those of a lower layer, and
//! waits behind one of its own kind (prompts are answered in the order they were asked), so
//! only the front one of each kind is drawn.

use std::time::Instant;

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::device_login::{DeviceLoginModal, LoginKey};
use super::hooks_approval::HooksApprovalModal;
use super::mcp_approval::McpApprovalModal;
use super::mcp_overlay::{McpOverlay, OverlayKey};
use super::permission::{KeyOutcome, ModalView, PermissionModal};
use super::theme::Theme;

/// A modal's kind, in layer order: a later one goes over an earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `/mcp`.
    McpOverlay,
    /// A project MCP server waiting for approval.
    McpAsk,
    /// The project's hooks waiting for approval.
    HooksAsk,
    /// A run waits for the person's permission: over what the person opened.
    Permission,
    /// A device-code login: over everything, the status line aside.
    Login,
}

impl Kind {
    /// Only one of these is open at a time: opening another replaces it.
    fn single(self) -> bool {
        matches!(self, Kind::McpOverlay | Kind::Login)
    }
}

pub enum Modal {
    McpOverlay(McpOverlay),
    McpAsk(McpApprovalModal),
    HooksAsk(HooksApprovalModal),
    Permission(Box<PermissionModal>),
    Login(DeviceLoginModal),
}

impl Modal {
    pub fn kind(&self) -> Kind {
        match self {
            Modal::McpOverlay(_) => Kind::McpOverlay,
            Modal::McpAsk(_) => Kind::McpAsk,
            Modal::HooksAsk(_) => Kind::HooksAsk,
            Modal::Permission(_) => Kind::Permission,
            Modal::Login(_) => Kind::Login,
        }
    }

    /// It comes to the top at `now`: a key meant for what was there must not answer it.
    fn reveal(&mut self, now: Instant) {
        match self {
            Modal::McpAsk(modal) => modal.reveal(now),
            Modal::HooksAsk(modal) => modal.reveal(now),
            Modal::Permission(modal) => modal.reveal(now),
            Modal::McpOverlay(_) | Modal::Login(_) => {}
        }
    }

    /// How many of its kind wait behind it, which it says.
    fn set_waiting(&mut self, waiting: usize) {
        match self {
            Modal::McpAsk(modal) => modal.queued = waiting,
            Modal::Permission(modal) => modal.queued = waiting,
            Modal::McpOverlay(_) | Modal::Login(_) | Modal::HooksAsk(_) => {}
        }
    }

    fn render(&mut self, area: Rect, buf: &mut Buffer, theme: &Theme, now: Instant) {
        match self {
            Modal::McpOverlay(overlay) => overlay.render(area, buf, theme),
            Modal::McpAsk(modal) => modal.render(area, buf, theme, now),
            Modal::HooksAsk(modal) => modal.render(area, buf, theme, now),
            Modal::Permission(modal) => modal.render(area, buf, theme, now),
            Modal::Login(modal) => modal.render(area, buf, theme, now),
        }
    }
}

/// What a key did to the top modal.
pub enum ModalKey {
    /// The modal used it.
    Handled,
    /// Not the modal's key (or it came too soon): it belongs to the composer.
    ToComposer,
    /// The modal closed (answered, cancelled or dismissed); here it is, answer and all.
    Closed(Box<Modal>),
    /// `a` in `/mcp` on this unapproved project server: ask the person about it.
    Approve(String),
}

/// Every open modal, bottom first.
#[derive(Default)]
pub struct ModalStack {
    modals: Vec<Modal>,
}

impl ModalStack {
    /// Open `modal` in its layer, behind those of its kind already open (one that is only
    /// ever open once replaces its predecessor).
    pub fn open(&mut self, modal: Modal) {
        let kind = modal.kind();
        if kind.single() {
            self.remove(kind);
        }
        let at = self
            .modals
            .iter()
            .position(|m| m.kind() >= kind)
            .unwrap_or(self.modals.len());
        self.modals.insert(at, modal);
        self.recount();
    }

    /// Close every modal of `kind` at `now`; the one this uncovers starts its guard again.
    pub fn close(&mut self, kind: Kind, now: Instant) {
        let top = self.top();
        self.remove(kind);
        if self.top() != top
            && let Some(uncovered) = self.modals.last_mut()
        {
            uncovered.reveal(now);
        }
    }

    /// Take down the permission prompt of the question `token` names (it no longer waits);
    /// the one this uncovers starts its guard again. Whether one was open.
    pub fn withdraw(&mut self, token: &str, now: Instant) -> bool {
        let is_it =
            |m: &Modal| matches!(m, Modal::Permission(prompt) if prompt.question.token == token);
        let on_top = self.modals.last().is_some_and(is_it);
        let before = self.modals.len();
        self.modals.retain(|m| !is_it(m));
        let withdrawn = self.modals.len() != before;
        self.recount();
        if on_top && let Some(uncovered) = self.modals.last_mut() {
            uncovered.reveal(now);
        }
        withdrawn
    }

    fn remove(&mut self, kind: Kind) {
        self.modals.retain(|m| m.kind() != kind);
        self.recount();
    }

    pub fn is_empty(&self) -> bool {
        self.modals.is_empty()
    }

    /// How many of `kind` are open.
    pub fn count(&self, kind: Kind) -> usize {
        self.modals.iter().filter(|m| m.kind() == kind).count()
    }

    pub fn has(&self, kind: Kind) -> bool {
        self.count(kind) > 0
    }

    /// The kind of the modal on top, which gets the keys.
    pub fn top(&self) -> Option<Kind> {
        self.modals.last().map(Modal::kind)
    }

    /// Give `key`, pressed at `now`, to the top modal; `None` when none is open. A modal that
    /// closes leaves the stack, and the one it uncovers starts its guard again.
    pub fn key(&mut self, key: KeyEvent, now: Instant) -> Option<ModalKey> {
        let top = self.modals.last_mut()?;
        let outcome = match top {
            Modal::Permission(modal) => view_key(modal.handle_key(key, now)),
            Modal::McpAsk(modal) => view_key(modal.handle_key(key, now)),
            Modal::HooksAsk(modal) => view_key(modal.handle_key(key, now)),
            Modal::Login(modal) => match modal.handle_key(key) {
                LoginKey::Handled => Some(ModalKey::Handled),
                LoginKey::Close { .. } => None,
            },
            Modal::McpOverlay(overlay) => match overlay.handle_key(key) {
                OverlayKey::Handled => Some(ModalKey::Handled),
                OverlayKey::Approve(name) => Some(ModalKey::Approve(name)),
                OverlayKey::Close => None,
            },
        };
        if outcome.is_some() {
            return outcome;
        }
        let closed = self.modals.pop()?;
        self.recount();
        if let Some(uncovered) = self.modals.last_mut() {
            uncovered.reveal(now);
        }
        Some(ModalKey::Closed(Box::new(closed)))
    }

    /// The login open, if any.
    pub fn login_mut(&mut self) -> Option<&mut DeviceLoginModal> {
        self.modals.iter_mut().find_map(|m| match m {
            Modal::Login(login) => Some(login),
            _ => None,
        })
    }

    /// `/mcp`, while open.
    pub fn mcp_overlay_mut(&mut self) -> Option<&mut McpOverlay> {
        self.modals.iter_mut().find_map(|m| match m {
            Modal::McpOverlay(overlay) => Some(overlay),
            _ => None,
        })
    }

    /// The MCP approvals open, front first.
    pub fn mcp_asks(&self) -> impl Iterator<Item = &McpApprovalModal> {
        self.modals.iter().rev().filter_map(|m| match m {
            Modal::McpAsk(ask) => Some(ask),
            _ => None,
        })
    }

    /// Draw the front modal of each kind, bottom first, each in the area `area` gives its kind.
    pub fn render(
        &mut self,
        area: impl Fn(Kind) -> Rect,
        buf: &mut Buffer,
        theme: &Theme,
        now: Instant,
    ) {
        let kinds: Vec<Kind> = self.modals.iter().map(Modal::kind).collect();
        for (i, modal) in self.modals.iter_mut().enumerate() {
            // One of its kind above it is in front of it: this one waits, unseen.
            if !kinds[i + 1..].contains(&modal.kind()) {
                modal.render(area(modal.kind()), buf, theme, now);
            }
        }
    }

    /// Each kind's front modal says how many wait behind it.
    fn recount(&mut self) {
        let kinds: Vec<Kind> = self.modals.iter().map(Modal::kind).collect();
        for (i, modal) in self.modals.iter_mut().enumerate() {
            let behind = kinds[..i].iter().filter(|k| **k == kinds[i]).count();
            modal.set_waiting(behind);
        }
    }
}

/// A prompt's key outcome; `None` when it was answered, which closes it.
fn view_key(outcome: KeyOutcome) -> Option<ModalKey> {
    match outcome {
        KeyOutcome::Answered => None,
        KeyOutcome::Handled => Some(ModalKey::Handled),
        KeyOutcome::ToComposer => Some(ModalKey::ToComposer),
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;
    use crate::permission::GUARD;
    use splice_core::bus::PermissionQuestion;

    fn question(id: &str) -> PermissionQuestion {
        PermissionQuestion {
            token: format!("q_{id}"),
            id: id.into(),
            tool: "run_command".into(),
            side_effect: splice_core::protocol::SideEffect::Execute,
            risk: None,
            reason: "Runs a shell command.".into(),
            rule: "run_command(cargo test)".into(),
            always: splice_core::bus::AlwaysScope::Session,
            previews: vec![],
        }
    }

    /// The kind of the modal a key closed.
    fn closed(outcome: Option<ModalKey>) -> Option<Kind> {
        match outcome {
            Some(ModalKey::Closed(modal)) => Some(modal.kind()),
            _ => None,
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// A withdrawn question's prompt goes, wherever it is in the queue; the others stay.
    #[test]
    fn a_withdrawn_prompt_is_taken_down_and_the_others_stay() {
        let now = Instant::now();
        let mut stack = ModalStack::default();
        for id in ["c1", "c2", "c3"] {
            stack.open(Modal::Permission(Box::new(PermissionModal::new(
                question(id),
                now,
            ))));
        }
        assert!(stack.withdraw("q_c2", now));
        assert!(!stack.withdraw("q_c2", now), "already gone");
        assert!(!stack.withdraw("c3", now), "a call id is not a token");
        assert!(stack.withdraw("q_c3", now));
        assert_eq!(stack.count(Kind::Permission), 1);
        let left: Vec<String> = stack
            .modals
            .iter()
            .filter_map(|m| match m {
                Modal::Permission(prompt) => Some(prompt.question.id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(left, ["c1"]);
    }

    /// One rule says which modal wins, for keys and drawing alike: a permission prompt asked
    /// during a login waits under it, over `/mcp`; prompts are answered in the order asked;
    /// and a prompt a closed modal uncovers starts its guard again, so a key meant for that
    /// modal never answers it.
    #[test]
    fn a_modal_goes_over_lower_layers_and_waits_behind_its_own_kind() {
        let now = Instant::now();
        let mut stack = ModalStack::default();
        stack.open(Modal::McpOverlay(McpOverlay::new(vec![])));
        stack.open(Modal::Login(DeviceLoginModal::new("registry x")));
        stack.open(Modal::Permission(Box::new(PermissionModal::new(
            question("call_1"),
            now,
        ))));
        stack.open(Modal::Permission(Box::new(PermissionModal::new(
            question("call_2"),
            now,
        ))));
        assert_eq!(stack.top(), Some(Kind::Login));
        assert_eq!(stack.count(Kind::Permission), 2);

        let later = now + GUARD * 4;
        assert_eq!(
            closed(stack.key(key(KeyCode::Esc), later)),
            Some(Kind::Login)
        );
        assert_eq!(stack.top(), Some(Kind::Permission));
        // Uncovered just now: the `y` typed at once is the composer's.
        assert!(matches!(
            stack.key(key(KeyCode::Char('y')), later),
            Some(ModalKey::ToComposer)
        ));
        let answer =
            |stack: &mut ModalStack, at: Instant| match stack.key(key(KeyCode::Char('y')), at) {
                Some(ModalKey::Closed(modal)) => match *modal {
                    Modal::Permission(prompt) => prompt.question.id,
                    _ => panic!("another modal closed"),
                },
                _ => panic!("the prompt was not answered"),
            };
        let after = later + GUARD * 4;
        assert_eq!(answer(&mut stack, after), "call_1", "the first asked first");
        let last = after + GUARD * 4;
        assert_eq!(answer(&mut stack, last), "call_2");
        assert_eq!(stack.top(), Some(Kind::McpOverlay));
        // `/mcp` opened again replaces the one open.
        stack.open(Modal::McpOverlay(McpOverlay::new(vec![])));
        assert_eq!(stack.count(Kind::McpOverlay), 1);
        assert_eq!(
            closed(stack.key(key(KeyCode::Esc), last)),
            Some(Kind::McpOverlay)
        );
        assert!(stack.is_empty());
        assert!(stack.key(key(KeyCode::Esc), last).is_none());
    }
}
