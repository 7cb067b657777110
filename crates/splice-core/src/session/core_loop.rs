//! The session's loop: it owns the settings and the conversation, takes operations in order,
//! runs turns (and a compaction, an undo, a login) and reports what happens.

use std::collections::{HashMap, VecDeque};

use tokio::sync::{mpsc, oneshot};

use super::{
    CompactOutcome, Frontend, Input, Op, SessionEvent, Withdrawal, compact, login, rules, undo,
};
use crate::bus::{Answer, Bus, ConfigSave, PermissionAsk};
use crate::exit::Exit;
use crate::ids::new_run_id;
use crate::permissions::network::DOMAINS_KEY;
use crate::settings::RunSettings;

/// What waits for the turn in progress to end, in the order submitted.
enum Queued {
    Turn(Input),
    /// A `/clear` submitted during a turn: applied when it ends, since a turn writes its
    /// conversation back at its end.
    Clear,
}

/// A turn in progress: its task and the sender that interrupts it.
struct Running {
    task: tokio::task::JoinHandle<Exit>,
    stop: Option<oneshot::Sender<()>>,
}

/// The session's state, owned by its loop.
pub(super) struct Core {
    settings: RunSettings,
    frontend: Frontend,
    running: Option<Running>,
    compacting: Option<compact::PendingCompaction>,
    queued: VecDeque<Queued>,
    last_code: Exit,
    /// Where runs ask permission questions, when the front end answers them.
    asks: Option<mpsc::UnboundedSender<PermissionAsk>>,
    /// Questions asked and not yet answered, by token: an answer reaches only the question
    /// it was given for, never a later one of the same tool call id.
    waiting: HashMap<String, Waiting>,
    /// Mints the questions' tokens.
    tokens: Tokens,
    /// One relay per question asked: it hands the answer on, or ends with the question's
    /// token when the asker stopped waiting (a subagent that timed out), so the prompt is
    /// withdrawn.
    relays: tokio::task::JoinSet<Option<String>>,
    /// The login going on; dropped (its task ended) when cancelled or over.
    login: Option<crate::device_login::DeviceLogin>,
    /// MCP servers starting on the hub: a warning each, or none.
    mcp_starts: tokio::task::JoinSet<Option<String>>,
    /// Approvals being saved: a warning each, or none. Awaited, never aborted, when the
    /// session ends, so an approval the person gave just before quitting is kept.
    saves: tokio::task::JoinSet<Option<String>>,
    /// The front end's editor files, handed to every run (ACP).
    files: Option<std::sync::Arc<dyn crate::bus::ClientFiles>>,
}

impl Core {
    pub(super) fn new(
        settings: RunSettings,
        frontend: Frontend,
        asks: Option<mpsc::UnboundedSender<PermissionAsk>>,
        files: Option<std::sync::Arc<dyn crate::bus::ClientFiles>>,
    ) -> Core {
        Core {
            asks,
            files,
            waiting: HashMap::new(),
            tokens: Tokens::new(),
            relays: tokio::task::JoinSet::new(),
            login: None,
            mcp_starts: tokio::task::JoinSet::new(),
            saves: tokio::task::JoinSet::new(),
            settings,
            frontend,
            running: None,
            compacting: None,
            queued: VecDeque::new(),
            last_code: crate::exit::Exit::Success,
        }
    }

    pub(super) async fn serve(
        mut self,
        mut ops: mpsc::UnboundedReceiver<Op>,
        mut questions: Option<mpsc::UnboundedReceiver<PermissionAsk>>,
    ) -> Exit {
        let mut shutting_down = false;
        let mut open = true;
        loop {
            if shutting_down && self.running.is_none() && self.compacting.is_none() {
                break;
            }
            tokio::select! {
                op = ops.recv(), if open => match op {
                    Some(Op::Shutdown) => shutting_down = true,
                    Some(op) => self.handle(op).await,
                    None => {
                        // Every handle is gone: without a shutdown asked for first, nobody is
                        // left to read what the turn does, so it stops.
                        open = false;
                        if !shutting_down {
                            shutting_down = true;
                            self.interrupt();
                        }
                    }
                },
                event = login_event(&mut self.login) => {
                    if event.as_ref().is_none_or(|e| e.is_final()) {
                        self.login = None;
                    }
                    self.report(&SessionEvent::Login(event));
                }
                Some(done) = self.mcp_starts.join_next(), if !self.mcp_starts.is_empty() => {
                    if let Ok(Some(message)) = done {
                        self.report(&SessionEvent::Warning { message });
                    }
                }
                Some(done) = self.saves.join_next(), if !self.saves.is_empty() => {
                    if let Ok(Some(message)) = done {
                        self.report(&SessionEvent::Warning { message });
                    }
                }
                Some(mut ask) = next_question(&mut questions) => {
                    let (asked, token) = self.tokens.mint();
                    ask.question.token = token.clone();
                    let (reply, answered) = oneshot::channel();
                    let id = ask.question.id.clone();
                    let save = ask.question.always.save().cloned();
                    self.waiting.insert(token.clone(), Waiting { asked, id, reply, save });
                    self.relays.spawn(relay(token, answered, ask.reply));
                    self.report(&SessionEvent::PermissionAsked(ask.question));
                }
                Some(done) = self.relays.join_next(), if !self.relays.is_empty() => {
                    if let Ok(Some(token)) = done
                        && let Some(waiting) = self.waiting.remove(&token)
                    {
                        self.report(&SessionEvent::PermissionWithdrawn {
                            token,
                            id: waiting.id,
                            why: Withdrawal::AskerStopped,
                        });
                    }
                }
                code = turn_end(&mut self.running) => {
                    self.running = None;
                    self.deny_waiting(Withdrawal::TurnEnded);
                    self.last_code = code;
                    self.report_memory();
                    self.report(&SessionEvent::TurnEnded { code });
                    self.start_queued().await;
                }
                result = compact::finished(&mut self.compacting) => {
                    if let Some(pending) = self.compacting.take() {
                        let outcome = compact::finish(pending, result, &self.settings, &self.bus());
                        self.report(&SessionEvent::CompactEnded(outcome));
                        // The conversation may have been replaced.
                        self.report_memory();
                    }
                    // Requests submitted meanwhile start now, on the compacted conversation.
                    self.start_queued().await;
                }
            }
        }
        self.mcp_starts.shutdown().await;
        while let Some(done) = self.saves.join_next().await {
            if let Ok(Some(message)) = done {
                self.report(&SessionEvent::Warning { message });
            }
        }
        // A session whose hooks saw it start sees it end.
        if self.settings.hooks.started()
            && let Some(hooks) = crate::hooks::Hooks::for_run(&self.settings)
        {
            let reason = if open { "exit" } else { "other" };
            crate::hooks::session_end(&hooks, reason).await;
        }
        // No server outlives the session: its hub is the session's own.
        if let Some(hub) = &self.settings.mcp.hub {
            hub.shutdown().await;
        }
        self.last_code
    }

    async fn handle(&mut self, op: Op) {
        tracing::info!(op = op.kind(), busy = self.busy(), "session op");
        match op {
            Op::UserTurn(input) if self.busy() => self.queued.push_back(Queued::Turn(input)),
            Op::UserTurn(input) => self.start_turn(input),
            Op::Interrupt => self.interrupt(),
            Op::Compact => self.compact(),
            Op::Undo { run_id, sequence } => self.undo(run_id, sequence).await,
            Op::Login(target) => {
                // Dropping a login going on ends it.
                self.login = None;
                let event = match login::start(&target) {
                    Ok((service, login)) => {
                        self.login = Some(login);
                        SessionEvent::LoginStarted { service }
                    }
                    Err(error) => SessionEvent::LoginRefused {
                        reason: error.to_string(),
                    },
                };
                self.report(&event);
            }
            Op::CancelLogin => self.login = None,
            Op::StartMcp { start, unapproved } => {
                if let Some(hub) = &self.settings.mcp.hub {
                    hub.record_unapproved(unapproved);
                }
                self.start_mcp(start);
            }
            Op::ApproveMcp(entry) => self.approve_mcp(entry),
            Op::ApproveHooks(fingerprint) => self.approve_hooks(fingerprint),
            Op::AnswerPermission { token, answer } => match self.waiting.remove(&token) {
                // The asker may have gone meanwhile; then its relay withdraws nothing more.
                Some(waiting) => {
                    let answer = match answer {
                        // The asker grants for the session; the session writes the config.
                        Answer::AllowAndSave => {
                            if let Some(save) = waiting.save {
                                self.save_config(save);
                            }
                            Answer::AllowAlways
                        }
                        answer => answer,
                    };
                    let _ = waiting.reply.send(answer);
                }
                None => self.refuse_answer(&token, &answer),
            },
            // A compaction under way is discarded: its conversation is gone.
            Op::Clear if self.running.is_none() && self.queued.is_empty() => self.clear().await,
            Op::Clear => self.queued.push_back(Queued::Clear),
            Op::SetModel(name) => {
                let event = match super::resolve_model_from_env(&self.settings.provider, &name) {
                    Ok(provider) => {
                        self.settings.provider = provider.clone();
                        SessionEvent::ModelSet(provider)
                    }
                    Err(error) => SessionEvent::Refused {
                        reason: error.to_string(),
                    },
                };
                self.report(&event);
            }
            Op::SetTier(tier) => {
                self.settings.tier = tier;
                self.report(&SessionEvent::TierSet(tier));
            }
            Op::SetPermissionMode(mode) => {
                self.settings.policy = self.settings.policy.with_mode(mode);
                self.report(&SessionEvent::ModeSet(mode));
            }
            Op::Rules(op) => {
                let report = rules::apply(&self.settings.policy, op);
                self.report(&SessionEvent::Rules(report));
            }
            Op::Shutdown => {}
        }
    }

    /// Start `servers` on the session's hub; the session never waits on a server. They are
    /// marked `starting` before this returns, so a turn submitted next waits for their tools
    /// (a start left to a task of its own could be overtaken by that turn). The hub's shutdown
    /// ends them.
    fn start_mcp(&mut self, servers: Vec<crate::mcp::ServerEntry>) {
        if let Some(hub) = &self.settings.mcp.hub {
            let pending = hub.launch(servers);
            self.mcp_starts.spawn(async move {
                for ready in pending {
                    let _ = ready.await;
                }
                None
            });
        }
    }

    /// The approval is written on the blocking pool while the server starts. A write that
    /// fails is a warning; the server still starts for this session, as the person asked.
    fn approve_mcp(&mut self, entry: crate::mcp::ServerEntry) {
        let (data, cwd) = (self.settings.layout.clone(), self.settings.cwd.clone());
        let saved = entry.clone();
        self.saves.spawn(async move {
            let name = saved.name.clone();
            let written = crate::blocking::detached(move || {
                crate::mcp::approval::approve(&data, &cwd, &saved)
            })
            .await;
            match written {
                Some(Ok(())) => None,
                Some(Err(e)) => Some(format!(
                    "approval of MCP server `{name}` not saved ({e}); it starts for this session \
                     and is asked about again next time"
                )),
                None => Some(format!("approval of MCP server `{name}` not saved")),
            }
        });
        self.start_mcp(vec![entry]);
    }

    /// What an answer saves, written on the blocking pool. A write that fails is a warning;
    /// what was allowed still holds for this session, as the person asked.
    fn save_config(&mut self, save: ConfigSave) {
        self.saves.spawn(async move {
            let what = match &save {
                ConfigSave::AllowedDomain(host) => format!("{host} in {DOMAINS_KEY}"),
            };
            match crate::blocking::detached(move || crate::config::save(&save)).await {
                Some(Ok(_)) => None,
                Some(Err(e)) => Some(format!(
                    "{what} not saved to the config file ({e}); it is allowed for this session \
                     only"
                )),
                None => Some(format!("{what} not saved to the config file")),
            }
        });
    }

    /// The project's hooks approved: they run for the rest of the session (the approval
    /// names exactly the configuration the session read), and the approval is saved for
    /// later sessions and headless runs.
    fn approve_hooks(&mut self, fingerprint: String) {
        let hooks = &mut self.settings.hooks;
        if hooks
            .project
            .as_ref()
            .is_none_or(|p| p.fingerprint != fingerprint)
        {
            return;
        }
        hooks.trust_project = true;
        let (data, root) = (
            self.settings.layout.clone(),
            crate::mcp::approval::canonical_root(&self.settings.cwd),
        );
        self.saves.spawn(async move {
            let written = crate::blocking::detached(move || {
                crate::hooks::approval::approve(&data, &root, &fingerprint)
            })
            .await;
            match written {
                Some(Ok(())) => None,
                Some(Err(e)) => Some(format!(
                    "approval of the project's hooks not saved ({e}); they run for this session \
                     and are asked about again next time"
                )),
                None => Some("approval of the project's hooks not saved".to_string()),
            }
        });
    }

    /// A turn or a compaction is under way: requests wait.
    fn busy(&self) -> bool {
        self.running.is_some() || self.compacting.is_some()
    }

    async fn start_queued(&mut self) {
        while !self.busy()
            && let Some(next) = self.queued.pop_front()
        {
            match next {
                Queued::Turn(input) => self.start_turn(input),
                Queued::Clear => self.clear().await,
            }
        }
    }

    /// Forget the conversation. As in Claude Code, that ends the hooks' session and starts
    /// another: `SessionEnd` (reason `clear`) runs now, before anything else, and
    /// `SessionStart` (source `clear`) before the next request.
    async fn clear(&mut self) {
        if self.settings.hooks.started()
            && let Some(hooks) = crate::hooks::Hooks::for_run(&self.settings)
        {
            crate::hooks::session_end(&hooks, "clear").await;
            self.settings.hooks.restart("clear");
        }
        self.settings.conversation.clear();
        self.report(&SessionEvent::Cleared);
    }

    fn compact(&mut self) {
        let refused = if self.running.is_some() {
            Some(
                "wait for the run to end (or press Esc) before /compact: the run is still adding to the conversation",
            )
        } else if self.compacting.is_some() {
            Some("already compacting (Esc cancels)")
        } else {
            None
        };
        if let Some(reason) = refused {
            return self.report(&SessionEvent::Refused {
                reason: reason.into(),
            });
        }
        let bus = crate::hooks::attach(&self.settings, self.bus());
        let event = match compact::start(&self.settings, bus) {
            Ok(pending) => {
                self.compacting = Some(pending);
                SessionEvent::CompactStarted {
                    model: self.settings.provider.model.clone(),
                }
            }
            Err(compact::NotStarted::Nothing(text)) => {
                SessionEvent::CompactEnded(CompactOutcome::nothing(text))
            }
            Err(compact::NotStarted::Failed(text)) => {
                SessionEvent::CompactEnded(CompactOutcome::failed(text))
            }
        };
        self.report(&event);
    }

    async fn undo(&mut self, run_id: String, sequence: u32) {
        if self.running.is_some() {
            return self.report(&SessionEvent::Refused {
                reason: "wait for the run to end (or press Esc) before /undo".into(),
            });
        }
        let layout = self.settings.layout.clone();
        let (run, at) = (run_id.clone(), sequence);
        // Restoring files blocks: on the blocking pool, the session waiting (no turn runs).
        let restored = crate::blocking::detached(move || undo::restore(&layout, &run, at)).await;
        let event = match restored {
            Some(Ok(undone)) => {
                if !undone.files.is_empty() {
                    // The model's write no longer stands: it is told.
                    self.settings
                        .conversation
                        .push_note(&crate::conversation::undo_note(&undone.files));
                }
                SessionEvent::Undone(undone)
            }
            failed => SessionEvent::UndoFailed {
                run_id,
                sequence,
                error: match failed {
                    Some(Err(error)) => error.to_string(),
                    _ => "the restore stopped".into(),
                },
            },
        };
        self.report(&event);
        // After the undo, whose replay adds the same note: the record of it starts at the note.
        self.report_memory();
    }

    /// Never leave a run waiting on a question nobody will answer: each is denied, and the
    /// front ends take its prompt down.
    fn deny_waiting(&mut self, why: Withdrawal) {
        let mut waiting: Vec<(String, Waiting)> = self.waiting.drain().collect();
        // In the order asked, for the front ends.
        waiting.sort_by_key(|(_, waiting)| waiting.asked);
        for (token, waiting) in waiting {
            let _ = waiting.reply.send(Answer::Deny);
            self.report(&SessionEvent::PermissionWithdrawn {
                token,
                id: waiting.id,
                why,
            });
        }
    }

    /// An answer for a question that no longer waits (answered, withdrawn, or never asked)
    /// answers nothing; an approval the person gave too late is told about.
    fn refuse_answer(&self, token: &str, answer: &Answer) {
        tracing::warn!(token, "answer to a question that no longer waits: refused");
        if matches!(
            answer,
            Answer::AllowOnce | Answer::AllowAlways | Answer::AllowAndSave
        ) {
            self.report(&SessionEvent::Warning {
                message: "an approval arrived for a permission question that no longer waits \
                          (withdrawn or already answered); it was not used"
                    .into(),
            });
        }
    }

    fn interrupt(&mut self) {
        self.deny_waiting(Withdrawal::Interrupted);
        if self.compacting.take().is_some() {
            self.report(&SessionEvent::CompactEnded(CompactOutcome::nothing(
                "compaction cancelled; the conversation is unchanged".into(),
            )));
        }
        // Requests are dropped; a `/clear` still applies when the turn has ended.
        let before = self.queued.len();
        self.queued.retain(|q| matches!(q, Queued::Clear));
        for _ in self.queued.len()..before {
            self.report(&SessionEvent::TurnDropped);
        }
        if let Some(stop) = self.running.as_mut().and_then(|r| r.stop.take()) {
            let _ = stop.send(());
        }
    }

    /// A bus for one run (or one session request), to every sink.
    fn bus(&self) -> Bus {
        let sinks = self.frontend.sinks.clone();
        match &self.asks {
            Some(asks) => Bus::with_responder(new_run_id(), sinks, asks.clone()),
            None => Bus::new(new_run_id(), sinks),
        }
        .with_files(self.files.clone())
    }

    fn start_turn(&mut self, input: Input) {
        let (stop, stopped) = oneshot::channel();
        let future = (self.frontend.turn)(self.settings.clone(), self.bus(), input, stopped);
        // Its own task: whatever the run blocks on, the session keeps taking operations.
        self.running = Some(Running {
            task: tokio::spawn(future),
            stop: Some(stop),
        });
    }

    /// What the conversation gained or lost since it was last reported, for the session log.
    fn report_memory(&self) {
        if let Some(unsaved) = self.settings.conversation.unsaved() {
            self.report(&SessionEvent::Memory(unsaved));
        }
    }

    fn report(&self, event: &SessionEvent) {
        for sink in &self.frontend.reports {
            sink.session(event);
        }
    }
}

/// A question waiting for the person: its tool call, and where its answer goes.
struct Waiting {
    /// Its place in the order questions were asked.
    asked: u64,
    id: String,
    reply: oneshot::Sender<Answer>,
    /// What "always, saved" writes, when the question offers it.
    save: Option<ConfigSave>,
}

/// The tokens of one session's questions: `q_` then a prefix of the session's own and a
/// count, so none is ever handed out twice, nor one of another session's.
struct Tokens {
    prefix: String,
    next: u64,
}

impl Tokens {
    fn new() -> Tokens {
        Tokens {
            prefix: crate::ids::random_suffix(8),
            next: 0,
        }
    }

    /// The next question's place and token.
    fn mint(&mut self) -> (u64, String) {
        self.next += 1;
        (self.next, format!("q_{}_{}", self.prefix, self.next))
    }
}

/// Hand the person's answer to the asker; `Some(token)` when the asker stopped waiting
/// first (its future was dropped: a subagent's time ran out), and the question is void.
async fn relay(
    token: String,
    answered: oneshot::Receiver<Answer>,
    mut reply: oneshot::Sender<Answer>,
) -> Option<String> {
    tokio::select! {
        answer = answered => {
            if let Ok(answer) = answer {
                let _ = reply.send(answer);
            }
            None
        }
        () = reply.closed() => Some(token),
    }
}

/// The login's next event, or never while none goes on.
async fn login_event(
    login: &mut Option<crate::device_login::DeviceLogin>,
) -> Option<crate::device_login::DeviceLoginEvent> {
    match login {
        Some(login) => login.next().await,
        None => std::future::pending().await,
    }
}

/// The next question a run asks, or never when the front end answers none.
async fn next_question(
    questions: &mut Option<mpsc::UnboundedReceiver<PermissionAsk>>,
) -> Option<PermissionAsk> {
    match questions {
        Some(questions) => questions.recv().await,
        None => std::future::pending().await,
    }
}

/// The turn's exit code when its task ends (a turn that panicked failed), or never without one.
async fn turn_end(running: &mut Option<Running>) -> Exit {
    match running {
        Some(running) => (&mut running.task)
            .await
            .unwrap_or(crate::exit::Exit::Failed),
        None => std::future::pending().await,
    }
}
