//! The app's side of the session's MCP servers: the plan it opens with, the approval modals,
//! `/mcp`, and the hub's notices. The event loop carries out what these request (storing an
//! approval, starting servers); nothing here waits on a server.

use super::app::App;
use super::cells::Level;
use super::mcp_approval::{Approval, McpApprovalModal};
use super::mcp_overlay::McpOverlay;
use super::mcp_session::Plan;
use super::permission::{KeyOutcome, ModalView};
use crate::mcp::HubNotice;
use crate::session::Op;

impl App {
    /// The session opens: its notes said, the approved servers started in the background, and
    /// each unapproved project server asked about in turn.
    pub fn open_mcp(&mut self, plan: Plan) {
        let Plan { start, ask, notes } = plan;
        for (level, text) in notes {
            self.notice(level, text);
        }
        if let Some(hub) = &self.settings.mcp.hub {
            // Listed by `/mcp`, never started unasked.
            hub.record_unapproved(ask.clone());
        }
        if !start.is_empty() {
            self.submit_op(Op::StartMcp(start));
        }
        for entry in ask {
            self.mcp_unapproved.push(entry.clone());
            self.mcp_asks
                .push_back(McpApprovalModal::new(entry, self.now));
        }
        self.update_mcp_queue();
        self.dirty = true;
    }

    fn update_mcp_queue(&mut self) {
        let waiting = self.mcp_asks.len().saturating_sub(1);
        if let Some(front) = self.mcp_asks.front_mut() {
            front.queued = waiting;
        }
    }

    /// A key while an approval modal is in front.
    pub(super) fn mcp_ask_key(&mut self, key: crossterm::event::KeyEvent) {
        let now = self.now;
        let Some(modal) = self.mcp_asks.front_mut() else {
            return;
        };
        match modal.handle_key(key, now) {
            KeyOutcome::Answered => {
                let answer = modal.answer;
                let Some(modal) = self.mcp_asks.pop_front() else {
                    return;
                };
                let entry = modal.entry;
                if answer == Some(Approval::Approve) {
                    self.mcp_unapproved.retain(|e| e.name != entry.name);
                    self.mcp_failures_shown.remove(&entry.name);
                    self.notice(
                        Level::Info,
                        format!("MCP server `{}` approved; starting it", entry.name),
                    );
                    self.submit_op(Op::ApproveMcp(entry));
                } else {
                    self.notice(
                        Level::Info,
                        format!(
                            "MCP server `{}` not started; asked again next session \
                             (/mcp, then a, to approve it now)",
                            entry.name
                        ),
                    );
                }
                self.update_mcp_queue();
                if let Some(next) = self.mcp_asks.front_mut() {
                    next.reveal(now);
                }
            }
            KeyOutcome::Handled => {}
            // Typing meant for the composer reaches it, never the void.
            KeyOutcome::ToComposer => self.composer_key(key),
        }
    }

    /// `/mcp`: the overlay, with the hub's view of the servers now.
    pub fn open_mcp_overlay(&mut self) {
        let statuses = self
            .settings
            .mcp
            .hub
            .as_ref()
            .map(|hub| hub.statuses())
            .unwrap_or_default();
        self.mcp_overlay = Some(McpOverlay::new(statuses));
        self.dirty = true;
    }

    /// `a` in `/mcp` on a project server not approved this session: the approval modal again,
    /// so what it runs is read before it starts.
    pub(super) fn ask_again(&mut self, name: &str) {
        let Some(entry) = self.mcp_unapproved.iter().find(|e| e.name == name).cloned() else {
            return;
        };
        if self.mcp_asks.iter().any(|m| m.entry.name == name) {
            return;
        }
        self.mcp_asks
            .push_back(McpApprovalModal::new(entry, self.now));
        self.update_mcp_queue();
    }

    /// The hub reports: a failed server is named once in the transcript.
    pub fn on_mcp_notice(&mut self, notice: HubNotice) {
        self.dirty = true;
        if let HubNotice::ServerFailed { server, message } = notice
            && self.mcp_failures_shown.insert(server.clone())
        {
            self.notice(
                Level::Warning,
                format!(
                    "MCP server `{server}` failed: {}",
                    crate::sanitize::terminal::strip_controls(&message)
                ),
            );
        }
    }
}
