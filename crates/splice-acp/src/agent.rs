//! The agent's side of the connection: each request from the client, handled in the order it
//! came, on the core sessions it opened (one per ACP session).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateResponse, AvailableCommandsUpdate,
    ClientCapabilities, ContentBlock, EmbeddedResourceResource, Implementation, InitializeResponse,
    LoadSessionResponse, McpCapabilities, McpServer, NewSessionResponse, PromptCapabilities,
    PromptResponse, SessionNotification, SessionUpdate, SetSessionConfigOptionResponse,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use base64::Engine;
use tokio::sync::mpsc;

use crate::driver::{self, Builtin, Driver, Out};
use crate::files::EditorFiles;
use crate::history;
use crate::modes::{self, MODEL_OPTION, Models};
use crate::updates::Translator;
use crate::{Incoming, Settle};
use splice_core::mcp::{ServerConfig, ServerEntry};
use splice_core::permissions::PermissionMode;
use splice_core::protocol::input::{Image, Prompt};
use splice_core::sanitize::redact::Redactor;
use splice_core::session::{
    Frontend, Input, McpScope, Op, Session, execute_turn, missing_key_hint,
};
use splice_core::settings::{RunSettings, Tier};

/// A session the client opened.
struct Open {
    session: Session,
    out: mpsc::UnboundedSender<Out>,
    driver: tokio::task::JoinHandle<()>,
    provider: splice_core::provider::ProviderConfig,
    cwd: PathBuf,
}

pub(crate) struct Agent {
    settle: Settle,
    cx: ConnectionTo<Client>,
    client: ClientCapabilities,
    sessions: HashMap<String, Open>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message)
}

fn not_found(id: &str) -> Error {
    Error::new(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("no session `{id}` on this connection (session/new or session/load opens one)"),
    )
    .data(serde_json::json!({ "sessionId": id }))
}

impl Agent {
    pub(crate) fn new(settle: Settle, cx: ConnectionTo<Client>) -> Agent {
        Agent {
            settle,
            cx,
            client: ClientCapabilities::default(),
            sessions: HashMap::new(),
        }
    }

    /// Serve the client's requests until the connection's input ends; then every session
    /// ends, its turn interrupted and its processes and servers with it.
    pub(crate) async fn serve(mut self, mut inbox: mpsc::UnboundedReceiver<Incoming>) {
        let cx = self.cx.clone();
        let closed = cx.incoming_closed();
        tokio::pin!(closed);
        loop {
            tokio::select! {
                biased;
                incoming = inbox.recv() => match incoming {
                    Some(incoming) => self.handle(incoming).await,
                    None => break,
                },
                () = &mut closed => break,
            }
        }
        self.close_all().await;
    }

    async fn close_all(&mut self) {
        for (id, open) in self.sessions.drain() {
            tracing::info!(target: "splice::acp", session = %id, "session ends");
            open.session.submit(Op::Interrupt);
            open.session.submit(Op::Shutdown);
            let _ = open.session.ended().await;
            drop(open.out);
            let _ = open.driver.await;
        }
    }

    async fn handle(&mut self, incoming: Incoming) {
        let answered = match incoming {
            Incoming::Initialize(request, responder) => {
                self.client = request.client_capabilities.clone();
                responder.respond(self.initialize())
            }
            Incoming::Authenticate(request, responder) => {
                responder.respond_with_result(self.authenticate(&request.method_id.to_string()))
            }
            Incoming::NewSession(request, responder) => {
                match self.open(&request.cwd, request.mcp_servers, None) {
                    Ok((id, response)) => {
                        let sent = responder.respond(
                            NewSessionResponse::new(id.clone())
                                .modes(response.modes)
                                .config_options(response.options),
                        );
                        self.announce_commands(&id);
                        sent
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            }
            Incoming::LoadSession(request, responder) => {
                let id = request.session_id.to_string();
                match self.open(&request.cwd, request.mcp_servers, Some(id.clone())) {
                    Ok((id, response)) => {
                        let sent = responder.respond(
                            LoadSessionResponse::new()
                                .modes(response.modes)
                                .config_options(response.options),
                        );
                        self.announce_commands(&id);
                        sent
                    }
                    Err(error) => responder.respond_with_error(error),
                }
            }
            Incoming::Prompt(request, responder) => {
                self.prompt(&request.session_id.to_string(), request.prompt, responder);
                Ok(())
            }
            Incoming::SetMode(request, responder) => {
                let id = request.session_id.to_string();
                let mode_id = request.mode_id.to_string();
                match (self.sessions.get(&id), PermissionMode::parse(&mode_id)) {
                    (None, _) => responder.respond_with_error(not_found(&id)),
                    (Some(_), None) => responder.respond_with_error(invalid(format!(
                        "unknown mode `{mode_id}` (expected {})",
                        PermissionMode::NAMES.join(", ")
                    ))),
                    (Some(open), Some(mode)) => {
                        open.session.submit(Op::SetPermissionMode(mode));
                        responder.respond(SetSessionModeResponse::new())
                    }
                }
            }
            Incoming::SetConfig(request, responder) => {
                let id = request.session_id.to_string();
                let config = request.config_id.to_string();
                let value = request.value.as_value_id().map(|v| v.to_string());
                responder.respond_with_result(self.set_config(&id, &config, value))
            }
            Incoming::Cancel(note) => {
                let id = note.session_id.to_string();
                if let Some(open) = self.sessions.get(&id) {
                    open.session.submit(Op::Interrupt);
                }
                Ok(())
            }
        };
        if let Err(error) = answered {
            tracing::warn!(target: "splice::acp", %error, "answer not sent");
        }
    }

    fn initialize(&self) -> InitializeResponse {
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true));
        let mut response =
            InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .agent_info(
                    Implementation::new("splice", env!("CARGO_PKG_VERSION"))
                        .title("Splice".to_string()),
                );
        if let Some((var, hint)) = self.missing_key() {
            response = response.auth_methods(vec![AuthMethod::Agent(
                AuthMethodAgent::new(format!("env:{var}"), format!("Set {var}")).description(hint),
            )]);
        }
        response
    }

    /// The provider's key variable and what to do, when the key is missing.
    fn missing_key(&self) -> Option<(String, String)> {
        let settings = (self.settle)(None, None).ok()?;
        let hint = missing_key_hint(&settings.provider)?;
        Some((settings.provider.kind.key_var().to_string(), hint))
    }

    fn authenticate(&self, method: &str) -> Result<AuthenticateResponse, Error> {
        match self.missing_key() {
            None => Ok(AuthenticateResponse::new()),
            Some((var, _)) if method == format!("env:{var}") => Err(Error::new(
                ErrorCode::AUTH_REQUIRED,
                format!(
                    "{var} is not set in Splice's environment: set it where the editor starts \
                     `splice acp` (Zed: agent_servers.<name>.env) and restart the agent"
                ),
            )),
            Some(_) => Err(invalid(format!("unknown authentication method `{method}`"))),
        }
    }

    /// Open a session in `cwd`: a new one, or saved session `load` with its history replayed
    /// before the answer.
    fn open(
        &mut self,
        cwd: &Path,
        servers: Vec<McpServer>,
        load: Option<String>,
    ) -> Result<(String, Opened), Error> {
        if !cwd.is_absolute() {
            return Err(invalid(format!(
                "cwd {} is not an absolute path",
                cwd.display()
            )));
        }
        if let Some((var, hint)) = self.missing_key() {
            return Err(Error::new(ErrorCode::AUTH_REQUIRED, hint)
                .data(serde_json::json!({ "variable": var })));
        }
        if let Some(id) = &load
            && self.sessions.contains_key(id)
        {
            return Err(invalid(format!("session `{id}` is already open")));
        }
        let mut settings =
            (self.settle)(Some(cwd), load.clone()).map_err(|failure| invalid(failure.0))?;
        let redactor = Redactor::from_env();
        let window = splice_core::session::context_window(&settings);
        let mut translator = Translator::new(&settings.cwd, redactor.clone(), window);
        if let Some(id) = &load {
            let records = history::read(&settings.layout, id, &settings.cwd)
                .map_err(|e| Error::new(ErrorCode::RESOURCE_NOT_FOUND, e.to_string()))?;
            let loaded = history::replay(records, &mut translator);
            settings.conversation = loaded.conversation;
            for update in loaded.updates {
                self.notify(id, update);
            }
        }
        let id = settings.session_id.clone();
        let scope =
            McpScope::session_from_env(&settings.cwd).map_err(|e| invalid(e.to_string()))?;
        let log = splice_core::session::log::SessionLog::open(
            &settings.layout,
            &id,
            &settings.cwd,
            redactor.clone(),
        )
        .and_then(|log| {
            splice_core::session::log::SessionWriter::spawn(log).map_err(|e| {
                splice_core::session::log::SessionError::Io {
                    path: id.clone(),
                    message: e.to_string(),
                }
            })
        });
        let log = match log {
            Ok(log) => Some(log),
            Err(error) => {
                tracing::warn!(target: "splice::acp", %error, "session not saved");
                None
            }
        };
        let (out, inbox, tap) = driver::channel();
        let frontend = Frontend {
            sinks: vec![tap.clone()],
            reports: vec![tap],
            asks: true,
            turn: execute_turn(),
            mcp: scope,
        };
        let files = EditorFiles::offered(&self.cx, &id, &self.client.fs)
            .map(|f| Arc::new(f) as Arc<dyn splice_core::bus::ClientFiles>);
        let mode = settings.policy.mode;
        let models = Models {
            provider: settings.provider.clone(),
            pricing: settings.pricing.clone(),
        };
        let opened = Opened {
            modes: modes::modes(mode),
            options: models.options(),
        };
        let (start, unapproved) = mcp_servers(&settings, servers);
        let provider = settings.provider.clone();
        let cwd = settings.cwd.clone();
        let session = Session::spawn_with_files(settings, frontend, files);
        if !start.is_empty() || !unapproved.is_empty() {
            session.submit(Op::StartMcp { start, unapproved });
        }
        let driver = Driver {
            cx: self.cx.clone(),
            session_id: id.clone(),
            handle: session.handle(),
            translator,
            redactor,
            log,
            models,
            turns: Default::default(),
            commands: Default::default(),
            rechunkers: HashMap::new(),
            last_error: None,
            asked: HashMap::new(),
        };
        let driver = tokio::spawn(driver.serve(inbox));
        self.sessions.insert(
            id.clone(),
            Open {
                session,
                out,
                driver,
                provider,
                cwd,
            },
        );
        Ok((id, opened))
    }

    fn notify(&self, id: &str, update: SessionUpdate) {
        if let Err(error) = self
            .cx
            .send_notification(SessionNotification::new(id.to_string(), update))
        {
            tracing::warn!(target: "splice::acp", %error, "session update not sent");
        }
    }

    /// The slash commands of the session's project (and the user's), after it opened.
    fn announce_commands(&self, id: &str) {
        if let Some(open) = self.sessions.get(id) {
            self.notify(id, commands_update(&open.cwd));
        }
    }

    fn prompt(
        &mut self,
        id: &str,
        blocks: Vec<ContentBlock>,
        responder: Responder<PromptResponse>,
    ) {
        let Some(open) = self.sessions.get(id) else {
            let _ = responder.respond_with_error(not_found(id));
            return;
        };
        let prompt = match prompt_of(blocks) {
            Ok(prompt) => prompt,
            Err(error) => {
                let _ = responder.respond_with_error(error);
                return;
            }
        };
        if let Some(command) = builtin(&prompt.text) {
            match command {
                Ok((command, op)) => {
                    let _ = open.out.send(Out::Command { responder, command });
                    open.session.submit(op);
                }
                Err(message) => {
                    let _ = responder.respond_with_error(invalid(message));
                }
            }
            return;
        }
        let _ = open.out.send(Out::Prompt {
            responder,
            text: prompt.text.clone(),
        });
        open.session.submit(Op::UserTurn(Input::Prompt(prompt)));
    }

    fn set_config(
        &mut self,
        id: &str,
        config: &str,
        value: Option<String>,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let open = self.sessions.get_mut(id).ok_or_else(|| not_found(id))?;
        if config != MODEL_OPTION {
            return Err(invalid(format!(
                "unknown session option `{config}` (expected `{MODEL_OPTION}`)"
            )));
        }
        let value = value.ok_or_else(|| invalid("the model option takes a value id"))?;
        // Checked here, so a model the session cannot use is refused in the answer.
        let provider = splice_core::session::resolve_model_from_env(&open.provider, &value)
            .map_err(|e| invalid(e.to_string()))?;
        open.provider = provider.clone();
        open.session.submit(Op::SetModel(value));
        let models = Models {
            provider,
            pricing: splice_core::provider::pricing::PriceTable::builtin(),
        };
        Ok(SetSessionConfigOptionResponse::new(models.options()))
    }
}

/// What a new or loaded session offers.
struct Opened {
    modes: agent_client_protocol::v1::schema::SessionModeState,
    options: Vec<agent_client_protocol::v1::schema::SessionConfigOption>,
}

/// The servers to start: the user's and the approved project servers (as the terminal UI
/// starts them), and those the client passed (stdio and HTTP, started like configured ones);
/// project servers not approved are recorded, never started.
fn mcp_servers(
    settings: &RunSettings,
    passed: Vec<McpServer>,
) -> (Vec<ServerEntry>, Vec<ServerEntry>) {
    let plan = splice_core::session::mcp_plan::plan(settings);
    let mut start = plan.start;
    let mut unapproved = plan.ask;
    // `--trust-project-mcp` starts the project's servers unasked, as in the terminal UI.
    if settings.mcp.trust_project {
        start.append(&mut unapproved);
    }
    for server in passed {
        let entry = match server {
            McpServer::Stdio(stdio) => ServerEntry {
                name: stdio.name,
                config: ServerConfig::Stdio {
                    command: stdio.command.display().to_string(),
                    args: stdio.args,
                    env: stdio.env.into_iter().map(|v| (v.name, v.value)).collect(),
                    env_passthrough: Vec::new(),
                },
                source: splice_core::mcp::Source::User,
                // The editor's servers are the person's own configuration, as the user's are.
                pins: Vec::new(),
            },
            McpServer::Http(http) => ServerEntry {
                name: http.name,
                config: ServerConfig::Http {
                    url: http.url,
                    headers: http
                        .headers
                        .into_iter()
                        .map(|h| (h.name, h.value))
                        .collect(),
                },
                source: splice_core::mcp::Source::User,
                // The editor's servers are the person's own configuration, as the user's are.
                pins: Vec::new(),
            },
            _ => continue,
        };
        if !splice_core::mcp::valid_name(&entry.name) {
            tracing::warn!(target: "splice::acp", name = %entry.name, "MCP server name refused");
            continue;
        }
        // The client's server takes the place of a configured one of the same name.
        start.retain(|s| s.name != entry.name);
        start.push(entry);
    }
    (start, unapproved)
}

/// The request's text and images: embedded files as context, links as mentions.
fn prompt_of(blocks: Vec<ContentBlock>) -> Result<Prompt, Error> {
    let mut text = String::new();
    let mut context = String::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => text.push_str(&t.text),
            ContentBlock::Image(image) => {
                if base64::engine::general_purpose::STANDARD
                    .decode(image.data.as_bytes())
                    .is_err()
                {
                    return Err(invalid("an image's data is not valid base64"));
                }
                images.push(Image {
                    media_type: image.mime_type,
                    data: image.data,
                });
            }
            ContentBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(file) => {
                    context.push_str(&format!(
                        "\n<context uri=\"{}\">\n{}\n</context>\n",
                        file.uri, file.text
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    context.push_str(&format!("\n(attached binary resource: {})\n", blob.uri));
                }
                _ => {}
            },
            ContentBlock::ResourceLink(link) => text.push_str(&format!("@{}", link.uri)),
            _ => {
                return Err(invalid(
                    "this agent takes text, images and resources, not audio",
                ));
            }
        }
    }
    if text.trim().is_empty() && context.is_empty() && images.is_empty() {
        return Err(invalid("the prompt is empty"));
    }
    if !context.is_empty() {
        text.push_str(&context);
    }
    Ok(Prompt { text, images })
}

/// A built-in command (`/compact`, `/clear`, `/model NAME`, `/tier NAME`) and its operation;
/// `None` for anything else (a custom command is the session's to expand).
fn builtin(text: &str) -> Option<Result<(Builtin, Op), String>> {
    let rest = text.trim().strip_prefix('/')?;
    let (name, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let argument = argument.trim();
    Some(match name {
        "compact" => Ok((Builtin::Compact, Op::Compact)),
        "clear" => Ok((Builtin::Clear, Op::Clear)),
        "model" if argument.is_empty() => Err("/model takes a model: /model NAME".into()),
        "model" => Ok((Builtin::Model, Op::SetModel(argument.to_string()))),
        "tier" => match Tier::parse(argument) {
            Some(tier) => Ok((Builtin::Tier, Op::SetTier(tier))),
            None => Err(format!("/tier takes one of {}", Tier::NAMES.join(", "))),
        },
        _ => return None,
    })
}

/// The built-in and custom slash commands as an update.
fn commands_update(root: &Path) -> SessionUpdate {
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(modes::commands(root)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ImageContent, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn a_prompt_takes_text_images_and_resources() {
        let prompt = prompt_of(vec![
            ContentBlock::Text(TextContent::new("explain ")),
            ContentBlock::ResourceLink(ResourceLink::new("lib.rs", "file:///w/lib.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/main.rs",
                )),
            )),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
        ])
        .expect("a prompt");
        assert!(prompt.text.starts_with("explain @file:///w/lib.rs"));
        assert!(
            prompt
                .text
                .contains("<context uri=\"file:///w/main.rs\">\nfn main() {}\n</context>")
        );
        assert_eq!(prompt.images.len(), 1);
        assert_eq!(prompt.images[0].media_type, "image/png");
    }

    #[test]
    fn a_bad_prompt_is_refused_with_the_reason() {
        let bad_image = prompt_of(vec![ContentBlock::Image(ImageContent::new(
            "not base64!",
            "image/png",
        ))]);
        let error = bad_image.expect_err("refused");
        assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
        assert!(error.message.contains("base64"), "{}", error.message);
        let empty = prompt_of(vec![ContentBlock::Text(TextContent::new("  "))]);
        assert!(empty.err().is_some_and(|e| e.message.contains("empty")));
    }

    #[test]
    fn built_in_commands_become_operations() {
        assert!(matches!(
            builtin("/compact"),
            Some(Ok((Builtin::Compact, Op::Compact)))
        ));
        assert!(matches!(
            builtin(" /model  openai/mini "),
            Some(Ok((Builtin::Model, Op::SetModel(name)))) if name == "openai/mini"
        ));
        assert!(matches!(
            builtin("/tier full"),
            Some(Ok((Builtin::Tier, Op::SetTier(Tier::Full))))
        ));
        assert!(matches!(builtin("/tier huge"), Some(Err(e)) if e.contains("auto, light")));
        assert!(matches!(builtin("/model"), Some(Err(_))));
        // A custom command, or no command at all, is the session's.
        assert!(builtin("/review a.txt").is_none());
        assert!(builtin("fix /compact in the docs").is_none());
    }
}
