//! The app's side of the session's MCP servers: the plan it opens with, the approval modals,
//! `/mcp`, and the hub's notices. The session carries out what these ask (storing an approval,
//! starting servers); nothing here waits on a server.

use super::App;
use crate::cells::Level;
use crate::hooks_approval::HooksApprovalModal;
use crate::mcp_approval::{Approval, McpApprovalModal};
use crate::mcp_overlay::McpOverlay;
use crate::modals::Modal;
use splice_core::mcp::HubNotice;
use splice_core::session::Op;
use splice_core::session::mcp_plan::{NoteLevel, Plan};

impl App {
    /// The session opens: its notes said, the approved servers started in the background, and
    /// each unapproved project server asked about in turn.
    pub fn open_mcp(&mut self, plan: Plan) {
        let Plan { start, ask, notes } = plan;
        for (level, text) in notes {
            let level = match level {
                NoteLevel::Warning => Level::Warning,
                NoteLevel::Info => Level::Info,
            };
            self.notice(level, text);
        }
        if !start.is_empty() || !ask.is_empty() {
            // The unapproved are listed by `/mcp`, never started unasked.
            self.submit_op(Op::StartMcp {
                start,
                unapproved: ask.clone(),
            });
        }
        for entry in ask {
            self.mcp_unapproved.push(entry.clone());
            self.open_modal(Modal::McpAsk(McpApprovalModal::new(entry, self.now)));
        }
        self.dirty = true;
    }

    /// An approval modal was answered: an approved server starts, and is no longer asked about.
    pub(super) fn on_mcp_answered(&mut self, modal: McpApprovalModal) {
        let entry = modal.entry;
        if modal.answer == Some(Approval::Approve) {
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
    }

    /// The project's hooks, when neither approved as they are nor trusted: asked about.
    pub fn ask_project_hooks(&mut self) {
        let settings = self.settings();
        let Some(project) = splice_core::session::project_hooks_to_ask(settings) else {
            return;
        };
        let root = splice_core::mcp::approval::canonical_root(&settings.cwd);
        let commands = project
            .config
            .commands()
            .into_iter()
            .map(|(event, command)| (event.as_str().to_string(), command))
            .collect();
        let mut files: Vec<String> = project
            .files()
            .iter()
            .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
            .collect();
        // Shown where the covered files are: approved or not, such a hook does not run.
        if let Some(reason) = project.refused() {
            files.push(format!(
                "(a hook that will not run: it cannot be pinned, {reason})"
            ));
        }
        let shown = |f: &std::path::PathBuf| {
            f.strip_prefix(&settings.cwd)
                .unwrap_or(f)
                .display()
                .to_string()
        };
        let sources = project.settings.iter().map(shown).collect();
        let modal = HooksApprovalModal::new(
            project.fingerprint.clone(),
            commands,
            files,
            sources,
            self.now,
        );
        self.open_modal(Modal::HooksAsk(modal));
    }

    /// The hooks approval was answered: approved hooks run from the next request on.
    pub(super) fn on_hooks_answered(&mut self, modal: HooksApprovalModal) {
        if modal.answer == Some(Approval::Approve) {
            self.notice(Level::Info, "project hooks approved; they run from now on");
            self.submit_op(Op::ApproveHooks(modal.fingerprint));
        } else {
            self.notice(
                Level::Warning,
                "project hooks not approved: they do not run, and are asked about again next \
                 session",
            );
        }
    }

    /// `/mcp`: the overlay, with the hub's view of the servers now.
    pub fn open_mcp_overlay(&mut self) {
        let statuses = self.mcp_statuses();
        self.open_modal(Modal::McpOverlay(McpOverlay::new(statuses)));
    }

    /// `a` in `/mcp` on a project server not approved this session: the approval modal again,
    /// so what it runs is read before it starts.
    pub(super) fn ask_again(&mut self, name: &str) {
        let Some(entry) = self.mcp_unapproved.iter().find(|e| e.name == name).cloned() else {
            return;
        };
        if self.modals().mcp_asks().any(|m| m.entry.name == name) {
            return;
        }
        self.open_modal(Modal::McpAsk(McpApprovalModal::new(entry, self.now)));
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
                    splice_core::sanitize::terminal::strip_controls(&message)
                ),
            );
        }
    }
}
