//! Model providers over real HTTP with streaming: OpenAI Chat Completions (and every server that
//! speaks it) and Anthropic Messages. Wire formats live in their own modules; this one holds the
//! provider-neutral conversation types, errors, and the retry policy.

pub(crate) mod anthropic;
mod log;
pub(crate) mod openai;
pub mod pricing;
mod sse;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use sse::SseReader;
use thiserror::Error;

use splice_protocol::ErrorCode;
use splice_protocol::input::Image;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    OpenAi,
    Anthropic,
    /// Google Gemini through its OpenAI-compatible endpoint (same wire format as `OpenAi`).
    Gemini,
}

impl ProviderKind {
    pub fn parse(name: &str) -> Option<ProviderKind> {
        match name {
            "openai" => Some(ProviderKind::OpenAi),
            "anthropic" => Some(ProviderKind::Anthropic),
            "gemini" => Some(ProviderKind::Gemini),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
        }
    }

    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "gpt-4.1",
            ProviderKind::Anthropic => "claude-sonnet-4-5",
            ProviderKind::Gemini => "gemini-2.5-flash",
        }
    }

    /// Whether this provider's key is set in the environment.
    pub fn has_key(self) -> bool {
        env_value(self.key_var()).is_some()
    }

    pub fn key_var(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            ProviderKind::Gemini => "GEMINI_API_KEY",
        }
    }

    fn base_var(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_BASE_URL",
            ProviderKind::Anthropic => "ANTHROPIC_BASE_URL",
            ProviderKind::Gemini => "GEMINI_BASE_URL",
        }
    }

    fn default_base(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "https://api.openai.com",
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta/openai",
        }
    }
}

/// An environment variable's value; unset, empty and blank all count as not set (the rule of
/// the core's `config::env_value`, which this crate cannot reach).
fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Short names a user may type for `--model`, the provider each belongs to, and the API model
/// each one sends.
const MODEL_ALIASES: [(&str, ProviderKind, &str); 6] = [
    ("sonnet", ProviderKind::Anthropic, "claude-sonnet-4-5"),
    ("opus", ProviderKind::Anthropic, "claude-opus-4-1"),
    ("haiku", ProviderKind::Anthropic, "claude-haiku-4-5"),
    ("gpt", ProviderKind::OpenAi, "gpt-4.1"),
    ("mini", ProviderKind::OpenAi, "gpt-4.1-mini"),
    ("o", ProviderKind::OpenAi, "o4-mini"),
];

/// The provider an alias belongs to; `None` for a name that is not an alias.
pub fn alias_owner(model: &str) -> Option<ProviderKind> {
    MODEL_ALIASES
        .iter()
        .find(|(alias, _, _)| *alias == model)
        .map(|(_, owner, _)| *owner)
}

/// The API model `model` sends on `kind`: an alias of `kind` is expanded, any other name is
/// sent as typed, and an alias of another provider is refused (sending `claude-sonnet-4-5` to
/// an OpenAI endpoint only fails later, and less clearly).
pub fn api_model_for(kind: ProviderKind, model: &str) -> Result<String, InvalidSetting> {
    match MODEL_ALIASES.iter().find(|(alias, _, _)| *alias == model) {
        None => Ok(model.to_string()),
        Some((_, owner, api)) if *owner == kind => Ok((*api).to_string()),
        Some((_, owner, api)) => Err(InvalidSetting(format!(
            "the model alias `{model}` ({api}) belongs to {}, not {}: use --provider {} or a {} model",
            owner.name(),
            kind.name(),
            owner.name(),
            kind.name(),
        ))),
    }
}

/// Everything needed to talk to one provider, resolved before the run starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Base URL without a trailing `/v1` (Gemini's: as given, without a trailing `/`).
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    pub api_model: String,
    pub max_retries: u32,
    pub retry_base: Duration,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
}

/// A provider setting that cannot be used as given (a usage error, exit 2).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct InvalidSetting(pub String);

/// The most retries `SPLICE_MAX_RETRIES` may ask for.
const MAX_RETRIES_LIMIT: u32 = 100;

/// A whole number from the environment within `range`, else `default` when unset; anything
/// else is refused rather than quietly replaced by the default.
fn env_number(
    name: &str,
    range: std::ops::RangeInclusive<u64>,
    default: u64,
) -> Result<u64, InvalidSetting> {
    let Some(text) = env_value(name) else {
        return Ok(default);
    };
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            InvalidSetting(format!(
                "{name}={text} is not a whole number from {} to {}",
                range.start(),
                range.end()
            ))
        })
}

/// A base URL must be an absolute http(s) URL.
fn check_base_url(var: &str, base: &str) -> Result<(), InvalidSetting> {
    match reqwest::Url::parse(base.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.has_host() => Ok(()),
        _ => Err(InvalidSetting(format!(
            "{var}={base} is not an http(s) URL (for example http://localhost:11434)"
        ))),
    }
}

impl ProviderConfig {
    /// Resolve a provider from its name, the chosen model and the environment.
    pub fn from_env(
        kind: ProviderKind,
        model: Option<&str>,
    ) -> Result<ProviderConfig, InvalidSetting> {
        let model = match model {
            Some(model) if model.trim().is_empty() => {
                return Err(InvalidSetting("the model name is empty".into()));
            }
            Some(model) => model.trim().to_string(),
            None => kind.default_model().to_string(),
        };
        let base = env_value(kind.base_var()).unwrap_or_else(|| kind.default_base().to_string());
        check_base_url(kind.base_var(), &base)?;
        let millis = |name: &str, min: u64, default: u64| {
            env_number(name, min..=u64::from(u32::MAX), default).map(Duration::from_millis)
        };
        let max_retries = env_number("SPLICE_MAX_RETRIES", 0..=u64::from(MAX_RETRIES_LIMIT), 4)?;
        Ok(ProviderConfig {
            kind,
            base_url: match kind {
                // Gemini's base URL carries its own version segment (`/v1beta/openai`, or a
                // gateway's `/v1`): it is used as given.
                ProviderKind::Gemini => base.trim().trim_end_matches('/').to_string(),
                _ => normalize_base_url(&base),
            },
            api_key: env_value(kind.key_var()),
            api_model: api_model_for(kind, &model)?,
            model,
            max_retries: u32::try_from(max_retries).unwrap_or(MAX_RETRIES_LIMIT),
            retry_base: millis("SPLICE_RETRY_BASE_MS", 0, 500)?,
            request_timeout: millis("SPLICE_REQUEST_TIMEOUT_MS", 1, 120_000)?,
            idle_timeout: millis("SPLICE_STREAM_IDLE_TIMEOUT_MS", 1, 120_000)?,
        })
    }

    /// Whether the base URL is the vendor's own service (which always needs a key).
    pub fn is_vendor_host(&self) -> bool {
        self.base_url == self.kind.default_base()
    }

    fn endpoint(&self, path: &str) -> String {
        match self.kind {
            // Gemini's compatible endpoint carries its own version segment in the base URL.
            ProviderKind::Gemini => format!("{}/{path}", self.base_url),
            _ => format!("{}/v1/{path}", self.base_url),
        }
    }
}

/// Accept both `http://host:port` and `http://host:port/v1`.
pub fn normalize_base_url(base: &str) -> String {
    let trimmed = base.trim().trim_end_matches('/');
    trimmed
        .strip_suffix("/v1")
        .unwrap_or(trimmed)
        .trim_end_matches('/')
        .to_string()
}

#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

// Serialisable so that a saved session keeps the conversation exactly (see `conversation`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    /// Raw JSON arguments as the model produced them.
    pub arguments: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallRequest>,
    },
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
        /// Images the tool returned (an MCP tool's image content), for providers that take
        /// them; see each wire format for where they go.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
}

pub struct ModelRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    pub max_tokens: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_input_tokens: Option<u64>,
    pub cache_write_tokens: Option<u64>,
    pub reasoning_tokens: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCallRequest>,
    pub usage: Option<TokenUsage>,
    pub stop_reason: Option<String>,
}

/// What a provider reports while a request is under way.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    /// A tool call begins; `index` is its place in the response's `tool_calls`.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// More arguments of the call at `index` (ids may repeat, so calls go by place).
    ToolCallDelta {
        index: usize,
        delta: String,
    },
    /// A retryable failure; the request is sent again after `delay`.
    Retry {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
}

#[derive(Debug, Error)]
pub enum ProviderError {
    #[error("no API key: set {var}")]
    MissingKey { var: &'static str },
    #[error("authentication refused by {provider} (HTTP {status}): {message}")]
    Auth {
        provider: &'static str,
        status: u16,
        message: String,
    },
    #[error("{provider} returned HTTP {status}: {message}")]
    Http {
        provider: &'static str,
        status: u16,
        message: String,
    },
    #[error("could not reach {provider}: {message}")]
    Network {
        provider: &'static str,
        message: String,
    },
    #[error("{provider} stream failed: {message}")]
    Stream {
        provider: &'static str,
        message: String,
    },
    /// A request body that could not be written as JSON (never expected: every key is text).
    #[error("the request to {provider} could not be written: {message}")]
    Encode {
        provider: &'static str,
        message: String,
    },
    #[error("{provider} did not answer within {}", shown_duration(*.waited))]
    Timeout {
        provider: &'static str,
        waited: Duration,
    },
}

impl ProviderError {
    /// The `error.code` this failure is reported with.
    pub fn code(&self) -> ErrorCode {
        match self {
            ProviderError::MissingKey { .. } | ProviderError::Auth { .. } => ErrorCode::AuthError,
            _ => ErrorCode::ProviderError,
        }
    }
}

/// A ready-to-use provider client.
#[derive(Debug, Clone)]
pub struct Provider {
    pub config: ProviderConfig,
    http: reqwest::Client,
}

impl Provider {
    pub fn new(config: ProviderConfig) -> Result<Provider, ProviderError> {
        let mut builder = splice_http::client_builder().connect_timeout(Duration::from_secs(15));
        // A plain-http endpoint (a local server) needs no TLS: without this the client reads the
        // whole system certificate store on every run. With no roots at all, an https
        // connection (a redirect) fails verification rather than going unchecked.
        if config
            .base_url
            .trim()
            .to_ascii_lowercase()
            .starts_with("http://")
        {
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|e| ProviderError::Network {
            provider: config.kind.name(),
            message: e.to_string(),
        })?;
        Ok(Provider { config, http })
    }

    /// Fail early, before any request, when a required key is missing.
    pub fn check_credentials(&self) -> Result<(), ProviderError> {
        if self.config.api_key.is_none() && self.config.is_vendor_host() {
            return Err(ProviderError::MissingKey {
                var: self.config.kind.key_var(),
            });
        }
        Ok(())
    }

    /// Send one streamed request, retrying 429/5xx and connection failures with backoff.
    pub async fn complete(
        &self,
        request: &ModelRequest<'_>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<ModelResponse, ProviderError> {
        self.check_credentials()?;
        let provider = self.config.kind.name();
        let (url, body) = match self.config.kind {
            ProviderKind::OpenAi | ProviderKind::Gemini => (
                self.config.endpoint("chat/completions"),
                serde_json::to_string(&openai::request_body(&self.config.api_model, request)),
            ),
            ProviderKind::Anthropic => (
                self.config.endpoint("messages"),
                serde_json::to_string(&anthropic::request_body(&self.config.api_model, request)),
            ),
        };
        let body = body.map_err(|e| ProviderError::Encode {
            provider,
            message: e.to_string(),
        })?;
        let mut attempt = 0;
        loop {
            let started = std::time::Instant::now();
            let outcome = self.send(&url, &body).await;
            let status = outcome.as_ref().map(reqwest::Response::status);
            log::request(
                provider,
                &self.config.api_model,
                &url,
                attempt,
                started,
                status,
            );
            let retry_reason = match outcome {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        let reader = self.reader(response).await?;
                        return match self.config.kind {
                            ProviderKind::OpenAi | ProviderKind::Gemini => {
                                openai::read_stream(reader, on_event).await
                            }
                            ProviderKind::Anthropic => {
                                anthropic::read_stream(reader, on_event).await
                            }
                        };
                    }
                    let retry_after = retry_after(&response);
                    let message = error_message(response).await;
                    if !is_retryable(status) || attempt >= self.config.max_retries {
                        return Err(status_error(provider, status, message));
                    }
                    (format!("HTTP {}: {message}", status.as_u16()), retry_after)
                }
                Err(error) => {
                    if attempt >= self.config.max_retries {
                        return Err(error);
                    }
                    (error.to_string(), None)
                }
            };
            attempt += 1;
            let (reason, retry_after) = retry_reason;
            let delay = retry_after.unwrap_or_else(|| backoff(self.config.retry_base, attempt));
            on_event(StreamEvent::Retry {
                attempt,
                delay,
                reason,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// The events of a successful response. Some gateways answer a streaming request with the
    /// whole response as one JSON body; that body is read (within the idle timeout and a size
    /// cap) and restated as the stream it stands for.
    async fn reader(&self, response: reqwest::Response) -> Result<SseReader, ProviderError> {
        let provider = self.config.kind.name();
        let idle = self.config.idle_timeout;
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if !is_json {
            return Ok(SseReader::new(response, provider, idle));
        }
        let failed = |message: String| ProviderError::Stream { provider, message };
        let body = read_capped(response, idle, MAX_WHOLE_BODY)
            .await
            .map_err(|message| match message {
                BodyError::Timeout => ProviderError::Timeout {
                    provider,
                    waited: idle,
                },
                BodyError::Failed(message) => failed(message),
            })?;
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            failed(format!(
                "the response is neither a stream nor valid JSON ({e}): {}",
                String::from_utf8_lossy(&body[..body.len().min(120)])
            ))
        })?;
        let events = match self.config.kind {
            ProviderKind::OpenAi | ProviderKind::Gemini => openai::as_stream(&value),
            ProviderKind::Anthropic => anthropic::as_stream(&value),
        };
        Ok(SseReader::replay(events, provider, idle))
    }

    async fn send(&self, url: &str, body: &str) -> Result<reqwest::Response, ProviderError> {
        let provider = self.config.kind.name();
        let mut builder = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_owned());
        builder = match self.config.kind {
            ProviderKind::OpenAi | ProviderKind::Gemini => match &self.config.api_key {
                Some(key) => builder.bearer_auth(key),
                None => builder,
            },
            ProviderKind::Anthropic => {
                let builder = builder.header("anthropic-version", "2023-06-01");
                match &self.config.api_key {
                    Some(key) => builder.header("x-api-key", key),
                    None => builder,
                }
            }
        };
        let timeout = self.config.request_timeout;
        match tokio::time::timeout(timeout, builder.send()).await {
            Err(_) => Err(ProviderError::Timeout {
                provider,
                waited: timeout,
            }),
            Ok(Err(e)) => Err(ProviderError::Network {
                provider,
                message: splice_http::describe(e),
            }),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// The most of a whole-body answer read into memory.
const MAX_WHOLE_BODY: usize = 32 * 1024 * 1024;

enum BodyError {
    Timeout,
    Failed(String),
}

/// A response body, at most `cap` bytes, with at most `idle` between pieces.
async fn read_capped(
    mut response: reqwest::Response,
    idle: Duration,
    cap: usize,
) -> Result<Vec<u8>, BodyError> {
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(idle, response.chunk()).await {
            Err(_) => return Err(BodyError::Timeout),
            Ok(Err(e)) => return Err(BodyError::Failed(format!("connection lost: {e}"))),
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(piece))) => {
                if body.len() + piece.len() > cap {
                    return Err(BodyError::Failed(format!(
                        "the response body is larger than {} MiB",
                        cap / (1024 * 1024)
                    )));
                }
                body.extend_from_slice(&piece);
            }
        }
    }
}

fn is_retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
}

fn status_error(provider: &'static str, status: StatusCode, message: String) -> ProviderError {
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        ProviderError::Auth {
            provider,
            status: status.as_u16(),
            message,
        }
    } else {
        ProviderError::Http {
            provider,
            status: status.as_u16(),
            message,
        }
    }
}

/// "2 s" for whole seconds, else "300 ms".
fn shown_duration(waited: Duration) -> String {
    if waited.subsec_millis() == 0 && waited.as_secs() > 0 {
        format!("{} s", waited.as_secs())
    } else {
        format!("{} ms", waited.as_millis())
    }
}

/// `Retry-After` in seconds (fractions allowed), capped so a hostile value cannot stall a run.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let value = response.headers().get("retry-after")?.to_str().ok()?;
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(120.0)))
}

fn backoff(base: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
    (base.saturating_mul(factor)).min(Duration::from_secs(30))
}

/// The provider's own error message from a JSON error body, else the body's first 500 bytes.
async fn error_message(response: reqwest::Response) -> String {
    let text = response.text().await.unwrap_or_default();
    if let Ok(value) = serde_json::from_str::<Value>(&text) {
        let message = value
            .pointer("/error/message")
            .or_else(|| value.get("message"))
            .or_else(|| value.get("error"))
            .and_then(Value::as_str);
        if let Some(message) = message {
            return message.to_string();
        }
    }
    let mut text = text.trim().to_string();
    if text.len() > 500 {
        let mut end = 500;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_url_accepts_with_and_without_v1() {
        assert_eq!(normalize_base_url("http://h:1/v1"), "http://h:1");
        assert_eq!(normalize_base_url("http://h:1/v1/"), "http://h:1");
        assert_eq!(normalize_base_url("http://h:1"), "http://h:1");
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let base = Duration::from_millis(100);
        assert_eq!(backoff(base, 1), Duration::from_millis(100));
        assert_eq!(backoff(base, 3), Duration::from_millis(400));
        assert_eq!(backoff(base, 30), Duration::from_secs(30));
    }

    #[test]
    fn aliases_map_to_api_models_of_their_own_provider_only() {
        let api = |kind, model| api_model_for(kind, model).map_err(|e| e.to_string());
        assert_eq!(
            api(ProviderKind::Anthropic, "sonnet").as_deref(),
            Ok("claude-sonnet-4-5")
        );
        assert_eq!(
            api(ProviderKind::OpenAi, "mini").as_deref(),
            Ok("gpt-4.1-mini")
        );
        assert_eq!(
            api(ProviderKind::OpenAi, "my-local-model").as_deref(),
            Ok("my-local-model")
        );
        for (kind, alias) in [
            (ProviderKind::OpenAi, "sonnet"),
            (ProviderKind::Anthropic, "mini"),
            (ProviderKind::Gemini, "gpt"),
        ] {
            let refused = api(kind, alias).err().unwrap_or_default();
            assert!(refused.contains("belongs to"), "{alias}: {refused}");
        }
    }
}
