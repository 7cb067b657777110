//! The HTTP calls to a registry and its error JSON turned into typed errors. The token goes
//! only into the Authorization header; redirects are not followed (a redirect must not carry
//! it elsewhere), and no message ever includes it.

use std::time::Duration;

use serde_json::Value;

use super::RegistryError;
use super::credentials::Token;
use crate::packages::Issue;

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
        format!("{}/api/v1/{path}", self.url)
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
            message: e.without_url().to_string(),
        };
        let mut response = request.send().await.map_err(unreachable)?;
        let status = response.status().as_u16();
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

    /// GET a JSON document; any status but 200 is an error.
    pub async fn get_json(&self, path: &str) -> Result<Value, RegistryError> {
        let answer = self.send(self.http.get(self.api(path)), MAX_JSON).await?;
        self.json_ok(answer)
    }

    /// POST a JSON body (or none); the raw answer, for callers that read error bodies.
    pub async fn post(&self, path: &str, body: Option<&Value>) -> Result<Answer, RegistryError> {
        let mut request = self.http.post(self.api(path));
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        self.send(request, MAX_JSON).await
    }

    pub async fn post_json(
        &self,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, RegistryError> {
        let answer = self.post(path, body).await?;
        self.json_ok(answer)
    }

    /// DELETE; the raw answer.
    pub async fn delete(&self, path: &str) -> Result<Answer, RegistryError> {
        self.send(self.http.delete(self.api(path)), MAX_JSON).await
    }

    /// PUT an archive; 201 (or 200) with a JSON document is success.
    pub async fn put_archive(&self, path: &str, bytes: Vec<u8>) -> Result<Value, RegistryError> {
        let request = self
            .http
            .put(self.api(path))
            .header("content-type", "application/gzip")
            .header("x-splice-client-version", env!("CARGO_PKG_VERSION"))
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

    pub fn json_ok(&self, answer: Answer) -> Result<Value, RegistryError> {
        if !(200..300).contains(&answer.status) {
            return Err(self.error(&answer));
        }
        serde_json::from_slice(&answer.body)
            .map_err(|e| self.bad(format!("not JSON (status {}): {e}", answer.status)))
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

/// `{"error":{"code","message","issues"?}}`.
#[derive(Debug, PartialEq)]
pub struct ApiError {
    pub code: String,
    pub message: String,
    pub issues: Vec<Issue>,
}

pub fn parse_error(body: &[u8]) -> Option<ApiError> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let error = value.get("error")?;
    let text = |key: &str| error.get(key).and_then(Value::as_str).map(clean);
    let issues = error
        .get("issues")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|i| {
                    let field = |k: &str| i.get(k).and_then(Value::as_str).map(clean);
                    Issue::new(
                        field("path").unwrap_or_default(),
                        field("message").unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Some(ApiError {
        code: text("code")?,
        message: text("message").unwrap_or_default(),
        issues,
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
                code: "invalid_package".into(),
                message: "bad[2J".into(),
                issues: vec![Issue::new("manifest.json", "no")],
            })
        );
        assert_eq!(parse_error(b"<html>"), None);
        assert_eq!(parse_error(br#"{"error":"slow_down"}"#), None);
    }
}
