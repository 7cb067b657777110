//! What a front end asks of a session ([`Op`]) and what the session reports besides the runs'
//! events ([`SessionEvent`]).

use std::future::Future;
use std::pin::Pin;

use super::{CompactOutcome, LoginTarget, RulesOp, RulesReport, Undone};
use crate::bus::{Answer, PermissionQuestion};
use crate::exit::Exit;
use crate::protocol::input::Prompt;
use crate::run::RunFailure;
use crate::settings::Tier;

/// What a turn's request is: given, or still being read (headless reads standard input while
/// the run starts, so `run_start` comes first and input that cannot be read is the run's
/// error).
pub enum Input {
    Prompt(Prompt),
    Reading(Pin<Box<dyn Future<Output = Result<Prompt, RunFailure>> + Send>>),
}

impl Input {
    pub fn text(text: impl Into<String>) -> Input {
        Input::Prompt(Prompt::from_text(text))
    }
}

/// Everything a front end can ask of a session.
pub enum Op {
    /// A request from the person (text and images): a run on the session's conversation. One
    /// submitted while a turn runs starts when it ends.
    UserTurn(Input),
    /// Stop the turn in progress (it ends as interrupted) and drop the requests queued behind
    /// it.
    Interrupt,
    /// Compact the conversation now: its older part is summarised by the model, the newest
    /// exchanges kept. Requests submitted meanwhile wait for it; an interrupt cancels it.
    Compact,
    /// Put back the files as they were before this checkpoint of a run (`/undo`); the model is
    /// told. Refused while a turn runs.
    Undo { run_id: String, sequence: u32 },
    /// The person's answer to the permission question whose token is `token`
    /// ([`SessionEvent::PermissionAsked`]). An answer for a question that no longer waits
    /// (answered, withdrawn, or never asked) is refused: it never answers another question.
    AnswerPermission { token: String, answer: Answer },
    /// Start these MCP servers on the session's hub, in the background, and list the project
    /// servers not approved (shown in the servers' state, never started unasked).
    StartMcp {
        start: Vec<crate::mcp::ServerEntry>,
        unapproved: Vec<crate::mcp::ServerEntry>,
    },
    /// The person approved this project server: remember the approval for the project, and
    /// start it.
    ApproveMcp(crate::mcp::ServerEntry),
    /// The person approved the project's hooks with this fingerprint: they run from the next
    /// turn on, and the approval is remembered for the project.
    ApproveHooks(String),
    /// Start a device-code login (one already going is cancelled).
    Login(LoginTarget),
    /// Cancel the login going on: its task ends, nothing is saved.
    CancelLogin,
    /// Forget the conversation (`/clear`): the next turn starts a new one. Submitted during a
    /// turn, it applies when the turn ends (an interrupt does not drop it); a compaction under
    /// way is discarded when its summary arrives.
    Clear,
    /// Change the model the next turns use: `MODEL`, an alias, or `PROVIDER/MODEL`, resolved
    /// by the session ([`super::resolve_model_from_env`]); one it cannot use is refused.
    SetModel(String),
    /// Change the tier the next turns use.
    SetTier(Tier),
    /// Change the permission mode the next turns use (session rules are kept).
    SetPermissionMode(crate::permissions::PermissionMode),
    /// List the session's allow rules ("allow always" answers) or remove some; answered by
    /// [`SessionEvent::Rules`]. A removed rule no longer allows from the next tool call on.
    Rules(RulesOp),
    /// End the session once the turn in progress has ended (interrupt it first to cut it
    /// short).
    Shutdown,
}

impl Op {
    /// The operation's name, for the log (never its content: a turn's text, a login's codes).
    pub fn kind(&self) -> &'static str {
        match self {
            Op::UserTurn(_) => "user_turn",
            Op::Interrupt => "interrupt",
            Op::Compact => "compact",
            Op::Undo { .. } => "undo",
            Op::AnswerPermission { .. } => "answer_permission",
            Op::StartMcp { .. } => "start_mcp",
            Op::ApproveMcp(_) => "approve_mcp",
            Op::ApproveHooks(_) => "approve_hooks",
            Op::Login(_) => "login",
            Op::CancelLogin => "cancel_login",
            Op::Rules(_) => "rules",
            Op::Clear => "clear",
            Op::SetModel(_) => "set_model",
            Op::SetTier(_) => "set_tier",
            Op::SetPermissionMode(_) => "set_permission_mode",
            Op::Shutdown => "shutdown",
        }
    }
}

/// Why a permission question stopped waiting before the person answered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withdrawal {
    /// Whoever asked stopped waiting (a subagent whose time ran out).
    AskerStopped,
    /// The turn was interrupted (Esc, an editor's `session/cancel`): the call is denied.
    Interrupted,
    /// The turn ended with the question still open: the call is denied.
    TurnEnded,
}

impl Withdrawal {
    /// Why, in words, after "withdrawn: ".
    pub fn text(self) -> &'static str {
        match self {
            Withdrawal::AskerStopped => "the subagent that asked has ended",
            Withdrawal::Interrupted => "the turn was cancelled",
            Withdrawal::TurnEnded => "the turn ended",
        }
    }
}

/// What a session reports besides a run's protocol events, to sinks that want it (the
/// stream-json and text writers ignore these: their output is the runs' events alone). Each
/// [`Op::UserTurn`] is answered by exactly one `TurnEnded` or `TurnDropped`, in the order the
/// turns were submitted; the run's own events (`run_start` first, `run_end` last) carry its
/// run id.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionEvent {
    /// A turn ended, after all its events, with its exit code.
    TurnEnded { code: Exit },
    /// A request queued behind a turn was dropped by an interrupt, never started.
    TurnDropped,
    /// A tool call waits for the person's permission: answer with [`Op::AnswerPermission`]
    /// naming the question's token (an interrupt, or the turn's end, denies it).
    PermissionAsked(PermissionQuestion),
    /// The permission question `token` (of tool call `id`) no longer waits for an answer. A
    /// front end takes the prompt down; an answer sent for it anyway is refused.
    PermissionWithdrawn {
        token: String,
        id: String,
        why: Withdrawal,
    },
    /// A login started: its events follow ([`SessionEvent::Login`]).
    LoginStarted { service: String },
    /// A login could not start, and why.
    LoginRefused { reason: String },
    /// The login's next event; `None` when it ended without an outcome.
    Login(Option<crate::device_login::DeviceLoginEvent>),
    /// Something went wrong that the person should know of (an approval not saved).
    Warning { message: String },
    /// An operation was refused in the session's present state (a `/compact` during a turn).
    Refused { reason: String },
    /// A compaction's summary request is on its way to `model`.
    CompactStarted { model: String },
    /// A compaction ended (or had nothing to do, or was cancelled).
    CompactEnded(CompactOutcome),
    /// The conversation changed (after a turn, before its `TurnEnded`; after a compaction; after
    /// an undo, its note): what a session file lacks of it, so a reopened session gets back
    /// exactly this. The first holds the whole conversation the session started from.
    Memory(crate::conversation::Unsaved),
    /// `Op::Clear` forgot the conversation.
    Cleared,
    /// The model the next turns use, as the session applied it (after `Op::SetModel`).
    ModelSet(crate::provider::ProviderConfig),
    /// The tier the next turns use, as applied (after `Op::SetTier`).
    TierSet(Tier),
    /// The permission mode the next turns use, as applied (after `Op::SetPermissionMode`).
    ModeSet(crate::permissions::PermissionMode),
    /// The session's allow rules, or what an `Op::Rules` changed of them.
    Rules(RulesReport),
    /// An undo put files back from this checkpoint.
    Undone(Undone),
    /// The checkpoint could not be used.
    UndoFailed {
        run_id: String,
        sequence: u32,
        error: String,
    },
}
