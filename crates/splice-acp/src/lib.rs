//! `splice acp`: Splice as an Agent Client Protocol agent, the third front end of the core
//! session. An editor starts it and speaks JSON-RPC with it over stdin/stdout (logs never go
//! there); each ACP session is a core session driven by operations, its events sent back as
//! session updates. See docs/acp.md.

mod agent;
mod driver;
mod files;
mod history;
mod modes;
mod plan;
mod updates;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, PromptResponse, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::{Agent, Stdio, on_receive_notification, on_receive_request};
use tokio::sync::mpsc;

use splice_core::exit::Exit;
use splice_core::settings::RunSettings;

/// Why a session's settings could not be made (a flag or config file that cannot work); the
/// client gets it as the answer to its `session/new` or `session/load`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

/// Makes the settings of a session: in the client's working directory (`None`: the agent's
/// own), new or the saved session to load. The edge that started the agent (its flags, the
/// config file) decides them; the front end only says where and which.
pub type Settle = Box<
    dyn Fn(Option<&std::path::Path>, Option<String>) -> Result<RunSettings, SettingsError>
        + Send
        + Sync,
>;

/// The protocol version this agent speaks (the crate's stable v1).
pub const PROTOCOL_VERSION: u16 = 1;

/// A request or notification from the client, handed from the connection's dispatch loop to
/// the agent's own task (the loop is never held while a session works).
pub(crate) enum Incoming {
    Initialize(Box<InitializeRequest>, Responder<InitializeResponse>),
    Authenticate(AuthenticateRequest, Responder<AuthenticateResponse>),
    NewSession(NewSessionRequest, Responder<NewSessionResponse>),
    LoadSession(LoadSessionRequest, Responder<LoadSessionResponse>),
    Prompt(PromptRequest, Responder<PromptResponse>),
    SetMode(SetSessionModeRequest, Responder<SetSessionModeResponse>),
    SetConfig(
        SetSessionConfigOptionRequest,
        Responder<SetSessionConfigOptionResponse>,
    ),
    Cancel(CancelNotification),
}

/// Serve one client on stdin/stdout until its input ends. Malformed messages and unknown
/// methods are answered with JSON-RPC errors by the connection; every session (its turn, its
/// commands, its MCP servers) ends before this returns.
pub async fn serve(settle: Settle) -> Exit {
    let (tx, inbox) = mpsc::unbounded_channel::<Incoming>();
    macro_rules! forward {
        ($variant:ident, $request:ty) => {{
            let tx = tx.clone();
            async move |request: $request, responder, _cx| {
                let _ = tx.send(Incoming::$variant(request.into(), responder));
                Ok(())
            }
        }};
    }
    let cancel = {
        let tx = tx.clone();
        async move |note: CancelNotification, _cx| {
            let _ = tx.send(Incoming::Cancel(note));
            Ok(())
        }
    };
    // The agent is a task of its own: it outlives the connection's future, so whatever ends
    // the connection (the client's input closing, a write to a client that went away), every
    // session still ends, its turn, commands and servers with it.
    let (connected, connection) = tokio::sync::oneshot::channel();
    let agent = tokio::spawn(async move {
        if let Ok(cx) = connection.await {
            agent::Agent::new(settle, cx).serve(inbox).await;
        }
    });
    let input_closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let saw_close = input_closed.clone();
    let served = Agent
        .v1()
        .name("splice")
        .on_receive_request(
            forward!(Initialize, InitializeRequest),
            on_receive_request!(),
        )
        .on_receive_request(
            forward!(Authenticate, AuthenticateRequest),
            on_receive_request!(),
        )
        .on_receive_request(
            forward!(NewSession, NewSessionRequest),
            on_receive_request!(),
        )
        .on_receive_request(
            forward!(LoadSession, LoadSessionRequest),
            on_receive_request!(),
        )
        .on_receive_request(forward!(Prompt, PromptRequest), on_receive_request!())
        .on_receive_request(
            forward!(SetMode, SetSessionModeRequest),
            on_receive_request!(),
        )
        .on_receive_request(
            forward!(SetConfig, SetSessionConfigOptionRequest),
            on_receive_request!(),
        )
        .on_receive_notification(cancel, on_receive_notification!())
        .connect_with(Stdio::new(), async move |cx| {
            let _ = connected.send(cx.clone());
            cx.incoming_closed().await;
            saw_close.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        })
        .await;
    // The handlers' senders went with the connection: the agent's inbox ends, and it ends
    // every session before this returns.
    drop(tx);
    let _ = agent.await;
    match served {
        Ok(()) => Exit::Success,
        // The client closed its end, and what the sessions said last had nobody to read it.
        Err(error) if input_closed.load(std::sync::atomic::Ordering::SeqCst) => {
            tracing::info!(target: "splice::acp", %error, "the client went away");
            Exit::Success
        }
        Err(error) => {
            tracing::warn!(target: "splice::acp", %error, "connection ended");
            Exit::Failed
        }
    }
}
