//! The TUI's state and its reactions to keys and bus events, plus drawing one frame. No I/O with
//! the terminal here: the event loop (`event_loop.rs`) feeds it and carries out its requests.

use std::collections::VecDeque;
use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::cells::{Cell, Level, ToolOutcome};
use super::composer::{Composer, ComposerAction};
use super::context_meter;
use super::device_login::{DeviceLoginModal, LoginState};
use super::modals::{Kind, Modal, ModalKey, ModalStack};
use super::permission::PermissionModal;
use super::pipeline::{PANEL_WIDTH, Pipeline};
use super::theme::Theme;
use super::wrap::truncate;
use commands::CommandSpec;
use splice_core::bus::PermissionQuestion;
use splice_core::device_login::DeviceLoginEvent;
use splice_core::mcp::ServerEntry;
use splice_core::protocol::Event;
use splice_core::protocol::events::RunStatus;
use splice_core::session::{COMPACT_STAGE, CompactOutcome, McpView, Op, SessionEvent};
use splice_core::settings::RunSettings;
use splice_core::usage::format_usd;

/// Below this size the layout does not fit; a one-line notice is drawn instead.
const MIN_HEIGHT: u16 = 5;
const MIN_WIDTH: u16 = 12;

/// What the app asked: of the event loop, or of the session.
pub enum Outgoing {
    Request(Request),
    Op(Op),
}

/// What the app asks the event loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Start a run with this prompt text (context included).
    StartRun(String),
    Interrupt,
    Quit,
}

#[derive(Debug, Clone, PartialEq)]
pub enum RunState {
    Idle,
    Running { since: Instant },
    Ended { status: RunStatus, exit_code: i32 },
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    pub tokens: u64,
    pub requests: u32,
    pub cost_usd: f64,
    pub priced: u32,
    pub unpriced: u32,
}

impl UsageTotals {
    /// Never `$0` for a cost nobody knows.
    pub fn cost_text(&self) -> String {
        match (self.priced, self.unpriced) {
            (0, 0) => "no cost yet".to_string(),
            (0, _) => "cost unpriced".to_string(),
            (_, 0) => format!("${}", format_usd(self.cost_usd)),
            _ => format!("${} + unpriced", format_usd(self.cost_usd)),
        }
    }
}

/// Where the session's `/compact` stands, from what it reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compaction {
    Idle,
    /// Asked, and not yet answered (started, refused, or ended at once).
    Asked,
    /// The session reported the summary request on its way.
    Running,
}

pub struct App {
    theme: Theme,
    settings: RunSettings,
    transcript: Transcript,
    composer: Composer,
    pipeline: Pipeline,
    /// Permission prompts, MCP approvals, `/mcp` and a device-code login: the top one gets
    /// the keys and is drawn last.
    modals: ModalStack,
    commands: Vec<CommandSpec>,
    /// The custom commands found (`.splice/commands/` …): listed in the popup and `/help`, and
    /// sent as requests, which the session expands.
    custom: Vec<splice_core::slash::CommandFile>,
    usage: UsageTotals,
    run: RunState,
    run_id: Option<String>,
    /// Every checkpoint of the session, oldest first: `/undo` walks back through them, across runs.
    checkpoints: Vec<(String, u32)>,
    /// The cell the model's text or reasoning is streaming into (index, is reasoning); a notice
    /// shown meanwhile lands after it without splitting it.
    streaming: Option<(usize, bool)>,
    now: Instant,
    tick: u64,
    dirty: bool,
    quit: bool,
    ctrl_c_armed: bool,
    /// Requests for the loop and operations for the session, carried out in this order (a
    /// server start asked before a request must reach the session before it).
    outgoing: Vec<Outgoing>,
    /// Requests typed while a run was going, oldest first; each starts when the run before it
    /// ends. An interrupt puts them back in the composer instead.
    queued: VecDeque<String>,
    /// Where `/compact` stands, as the session answered it; requests wait behind it.
    compaction: Compaction,
    /// The prompt tokens of the session's last request (its conversation's fill), for the
    /// context meter; `None` until the first one, and after the conversation changed shape.
    context_tokens: Option<u64>,
    /// Project servers not approved this session: `/mcp` can still ask about them.
    mcp_unapproved: Vec<ServerEntry>,
    /// Servers whose failure the transcript already names (since they were last started).
    mcp_failures_shown: std::collections::BTreeSet<String>,
    /// The session's MCP servers as they are, once the session has started.
    mcp: Option<McpView>,
}

pub use super::transcript::Transcript;

// Slash commands and the MCP side of the app are the app's own: they reach its state directly.
#[path = "commands.rs"]
pub mod commands;
#[path = "mcp_app.rs"]
mod mcp_app;

impl App {
    pub fn new(settings: RunSettings, theme: Theme) -> App {
        let commands = commands::builtin();
        let composer = Composer::new(
            settings.cwd.clone(),
            commands.iter().map(CommandSpec::hint).collect(),
        );
        App {
            theme,
            settings,
            transcript: Transcript::default(),
            composer,
            pipeline: Pipeline::default(),
            modals: ModalStack::default(),
            commands,
            custom: Vec::new(),
            usage: UsageTotals::default(),
            run: RunState::Idle,
            run_id: None,
            checkpoints: Vec::new(),
            streaming: None,
            now: Instant::now(),
            tick: 0,
            dirty: true,
            quit: false,
            ctrl_c_armed: false,
            outgoing: Vec::new(),
            queued: VecDeque::new(),
            compaction: Compaction::Idle,
            context_tokens: None,
            mcp_unapproved: Vec::new(),
            mcp_failures_shown: Default::default(),
            mcp: None,
        }
    }

    pub fn settings(&self) -> &RunSettings {
        &self.settings
    }

    /// Tests set the scene.
    #[cfg(test)]
    pub(crate) fn settings_mut(&mut self) -> &mut RunSettings {
        &mut self.settings
    }

    #[cfg(test)]
    pub(crate) fn set_theme(&mut self, theme: Theme) {
        self.theme = theme;
    }

    #[cfg(test)]
    pub(crate) fn set_run(&mut self, run: RunState) {
        self.run = run;
    }

    #[cfg(test)]
    pub(crate) fn set_tick(&mut self, tick: u64) {
        self.tick = tick;
    }

    pub fn transcript(&self) -> &Transcript {
        &self.transcript
    }

    pub fn transcript_mut(&mut self) -> &mut Transcript {
        self.dirty = true;
        &mut self.transcript
    }

    pub fn composer(&self) -> &Composer {
        &self.composer
    }

    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    pub fn usage(&self) -> &UsageTotals {
        &self.usage
    }

    /// The context meter's fill: the prompt tokens of the session's last request.
    pub fn context_tokens(&self) -> Option<u64> {
        self.context_tokens
    }

    /// The checkpoints `/undo` can still walk back through, oldest first.
    pub fn checkpoints(&self) -> &[(String, u32)] {
        &self.checkpoints
    }

    /// Project servers not approved this session.
    pub fn mcp_unapproved(&self) -> &[ServerEntry] {
        &self.mcp_unapproved
    }

    /// The app's clock: prompts tell typing from an answer by it.
    pub fn now(&self) -> Instant {
        self.now
    }

    pub fn set_now(&mut self, now: Instant) {
        self.now = now;
    }

    /// Whether something changed since the last frame.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The next frame is drawn (the window changed).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The person asked to leave.
    pub fn quitting(&self) -> bool {
        self.quit
    }

    /// A reopened session's request, shown as it was.
    pub fn replay_request(&mut self, text: String) {
        self.transcript.push(Cell::User(text));
        self.dirty = true;
    }

    /// A reopened session is replayed: nothing of it runs now, and the old runs' fill no
    /// longer applies (an old session is told in prose).
    pub fn on_resumed(&mut self) {
        self.context_tokens = None;
        self.run = RunState::Idle;
        self.pipeline.settle();
        self.transcript.settle_open_tools();
        self.notice(Level::Info, "session resumed");
    }

    /// The modals open.
    pub fn modals(&self) -> &ModalStack {
        &self.modals
    }

    /// Open `modal` over the transcript, in its layer.
    pub fn open_modal(&mut self, modal: Modal) {
        self.modals.open(modal);
        self.dirty = true;
    }

    /// The session started: `/mcp` shows its servers from now on.
    pub fn attach_mcp(&mut self, servers: Option<McpView>) {
        self.mcp = servers;
    }

    /// The session's servers as they are now; none before it started.
    pub(super) fn mcp_statuses(&self) -> Vec<splice_core::mcp::ServerStatus> {
        self.mcp.as_ref().map(McpView::statuses).unwrap_or_default()
    }

    /// Add a slash command; the composer's popup picks it up.
    pub fn register_command(&mut self, spec: CommandSpec) {
        self.commands.retain(|c| c.name != spec.name);
        self.commands.push(spec);
        self.show_commands();
    }

    /// The custom commands found for the project and the user; one named like a built-in
    /// command is left out (the catalog already skips those).
    /// The custom commands to offer; a file that is not offered (unreadable, a bad front
    /// matter, shadowed, a built-in's name) is said once, never dropped silently.
    pub fn set_custom_commands(&mut self, catalog: splice_core::slash::Catalog) {
        let builtin: Vec<&str> = self.commands.iter().map(|c| c.name).collect();
        self.custom = catalog
            .commands
            .into_iter()
            .filter(|c| !builtin.contains(&c.name.as_str()))
            .collect();
        for skipped in &catalog.skipped {
            let path = skipped.path.strip_prefix(&self.settings.cwd);
            let path = path.unwrap_or(&skipped.path).display();
            let text = format!(
                "custom command file {path} is not offered: {}",
                skipped.reason
            );
            self.notice(Level::Warning, text);
        }
        self.show_commands();
    }

    pub(super) fn custom_commands(&self) -> &[splice_core::slash::CommandFile] {
        &self.custom
    }

    fn show_commands(&mut self) {
        let hints = self
            .commands
            .iter()
            .map(CommandSpec::hint)
            .chain(self.custom.iter().map(commands::custom_hint))
            .collect();
        self.composer.set_commands(hints);
    }

    pub fn request(&mut self, request: Request) {
        if request == Request::Quit {
            self.quit = true;
        }
        self.outgoing.push(Outgoing::Request(request));
    }

    /// Ask the session for `op` (the loop submits it).
    pub fn submit_op(&mut self, op: Op) {
        self.outgoing.push(Outgoing::Op(op));
    }

    /// Everything asked since last taken, in order.
    pub fn take_outgoing(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.outgoing)
    }

    /// The requests for the loop asked since last taken (operations stay queued).
    #[cfg(test)]
    pub fn take_requests(&mut self) -> Vec<Request> {
        self.take_where(|o| matches!(o, Outgoing::Request(_)))
            .filter_map(|o| match o {
                Outgoing::Request(request) => Some(request),
                Outgoing::Op(_) => None,
            })
            .collect()
    }

    /// The operations for the session asked since last taken (requests stay queued).
    #[cfg(test)]
    pub fn take_ops(&mut self) -> Vec<Op> {
        self.take_where(|o| matches!(o, Outgoing::Op(_)))
            .filter_map(|o| match o {
                Outgoing::Op(op) => Some(op),
                Outgoing::Request(_) => None,
            })
            .collect()
    }

    /// Take what `is` picks, in order; the rest stays queued.
    #[cfg(test)]
    fn take_where(&mut self, is: fn(&Outgoing) -> bool) -> std::vec::IntoIter<Outgoing> {
        let (taken, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.outgoing).into_iter().partition(is);
        self.outgoing = kept;
        taken.into_iter()
    }

    /// A `/compact` asked of the session and not yet reported ended.
    pub fn compacting(&self) -> bool {
        self.compaction != Compaction::Idle
    }

    pub fn is_running(&self) -> bool {
        matches!(self.run, RunState::Running { .. })
    }

    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.transcript.push(Cell::Notice(level, text.into()));
        self.dirty = true;
    }

    /// A write was applied: a submission's cell keeps its diff (folded until Ctrl-O), so a
    /// change made without a prompt (accept-edits) can still be read. A tool call's cell
    /// shows its own result.
    pub fn on_changes(&mut self, id: &str, new_changes: Vec<splice_core::bus::Preview>) {
        self.transcript.update_tool(id, |cell| {
            if let Cell::Submission { changes, .. } = cell {
                *changes = new_changes;
            }
        });
        self.dirty = true;
    }

    /// At start: a provider that needs a key and has none fails the first request, so say at
    /// once which variable to set (or how to pick another provider or a server without keys).
    pub fn hint_missing_key(&mut self) {
        if let Some(hint) = splice_core::session::missing_key_hint(&self.settings.provider) {
            self.notice(Level::Warning, hint);
        }
    }

    /// `/undo` used this checkpoint up (or found it unusable): the next goes further back.
    pub fn undone(&mut self, run_id: &str, sequence: u32) {
        if let Some(at) = self
            .checkpoints
            .iter()
            .rposition(|(r, s)| r == run_id && *s == sequence)
        {
            self.checkpoints.remove(at);
        }
    }

    /// What the session reported besides runs' events (a turn's end is the loop's).
    pub fn on_session(&mut self, event: SessionEvent) {
        self.dirty = true;
        match event {
            // The event loop counts turns and writes the session log.
            SessionEvent::TurnEnded { .. }
            | SessionEvent::TurnDropped
            | SessionEvent::Memory(_)
            | SessionEvent::Cleared => {}
            // Shown as the session applied them: the status line never says otherwise.
            SessionEvent::ModelSet(provider) => {
                let text = format!("model set to {} ({})", provider.model, provider.kind.name());
                self.settings.provider = provider;
                self.notice(Level::Info, text);
            }
            SessionEvent::TierSet(tier) => {
                self.settings.tier = tier;
                self.notice(Level::Info, format!("tier set to {}", tier.as_str()));
            }
            SessionEvent::ModeSet(mode) => {
                // The session's rules ("allow always" answers) stay under the new mode.
                self.settings.policy = self.settings.policy.with_mode(mode);
                self.notice(
                    Level::Info,
                    format!("permission mode set to {}", mode.as_str()),
                );
            }
            SessionEvent::Rules(report) => {
                let (level, text) = commands::rules_notice(report);
                self.notice(level, text);
            }
            SessionEvent::PermissionAsked(question) => self.on_permission(question),
            SessionEvent::PermissionWithdrawn { token, why, .. } => {
                if self.modals.withdraw(&token, self.now) {
                    self.notice(
                        Level::Info,
                        format!("a permission prompt was withdrawn: {}", why.text()),
                    );
                }
            }
            SessionEvent::LoginStarted { service } => {
                self.open_login(DeviceLoginModal::new(&service));
            }
            SessionEvent::LoginRefused { reason } => self.notice(Level::Error, reason),
            SessionEvent::Warning { message } => self.notice(Level::Warning, message),
            SessionEvent::Login(event) => self.on_login_event(event),
            SessionEvent::Refused { reason } => {
                // A `/compact` the session refused (a turn of its own still ending) is over.
                if self.compaction == Compaction::Asked {
                    self.compaction = Compaction::Idle;
                    self.on_run_finished();
                }
                self.notice(Level::Warning, reason);
            }
            SessionEvent::CompactStarted { model } => {
                self.compaction = Compaction::Running;
                self.notice(
                    Level::Info,
                    format!(
                        "compacting: {model} is summarising the earlier part of the \
                         conversation (Esc cancels)"
                    ),
                );
            }
            SessionEvent::CompactEnded(outcome) => self.on_compacted(outcome),
            SessionEvent::Undone(undone) => {
                self.undone(&undone.run_id, undone.sequence);
                let mut text = commands::undo_text(&undone.files, &undone.deleted);
                if let Some(why) = &undone.left_alone {
                    text.push('\n');
                    text.push_str(why);
                }
                self.notice(Level::Info, text);
            }
            SessionEvent::UndoFailed {
                run_id,
                sequence,
                error,
            } => {
                // The checkpoint could not be used; the next /undo goes further back.
                self.undone(&run_id, sequence);
                self.notice(Level::Error, format!("undo failed: {error}"));
            }
        }
    }

    /// The run's task ended: the oldest queued request starts.
    pub fn on_run_finished(&mut self) {
        if self.is_running() || self.compacting() || self.quit {
            return;
        }
        if let Some(next) = self.queued.pop_front() {
            self.start_request(next);
        }
    }

    /// A frame tick: only animations (spinner, elapsed time) need a redraw.
    pub fn on_tick(&mut self, now: Instant) {
        self.now = now;
        self.tick += 1;
        // A prompt's legend changes when its guard ends.
        if self.is_running()
            || self.compacting()
            || self.modals.has(Kind::Permission)
            || self.modals.has(Kind::McpAsk)
            || self.modals.has(Kind::HooksAsk)
        {
            self.dirty = true;
        }
        // `/mcp` follows the servers as they come up or fail.
        if self.modals.has(Kind::McpOverlay) && self.mcp.is_some() {
            let statuses = self.mcp_statuses();
            if let Some(overlay) = self.modals.mcp_overlay_mut() {
                overlay.update(statuses);
                self.dirty = true;
            }
        }
        if self
            .modals
            .login_mut()
            .is_some_and(|l| l.countdown_changed(now))
        {
            self.dirty = true;
        }
    }

    /// Show a device-code login; one already open is cancelled.
    pub fn open_login(&mut self, modal: DeviceLoginModal) {
        self.open_modal(Modal::Login(modal));
    }

    /// The open login's next event (`None`: its producer ended), received at `self.now`.
    pub fn on_login_event(&mut self, event: Option<DeviceLoginEvent>) {
        let Some(modal) = self.modals.login_mut() else {
            return;
        };
        let was_pending = modal.is_pending();
        modal.apply(event, self.now);
        self.dirty = true;
        if !was_pending {
            return;
        }
        // Said once, when the outcome arrives.
        let note = match &modal.state {
            LoginState::SignedIn { account } => (
                Level::Info,
                format!("signed in to {} as {account}", modal.service),
            ),
            LoginState::Failed { message, .. } => (
                Level::Error,
                format!("sign-in to {} failed: {message}", modal.service),
            ),
            LoginState::Starting | LoginState::Waiting { .. } => return,
        };
        self.notice(note.0, note.1);
    }

    pub fn on_permission(&mut self, question: PermissionQuestion) {
        self.open_modal(Modal::Permission(Box::new(PermissionModal::new(
            question, self.now,
        ))));
    }

    /// The top modal closed: a prompt's answer goes to the session, a login cancelled ends.
    fn on_modal_closed(&mut self, modal: Modal) {
        match modal {
            Modal::Permission(prompt) => {
                if let Some(answer) = prompt.answer {
                    self.submit_op(Op::AnswerPermission {
                        token: prompt.question.token,
                        answer,
                    });
                }
            }
            Modal::McpAsk(ask) => self.on_mcp_answered(ask),
            Modal::HooksAsk(ask) => self.on_hooks_answered(ask),
            Modal::Login(login) => {
                // Closed while still going: the session ends the login's task, nothing is saved.
                if login.is_pending() {
                    self.submit_op(Op::CancelLogin);
                    self.notice(
                        Level::Info,
                        format!("sign-in to {} cancelled", login.service),
                    );
                }
            }
            Modal::McpOverlay(_) => {}
        }
    }

    /// A paste never answers a prompt: it goes to the composer.
    pub fn on_paste(&mut self, text: &str) {
        self.composer.paste(text);
        self.dirty = true;
    }

    pub fn on_mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.transcript.scroll_up(3),
            MouseEventKind::ScrollDown => self.transcript.scroll_down(3),
            _ => return,
        }
        self.dirty = true;
    }

    pub fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        self.dirty = true;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c' | 'd')) {
            self.on_ctrl_c();
            return;
        }
        self.ctrl_c_armed = false;
        if let Some(outcome) = self.modals.key(key, self.now) {
            match outcome {
                ModalKey::Handled => {}
                // Typing meant for the composer reaches it, never the void.
                ModalKey::ToComposer => self.composer_key(key),
                ModalKey::Approve(name) => self.ask_again(&name),
                ModalKey::Closed(modal) => self.on_modal_closed(*modal),
            }
            return;
        }
        match key.code {
            KeyCode::PageUp => self.transcript.scroll_up(self.transcript.page()),
            KeyCode::PageDown => self.transcript.scroll_down(self.transcript.page()),
            KeyCode::Char('o') if ctrl => self.transcript.toggle_tool_folding(),
            KeyCode::Char('t') if ctrl => self.pipeline.toggle_detail(),
            KeyCode::Esc if self.is_running() && self.composer.suggestions().is_empty() => {
                self.interrupt();
            }
            KeyCode::Esc if self.compacting() && self.composer.suggestions().is_empty() => {
                self.cancel_compaction();
            }
            _ => self.composer_key(key),
        }
    }

    pub(super) fn composer_key(&mut self, key: KeyEvent) {
        if let ComposerAction::Submit(text) = self.composer.handle_key(key) {
            self.submit(text);
        }
    }

    fn on_ctrl_c(&mut self) {
        if self.is_running() {
            self.interrupt();
            self.ctrl_c_armed = true;
        } else if self.ctrl_c_armed {
            self.request(Request::Quit);
        } else if !self.composer.text().is_empty() {
            self.composer.set_text("");
        } else {
            self.ctrl_c_armed = true;
        }
    }

    fn interrupt(&mut self) {
        // The session denies the prompts still open when it takes the interrupt.
        self.modals.close(Kind::Permission, self.now);
        self.unqueue();
        self.request(Request::Interrupt);
    }

    /// Stopping means stopping: what was queued goes back to the composer, unsent.
    fn unqueue(&mut self) {
        if !self.queued.is_empty() {
            let mut pieces: Vec<String> = self.queued.drain(..).collect();
            let typed = self.composer.text();
            if !typed.is_empty() {
                pieces.push(typed);
            }
            self.composer.set_text(&pieces.join("\n"));
        }
    }

    /// `/compact`: the session plans it and sends the summary request; it reports back
    /// ([`App::on_session`]). Requests typed meanwhile wait here.
    pub fn start_compaction(&mut self) {
        self.compaction = Compaction::Asked;
        self.submit_op(Op::Compact);
    }

    /// Esc while compacting: the session drops the summary request and says so (compacting
    /// until then), the conversation stays; what was typed meanwhile goes back to the composer.
    fn cancel_compaction(&mut self) {
        self.unqueue();
        self.submit_op(Op::Interrupt);
    }

    /// The session's `/compact` ended: how, and the requests typed meanwhile start.
    fn on_compacted(&mut self, outcome: CompactOutcome) {
        self.compaction = Compaction::Idle;
        if let Some(report) = &outcome.compacted {
            self.context_tokens = self
                .context_tokens
                .map(|reported| splice_core::session::fill_after(reported, report));
        }
        let level = if outcome.failed {
            Level::Error
        } else {
            Level::Info
        };
        self.notice(level, outcome.text);
        // Requests typed meanwhile start now, on the compacted conversation.
        self.on_run_finished();
    }

    /// A line from the composer: a slash command or a prompt.
    pub fn submit(&mut self, text: String) {
        // A custom command is a request: the session expands it. A first word that is not a
        // command name (`/usr/bin/foo is broken`) is a request as written.
        if let Some(command) = text.strip_prefix('/')
            && splice_core::slash::invocation(&text).is_some()
        {
            let (name, args) = command.split_once(' ').unwrap_or((command, ""));
            match self.commands.iter().find(|c| c.name == name).map(|c| c.run) {
                Some(run) => return run(self, args),
                None if self.custom.iter().any(|c| c.name == name) => {}
                None => {
                    return self
                        .notice(Level::Error, format!("unknown command /{name} (try /help)"));
                }
            }
        }
        // Behind a run, or behind requests already waiting (the run has ended but its task has
        // not yet been seen to finish): queued, in the order typed.
        if self.is_running() || !self.queued.is_empty() || self.compacting() {
            let behind = if self.is_running() {
                "the run"
            } else {
                "the compaction"
            };
            self.notice(
                Level::Info,
                format!("queued: {text} (starts when {behind} ends; Esc puts it back)"),
            );
            self.queued.push_back(text);
            return;
        }
        self.start_request(text);
    }

    /// Show the request and ask the loop to start its run.
    fn start_request(&mut self, text: String) {
        let prompt = text.clone();
        self.transcript.push(Cell::User(text));
        // A new request is what the person wants to see, wherever they had scrolled.
        self.transcript.scroll_down(usize::MAX);
        self.run = RunState::Running { since: self.now };
        self.pipeline.reset();
        self.pipeline.max_iterations = Some(self.settings.pipeline.max_iterations);
        self.request(Request::StartRun(prompt));
    }

    /// An event of a subagent: it goes to the live view under the `agent` call that started it
    /// (its prose is its own, never the run's answer).
    pub fn on_agent_event(&mut self, agent: &splice_core::bus::AgentScope, event: &Event) {
        self.dirty = true;
        self.transcript.update_tool(&agent.parent_call, |cell| {
            if let Cell::Tool { agent: view, .. } = cell {
                view.get_or_insert_with(|| {
                    Box::new(super::subagent::SubagentView::new(&agent.id, &agent.name))
                })
                .record(event);
            }
        });
    }

    /// React to one event of the run.
    pub fn on_event(&mut self, run_id: &str, event: Event) {
        self.dirty = true;
        // Anything else the run does ends the piece of text being streamed.
        if !matches!(event, Event::Text { .. } | Event::Reasoning { .. }) {
            self.streaming = None;
        }
        match event {
            Event::RunStart {
                provider, model, ..
            } => {
                self.run_id = Some(run_id.to_string());
                if let RunState::Idle | RunState::Ended { .. } = self.run {
                    self.run = RunState::Running { since: self.now };
                }
                let _ = (provider, model);
            }
            Event::Reasoning { delta } => {
                let text = self.pipeline.take_reasoning(&delta, self.now);
                if !text.is_empty() {
                    self.append(text, true);
                }
            }
            Event::Text { delta } => self.append(delta, false),
            Event::ToolCallStart { id, name } => self.transcript.push(Cell::Submission {
                id,
                name,
                raw: String::new(),
                changes: Vec::new(),
                expanded: false,
            }),
            Event::ToolCallDelta { id, delta } => {
                self.transcript.update_tool(&id, |cell| {
                    if let Cell::Submission { raw, .. } = cell {
                        raw.push_str(&delta);
                    }
                });
            }
            Event::ToolCall {
                id,
                name,
                args,
                side_effect,
            } => {
                let (new_args, new_effect) = (args.clone(), side_effect);
                let known = self.transcript.update_tool(&id, |cell| {
                    if let Cell::Tool {
                        args, side_effect, ..
                    } = cell
                    {
                        *args = new_args;
                        *side_effect = new_effect;
                    }
                });
                if !known {
                    self.transcript.push(Cell::Tool {
                        id,
                        name,
                        args,
                        side_effect,
                        decision: None,
                        waiting: false,
                        result: None,
                        progress: None,
                        agent: None,
                        expanded: false,
                    });
                }
            }
            Event::ToolResult {
                id,
                status,
                output,
                truncated,
                ..
            } => {
                let outcome = ToolOutcome {
                    status,
                    output,
                    truncated,
                };
                self.transcript.update_tool(&id, |cell| {
                    if let Cell::Tool {
                        result, waiting, ..
                    } = cell
                    {
                        *result = Some(outcome);
                        *waiting = false;
                    }
                });
            }
            Event::ToolProgress {
                id,
                stage,
                fraction,
                detail,
            } => {
                // A report for a call not shown (or already finished) changes nothing.
                self.transcript.update_tool(&id, |cell| {
                    if let Cell::Tool {
                        progress,
                        result: None,
                        ..
                    } = cell
                    {
                        progress.get_or_insert_default().record(
                            stage.as_deref(),
                            fraction,
                            detail.as_deref(),
                        );
                    }
                });
            }
            Event::PermissionRequest { id, .. } => {
                self.transcript.update_tool(&id, |cell| {
                    if let Cell::Tool { waiting, .. } = cell {
                        *waiting = true;
                    }
                });
            }
            Event::PermissionDecision {
                id,
                decision_reason,
                ..
            } => {
                self.transcript.update_tool(&id, |cell| {
                    if let Cell::Tool {
                        decision, waiting, ..
                    } = cell
                    {
                        *decision = Some(decision_reason);
                        *waiting = false;
                    }
                });
            }
            Event::Permission {
                id, action, reason, ..
            } => {
                self.transcript.update_tool(&id, |cell| {
                    if let Cell::Tool { decision, .. } = cell {
                        *decision = Some(format!("{}: {reason}", action.as_str()));
                    }
                });
            }
            Event::Usage(usage) => {
                // A `/compact` summary's prompt is the old conversation, not the fill of the
                // one that goes on.
                if usage.usage_reported && usage.prompt_tokens > 0 && usage.stage != COMPACT_STAGE {
                    self.context_tokens = Some(usage.prompt_tokens);
                }
                self.usage.tokens += usage.total_tokens;
                self.usage.requests += 1;
                match usage.cost_usd {
                    Some(cost) => {
                        self.usage.cost_usd += cost;
                        self.usage.priced += 1;
                    }
                    None => self.usage.unpriced += 1,
                }
            }
            Event::Checkpoint { checkpoint } => {
                self.checkpoints
                    .push((run_id.to_string(), checkpoint.sequence));
            }
            Event::Restore { checkpoint } => {
                let mut files = checkpoint.files_restored;
                files.extend(checkpoint.files_deleted.iter().cloned());
                let text = super::commands::restore_text(&files, &checkpoint.files_deleted);
                self.notice(Level::Info, text);
            }
            Event::Warning {
                detail: Some(splice_core::protocol::WarningDetail::Compacted { outcome }),
                ..
            } => {
                self.notice(Level::Warning, format!("context compacted: {outcome}"));
                // The last report was the summary request's; the next request's tells.
                self.context_tokens = None;
            }
            Event::Warning {
                detail: Some(splice_core::protocol::WarningDetail::McpServer { server }),
                ..
            } if self.mcp_failures_shown.contains(&server) => {}
            Event::Warning { message, .. } => self.notice(Level::Warning, message),
            Event::Error { code, message, .. } => {
                let level = if code == splice_core::protocol::ErrorCode::Interrupted {
                    Level::Warning
                } else {
                    Level::Error
                };
                self.notice(level, message);
            }
            Event::Final { .. } => {}
            Event::Hook {
                event,
                command,
                decision,
                reason,
                ..
            } => {
                let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
                self.notice(
                    Level::Info,
                    format!("{event} hook `{command}`: {decision}{reason}"),
                );
            }
            Event::RunEnd { status, exit_code } => {
                self.run = RunState::Ended { status, exit_code };
                self.modals.close(Kind::Permission, self.now);
            }
        }
    }

    /// Stream a delta into the newest answer (or reasoning) cell, starting one when needed.
    fn append(&mut self, delta: String, reasoning: bool) {
        if let Some((index, kind)) = self.streaming
            && kind == reasoning
        {
            self.transcript.update(index, |cell| match cell {
                Cell::Reasoning(text) | Cell::Assistant(text) => text.push_str(&delta),
                _ => {}
            });
            return;
        }
        self.transcript.push(if reasoning {
            Cell::Reasoning(delta)
        } else {
            Cell::Assistant(delta)
        });
        self.streaming = Some((self.transcript.len() - 1, reasoning));
    }

    /// Draw the whole screen.
    pub fn render(&mut self, frame: &mut Frame<'_>) {
        let area = frame.area();
        let buf = frame.buffer_mut();
        self.dirty = false;
        if self.theme.background != ratatui::style::Color::Reset {
            buf.set_style(area, Style::default().bg(self.theme.background));
        }
        if area.height < MIN_HEIGHT || area.width < MIN_WIDTH {
            // Too small for the layout; the run goes on, and a bigger window shows it again.
            let line = Line::from(Span::styled("terminal too small", self.theme.dim()));
            Paragraph::new(line).render(area, buf);
            return;
        }
        // The composer never takes the rows the transcript and status line need.
        let composer_height = self
            .composer
            .height(area.width)
            .min(area.height.saturating_sub(2));
        let [main, composer, status] = Layout::vertical([
            Constraint::Min(1),
            Constraint::Length(composer_height),
            Constraint::Length(1),
        ])
        .areas(area);
        let (transcript_area, panel_area) = self.split_main(main);
        if self.transcript.is_empty() {
            self.render_welcome(transcript_area, buf);
        } else {
            self.transcript.render(transcript_area, buf, &self.theme);
        }
        if let Some(panel) = panel_area {
            self.pipeline
                .render(panel, buf, &self.theme, self.now, self.tick);
        }
        let title = match (self.is_running(), self.queued.len()) {
            (false, _) => " Enter send · Alt+Enter newline · /help ".to_string(),
            (true, 0) => " running · Esc to interrupt ".to_string(),
            (true, n) => format!(" running · {n} queued · Esc to interrupt "),
        };
        self.composer.render(composer, buf, &self.theme, &title);
        self.render_status(status, buf);
        if self.modals.is_empty() {
            self.composer.render_popup(composer, buf, &self.theme);
        }
        // In a short window the prompt takes the composer's rows too, so its keys stay visible.
        let modal_area = if main.height >= 8 {
            main
        } else {
            Rect {
                height: area.height.saturating_sub(1),
                ..area
            }
        };
        // A login goes over everything but the status line, which keeps showing a run going on
        // underneath.
        let above_status = Rect {
            height: area.height.saturating_sub(1),
            ..area
        };
        let area_of = |kind| match kind {
            Kind::Login => above_status,
            Kind::McpOverlay | Kind::McpAsk | Kind::HooksAsk | Kind::Permission => modal_area,
        };
        self.modals.render(area_of, buf, &self.theme, self.now);
    }

    /// The pipeline panel sits on the right when there is room, else above the transcript.
    fn split_main(&self, main: Rect) -> (Rect, Option<Rect>) {
        if !self.pipeline.visible() {
            return (main, None);
        }
        if main.width >= 80 {
            let [left, right] =
                Layout::horizontal([Constraint::Min(40), Constraint::Length(PANEL_WIDTH)])
                    .areas(main);
            (left, Some(right))
        } else {
            let rows = u16::try_from(self.pipeline.height(main.width))
                .unwrap_or(u16::MAX)
                .min(main.height / 2);
            let [top, bottom] =
                Layout::vertical([Constraint::Length(rows), Constraint::Min(1)]).areas(main);
            (bottom, Some(top))
        }
    }

    fn render_welcome(&self, area: Rect, buf: &mut ratatui::buffer::Buffer) {
        let t = &self.theme;
        let cwd = self.settings.cwd.display().to_string();
        let width = usize::from(area.width);
        let lines = vec![
            Line::from(vec![
                Span::styled("splice", t.bold(t.accent)),
                Span::styled(" · a terminal coding agent", t.dim()),
            ]),
            Line::from(Span::styled(truncate(&cwd, width), t.dim())),
            Line::default(),
            Line::from(Span::styled(
                truncate(
                    "Type a request and press Enter. /help lists commands.",
                    width,
                ),
                t.text(),
            )),
        ];
        Paragraph::new(lines).render(area, buf);
    }

    fn render_status(&self, area: Rect, buf: &mut ratatui::buffer::Buffer) {
        let t = &self.theme;
        let (state, style) = match &self.run {
            RunState::Idle => ("ready".to_string(), t.dim()),
            RunState::Running { since } => {
                let spinner =
                    ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"][(self.tick as usize) % 10];
                let secs = self.now.saturating_duration_since(*since).as_secs();
                let waiting = if !self.modals.has(Kind::Permission) {
                    ""
                } else {
                    " · waiting for you"
                };
                (
                    format!("{spinner} running {secs}s{waiting}"),
                    t.bold(t.accent),
                )
            }
            RunState::Ended { status, exit_code } => match status {
                RunStatus::Success => ("✓ done".to_string(), Style::default().fg(t.success)),
                RunStatus::Interrupted => {
                    ("interrupted".to_string(), Style::default().fg(t.warning))
                }
                other => (
                    format!(
                        "✗ {} (exit {exit_code})",
                        format!("{other:?}").to_lowercase()
                    ),
                    Style::default().fg(t.error),
                ),
            },
        };
        let (state, style) = match (&self.run, self.compacting()) {
            (RunState::Running { .. }, _) | (_, false) => (state, style),
            (_, true) => {
                let spinner =
                    ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"][(self.tick as usize) % 10];
                (format!("{spinner} compacting"), t.bold(t.accent))
            }
        };
        let state = if self.ctrl_c_armed && !self.is_running() {
            ("Ctrl-C again to quit".to_string(), t.bold(t.warning))
        } else {
            (state, style)
        };
        let route = format!(
            " {}/{} · {} · tier {} ",
            self.settings.provider.kind.name(),
            self.settings.provider.model,
            self.settings.policy.mode.as_str(),
            self.settings.tier.as_str()
        );
        let usage = format!("{} tok · {} ", self.usage.tokens, self.usage.cost_text());
        // `ctx 63% · ` before the tokens, in the warning colour where a run would compact.
        let meter = context_meter::text(self.context_tokens, context_meter::window(&self.settings))
            .map(|(text, percent)| {
                let style = if percent >= context_meter::WARN_AT_PERCENT {
                    t.bold(t.warning)
                } else {
                    t.text()
                };
                (format!("{text} · "), style)
            });
        let meter_text = meter.as_ref().map_or("", |m| m.0.as_str());
        let width = usize::from(area.width);
        let fixed = state.0.chars().count() + 1 + meter_text.chars().count();
        // The session id (for `splice --resume`) goes first when the line is short of room,
        // then, to keep the meter beside the model, the token count (`/cost` tells it).
        let session = format!("· {} ", self.settings.session_id);
        let cost = format!("{} ", self.usage.cost_text());
        let mut layouts = vec![
            (format!("{route}{session}"), &usage),
            (route.clone(), &usage),
        ];
        if meter.is_some() {
            layouts.push((route, &cost));
        }
        let fits = layouts
            .into_iter()
            .find(|(route, usage)| fixed + route.chars().count() + usage.chars().count() <= width);
        let mut spans = vec![Span::styled(format!(" {}", state.0), state.1)];
        if let Some((route, usage)) = fits {
            let used = fixed + route.chars().count() + usage.chars().count();
            spans.push(Span::styled(route, t.dim()));
            spans.push(Span::raw(" ".repeat(width - used)));
            if let Some((text, style)) = meter {
                spans.push(Span::styled(text, style));
            }
            spans.push(Span::styled(usage.clone(), t.text()));
        } else {
            let rest = width.saturating_sub(state.0.chars().count() + 2);
            spans.push(Span::styled(
                format!(" {}", truncate(&format!("{meter_text}{usage}"), rest)),
                t.text(),
            ));
        }
        buf.set_line(area.x, area.y, &Line::from(spans), area.width);
    }
}
