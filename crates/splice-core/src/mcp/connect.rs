//! Connecting to one configured server: start it (stdio) or reach it (streamable HTTP), then
//! `initialize` and the first `tools/list` (every page), all within the startup timeout.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

use thiserror::Error;

use super::client::Client;
use super::config::{ServerConfig, ServerEntry};
use super::hub::HubOptions;
use super::stdio::{self, ServerProcess};
use crate::sanitize::terminal::strip_controls;

/// Why a server did not start or did not answer in time; the text is the reason its
/// `mcp_server_failed` warning gives.
#[derive(Debug, Error)]
pub enum ConnectError {
    #[error("cannot start `{command}`: {error}")]
    Start {
        command: String,
        error: std::io::Error,
    },
    #[error("the server's process has no pipes")]
    NoPipes,
    #[error("initialize failed: {0}")]
    Initialize(String),
    #[error("tools/list failed: {0}")]
    ListTools(String),
    #[error("{}", not_in_time(*.0))]
    NotInTime(Duration),
    /// A stdio server that did not start in time: the variables it got (names only).
    #[error("{}; {}", not_in_time(*.timeout), what_it_got(.given))]
    StdioNotInTime {
        timeout: Duration,
        given: Vec<String>,
    },
    #[error("invalid header name `{0}`")]
    HeaderName(String),
    #[error("the value of header `{0}` is not valid")]
    HeaderValue(String),
    #[error("cannot make an HTTP client: {0}")]
    HttpClient(reqwest::Error),
    /// An HTTP server's failure as [`http_error`] words it.
    #[error("{0}")]
    Http(String),
    /// A stdio server's failure, then what it last wrote to stderr.
    #[error("{why}; its stderr ends: {tail}")]
    WithStderr {
        why: Box<ConnectError>,
        tail: String,
    },
}

pub struct Connection {
    pub service: RunningService<RoleClient, Client>,
    /// A stdio server's process; `None` for HTTP.
    pub process: Option<ServerProcess>,
    pub client: Client,
    pub tools: Vec<rmcp::model::Tool>,
}

pub async fn connect(
    entry: &ServerEntry,
    options: &HubOptions,
) -> Result<Connection, ConnectError> {
    let client = Client::default();
    let timeout = options.startup_timeout;
    match &entry.config {
        ServerConfig::Stdio {
            command,
            args,
            env,
            env_passthrough,
        } => {
            let child_env = stdio::child_env(&options.base_env, env, env_passthrough);
            let given = stdio::names(&child_env);
            let started = stdio::spawn(command, args, child_env, &options.cwd)?;
            let mut process = started.process;
            let handshake = handshake(client.clone(), (started.stdout, started.stdin));
            // Bound first, so the handshake (and the pipes it owns) is gone before `end`.
            let outcome = tokio::time::timeout(timeout, handshake).await;
            match outcome {
                Ok(Ok((service, tools))) => Ok(Connection {
                    service,
                    process: Some(process),
                    client,
                    tools,
                }),
                failed => {
                    // The pipes went with the handshake: stdin is closed, so end it.
                    process.end().await;
                    let why = match failed {
                        Ok(Err(why)) => why,
                        _ => ConnectError::StdioNotInTime { timeout, given },
                    };
                    Err(match process.stderr().quote() {
                        Some(tail) => ConnectError::WithStderr {
                            why: Box::new(why),
                            tail,
                        },
                        None => why,
                    })
                }
            }
        }
        ServerConfig::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let header_name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| ConnectError::HeaderName(strip_controls(name).into_owned()))?;
                // The value is a secret as often as not: never quoted.
                let header_value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|_| ConnectError::HeaderValue(header_name.to_string()))?;
                custom.insert(header_name, header_value);
            }
            let http = crate::http::client_builder()
                .connect_timeout(timeout)
                // A redirect would carry the configured headers to wherever it points (reqwest
                // drops only `Authorization` and cookies across hosts): none is followed.
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(ConnectError::HttpClient)?;
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            config.custom_headers = custom;
            let transport = StreamableHttpClientTransport::with_client(http, config);
            match tokio::time::timeout(timeout, handshake(client.clone(), transport)).await {
                Ok(Ok((service, tools))) => Ok(Connection {
                    service,
                    process: None,
                    client,
                    tools,
                }),
                Ok(Err(why)) => Err(ConnectError::Http(http_error(
                    &why.to_string(),
                    &target(&entry.config),
                ))),
                Err(_) => Err(ConnectError::NotInTime(timeout)),
            }
        }
    }
}

async fn handshake<T, E, A>(
    client: Client,
    transport: T,
) -> Result<(RunningService<RoleClient, Client>, Vec<rmcp::model::Tool>), ConnectError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = client
        .serve(transport)
        .await
        .map_err(|e| ConnectError::Initialize(strip_controls(&e.to_string()).into_owned()))?;
    let tools = super::listing::list_bounded(service.peer())
        .await
        .map_err(|e| ConnectError::ListTools(strip_controls(&e.to_string()).into_owned()))?;
    Ok((service, tools))
}

/// An HTTP connection's error as a person reads it: every URL in it shown as the target (no
/// user info or query, which may be secrets), and rmcp's transport type names left out.
pub fn http_error(message: &str, target: &str) -> String {
    let mut text = message.to_string();
    if let (Some(start), Some(end)) = (text.find("Transport ["), text.find("] error: "))
        && start < end
    {
        text.replace_range(start..end + "] error: ".len(), "transport error: ");
    }
    text.split_inclusive(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .map(|piece| {
            let word = piece.trim_end_matches(|c: char| c.is_whitespace() || c == '(' || c == ')');
            if word.starts_with("http://") || word.starts_with("https://") {
                format!("{target}{}", &piece[word.len()..])
            } else {
                piece.to_string()
            }
        })
        .collect()
}

fn not_in_time(timeout: Duration) -> String {
    format!(
        "it did not finish starting (initialize and tools/list) within {} ms",
        timeout.as_millis()
    )
}

/// For a stdio server that did not start in time: the variables it got (names only) and how
/// to give it more; a server behind a proxy often waits on the network until the timeout.
pub fn what_it_got(names: &[String]) -> String {
    format!(
        "it got only these environment variables: {} (a server behind a proxy or a private CA \
         may need more: name variables of Splice's environment in its `envPassthrough` list in \
         `mcpServers`, or set them in its `env`)",
        names.join(", ")
    )
}

/// `why`, then what the server last wrote to stderr, if anything.
pub fn with_stderr(why: String, process: &ServerProcess) -> String {
    match process.stderr().quote() {
        Some(tail) => format!("{why}; its stderr ends: {tail}"),
        None => why,
    }
}

/// What a person sees as the server's target: the command line, or the URL without user
/// info or query (either may carry a secret). Header values are never shown.
pub fn target(config: &ServerConfig) -> String {
    match config {
        ServerConfig::Stdio { command, args, .. } => std::iter::once(command)
            .chain(args)
            .map(|word| {
                let word = strip_controls(word);
                if word.is_empty() || word.contains(char::is_whitespace) {
                    format!("'{word}'")
                } else {
                    word.into_owned()
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        ServerConfig::Http { url, .. } => {
            let url = strip_controls(url);
            let (scheme, rest) = url.split_once("://").unwrap_or(("", &url));
            let rest = rest.split(['?', '#']).next().unwrap_or("");
            let rest = match rest.split_once('/') {
                Some((authority, path)) => format!(
                    "{}/{path}",
                    authority
                        .rsplit_once('@')
                        .map_or(authority, |(_, host)| host)
                ),
                None => rest.rsplit_once('@').map_or(rest, |(_, h)| h).to_string(),
            };
            let cut = if url.contains(['?', '#']) { "?…" } else { "" };
            if scheme.is_empty() {
                format!("{rest}{cut}")
            } else {
                format!("{scheme}://{rest}{cut}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn http_errors_show_the_target_not_the_url() {
        let message = "initialize failed: Send message error Transport [rmcp::transport::worker::\
                       WorkerTransport<X<Y>>] error: Client error: error sending request for url \
                       (https://u:p@h.invalid/mcp?key=secret), when send initialize request";
        assert_eq!(
            http_error(message, "https://h.invalid/mcp?…"),
            "initialize failed: Send message error transport error: Client error: error sending \
             request for url (https://h.invalid/mcp?…), when send initialize request"
        );
    }

    #[test]
    fn targets_leave_out_secrets() {
        let http = ServerConfig::Http {
            url: "https://user:pw@example.invalid/mcp?key=secret".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer secret".into())]),
        };
        assert_eq!(target(&http), "https://example.invalid/mcp?…");
        let stdio = ServerConfig::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "a b".into()],
            env: BTreeMap::from([("TOKEN".into(), "secret".into())]),
            env_passthrough: Vec::new(),
        };
        assert_eq!(target(&stdio), "npx -y 'a b'");
    }
}
