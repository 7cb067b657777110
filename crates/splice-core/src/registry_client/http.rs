//! The HTTP calls to a registry, read into the API's types (`registry::api`), and its error
//! answers turned into typed errors. The token goes only into the Authorization header;
//! redirects are not followed (a redirect must not carry it elsewhere), and no message ever
//! includes it.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::RegistryError;
use super::credentials::Token;
use crate::packages::Issue;
use crate::registry::api::{self, ErrorBody, ErrorCode};

/// The most an archive download may be (the registry's upload limit).
pub const MAX_ARCHIVE: usize = 64 * 1024 * 1024;
/// The most a JSON answer may be.
const MAX_JSON: usize = 4 * 1024 * 1024;

pub struct Registry {
    pub url: String,
    http: reqwest::Client,
    token: Option<Token>,
}

/// A registry's answer: status and body.
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Registry {
    pub fn new(url: &str, token: Option<Token>) -> Result<Registry, RegistryError> {
        let mut builder = crate::http::client_builder()
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(300))
            .redirect(reqwest::redirect::Policy::none());
        if url.starts_with("http://") {
            // No TLS needed; with no roots an https redirect would fail, not go unchecked.
            builder = builder.tls_certs_only(Vec::new());
        }
        let http = builder.build().map_err(|e| RegistryError::Unreachable {
            registry: url.to_string(),
            message: e.to_string(),
        })?;
        Ok(Registry {
            url: url.to_string(),
            http,
            token,
        })
    }

    fn api(&self, path: &str) -> String {
        format!("{}{}/{path}", self.url, api::PREFIX)
    }

    /// Send and read the whole body, at most `limit` bytes.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        limit: usize,
    ) -> Result<Answer, RegistryError> {
        let request = match &self.token {
            Some(token) => request.bearer_auth(token.reveal()),
            None => request,
        };
        let unreachable = |e: reqwest::Error| RegistryError::Unreachable {
            registry: self.url.clone(),
            message: crate::http::describe(e),
        };
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
        let url = crate::http::log_url(response.url().as_str());
        tracing::info!(target: "splice::registry", url, status, "registry request");
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > limit {
                return Err(self.bad(format!("the answer is larger than {limit} bytes")));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, body })
    }

    fn bad(&self, message: String) -> RegistryError {
        RegistryError::BadResponse {
            registry: self.url.clone(),
            message,
        }
    }

    /// GET a JSON document; any status but a success is an error.
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, RegistryError> {
        let answer = self.send(self.http.get(self.api(path)), MAX_JSON).await?;
        self.json_ok(answer)
    }

    /// POST a JSON body; the raw answer, for callers that read error bodies.
    pub async fn post<B: Serialize>(&self, path: &str, body: &B) -> Result<Answer, RegistryError> {
        let body = serde_json::to_string(body).map_err(|e| self.bad(e.to_string()))?;
        let request = self
            .http
            .post(self.api(path))
            .header("content-type", "application/json")
            .body(body);
        self.send(request, MAX_JSON).await
    }

    /// POST without a body; the answer's JSON document.
    pub async fn post_empty<T: DeserializeOwned>(&self, path: &str) -> Result<T, RegistryError> {
        let answer = self.send(self.http.post(self.api(path)), MAX_JSON).await?;
        self.json_ok(answer)
    }

    /// DELETE; the raw answer.
    pub async fn delete(&self, path: &str) -> Result<Answer, RegistryError> {
        self.send(self.http.delete(self.api(path)), MAX_JSON).await
    }

    /// PUT an archive; 201 (or 200) with a JSON document is success.
    pub async fn put_archive<T: DeserializeOwned>(
        &self,
        path: &str,
        bytes: Vec<u8>,
    ) -> Result<T, RegistryError> {
        let request = self
            .http
            .put(self.api(path))
            .header("content-type", "application/gzip")
            .header(api::CLIENT_VERSION_HEADER, env!("CARGO_PKG_VERSION"))
            .body(bytes);
        let answer = self.send(request, MAX_JSON).await?;
        self.json_ok(answer)
    }

    /// GET an archive's bytes, at most MAX_ARCHIVE.
    pub async fn get_bytes(&self, path: &str) -> Result<Vec<u8>, RegistryError> {
        let answer = self
            .send(self.http.get(self.api(path)), MAX_ARCHIVE)
            .await?;
        if answer.status == 200 {
            Ok(answer.body)
        } else {
            Err(self.error(&answer))
        }
    }

    /// A success's JSON document as `T`.
    pub fn json_ok<T: DeserializeOwned>(&self, answer: Answer) -> Result<T, RegistryError> {
        if !(200..300).contains(&answer.status) {
            return Err(self.error(&answer));
        }
        serde_json::from_slice(&answer.body).map_err(|e| {
            let what = if e.is_data() {
                "not the API's answer"
            } else {
                "not JSON"
            };
            self.bad(format!("{what} (status {}): {e}", answer.status))
        })
    }

    /// A non-success answer as an error: 401 a refused login, 5xx the registry's trouble,
    /// anything else the registry's reason.
    pub fn error(&self, answer: &Answer) -> RegistryError {
        let parsed = parse_error(&answer.body);
        let message = parsed
            .as_ref()
            .map(|e| e.message.clone())
            .unwrap_or_else(|| format!("HTTP status {}", answer.status));
        match (answer.status, parsed) {
            (401, _) => RegistryError::Unauthenticated {
                registry: self.url.clone(),
                message,
            },
            (status, _) if status >= 500 => self.bad(format!("HTTP status {status}: {message}")),
            (status, Some(error)) => RegistryError::Refused {
                status,
                code: error.code,
                message: error.message,
                issues: error.issues,
            },
            (status, None) => self.bad(format!("HTTP status {status} without an error document")),
        }
    }
}

/// A registry's error answer (`api::ErrorBody`), its text cleaned for a terminal.
#[derive(Debug, PartialEq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub issues: Vec<Issue>,
}

pub fn parse_error(body: &[u8]) -> Option<ApiError> {
    let error = serde_json::from_slice::<ErrorBody>(body).ok()?.error;
    let code = match error.code {
        ErrorCode::Other(code) => ErrorCode::Other(clean(&code)),
        known => known,
    };
    Some(ApiError {
        code,
        message: clean(&error.message),
        issues: error
            .issues
            .iter()
            .map(|i| Issue::new(clean(&i.path), clean(&i.message)))
            .collect(),
    })
}

/// A registry's text shown to a person: control characters (terminal escapes) dropped.
pub fn clean(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_documents_parse_with_issues_and_lose_terminal_escapes() {
        let body = br#"{"error":{"code":"invalid_package","message":"bad\u001b[2J","issues":[{"path":"manifest.json","message":"no"}]}}"#;
        let parsed = parse_error(body);
        assert_eq!(
            parsed,
            Some(ApiError {
                code: ErrorCode::InvalidPackage,
                message: "bad[2J".into(),
                issues: vec![Issue::new("manifest.json", "no")],
            })
        );
        // A code this client does not know (a newer registry's) is kept, cleaned.
        let newer = parse_error(br#"{"error":{"code":"rate\u001b_limited","message":"m"}}"#);
        assert_eq!(
            newer.map(|e| e.code),
            Some(ErrorCode::Other("rate_limited".into()))
        );
        assert_eq!(parse_error(b"<html>"), None);
        assert_eq!(parse_error(br#"{"error":"slow_down"}"#), None);
    }
}
