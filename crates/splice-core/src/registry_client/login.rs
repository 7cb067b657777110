//! The device-authorization login (RFC 8628): ask for a code, let the caller show it, poll the
//! token endpoint every `interval` seconds (5 more after each `slow_down`) until a token, a
//! denial, or the code's `expires_in` runs out.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thiserror::Error;

use super::RegistryError;
use super::credentials::{self, Login, Token};
use super::http::{Answer, Registry, clean};
use crate::device_login::{DeviceLogin, DeviceLoginEvent};
use crate::registry::api::{
    DeviceCodeResponse, DeviceError, DeviceErrorCode, DeviceToken, DeviceTokenRequest,
};

/// What `device/code` answered (`device_code` itself is never shown).
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceCode {
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: u64,
    pub interval: u64,
}

/// A token endpoint answer that is not the API's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TokenAnswerError {
    #[error("token answer (status {0}) is not JSON")]
    NotJson(u16),
    #[error("token answer without `access_token`")]
    NoToken,
    #[error("token answer is not the API's: {0}")]
    Shape(String),
    #[error("token answer with status {0} and no known error")]
    UnknownError(u16),
}

/// One poll's outcome.
#[derive(Debug, PartialEq)]
pub enum Poll {
    Pending,
    SlowDown,
    Done(Login),
    Denied,
    Expired,
}

/// RFC 8628 §3.5: a poll no faster than this, whatever the registry says.
const MIN_INTERVAL: u64 = 1;
/// The longest a code is waited for, and the longest between two polls, whatever the registry
/// says (a huge `expires_in` would overflow the clock).
const MAX_EXPIRY: u64 = 3600;
const MAX_INTERVAL: u64 = 60;
/// The added wait after `slow_down`.
const SLOW_DOWN_STEP: u64 = 5;

impl From<DeviceCodeResponse> for DeviceCode {
    /// The registry's answer, its text cleaned for a terminal and its numbers capped.
    fn from(answer: DeviceCodeResponse) -> DeviceCode {
        DeviceCode {
            device_code: answer.device_code,
            user_code: clean(&answer.user_code),
            verification_uri: clean(&answer.verification_uri),
            verification_uri_complete: clean(&answer.verification_uri_complete),
            expires_in: answer.expires_in.min(MAX_EXPIRY),
            interval: answer.interval.clamp(MIN_INTERVAL, MAX_INTERVAL),
        }
    }
}

impl DeviceCode {
    /// The `device_code` JSON line (Scribiz's login shape).
    pub fn json_line(&self) -> Value {
        json!({
            "type": "device_code",
            "userCode": self.user_code,
            "verificationUri": self.verification_uri,
            "verificationUriComplete": self.verification_uri_complete,
            "expiresIn": self.expires_in,
            "interval": self.interval,
        })
    }
}

/// A token endpoint answer: 200 with a token, or a 400 RFC 8628 error.
pub fn classify(answer: &Answer) -> Result<Poll, TokenAnswerError> {
    let value: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| TokenAnswerError::NotJson(answer.status))?;
    if answer.status == 200 {
        let token: DeviceToken =
            serde_json::from_value(value).map_err(|e| TokenAnswerError::Shape(e.to_string()))?;
        if token.access_token.is_empty() {
            return Err(TokenAnswerError::NoToken);
        }
        return Ok(Poll::Done(Login {
            token: Token::new(token.access_token),
            user: clean(&token.user),
            default: false,
        }));
    }
    match serde_json::from_value::<DeviceError>(value).map(|e| e.error) {
        Ok(DeviceErrorCode::AuthorizationPending) => Ok(Poll::Pending),
        Ok(DeviceErrorCode::SlowDown) => Ok(Poll::SlowDown),
        Ok(DeviceErrorCode::AccessDenied) => Ok(Poll::Denied),
        Ok(DeviceErrorCode::ExpiredToken) => Ok(Poll::Expired),
        Ok(DeviceErrorCode::InvalidRequest) | Err(_) => {
            Err(TokenAnswerError::UnknownError(answer.status))
        }
    }
}

/// The interval after a `slow_down`: 5 s more (RFC 8628 §3.5), at most MAX_INTERVAL.
fn slower(interval: u64) -> u64 {
    interval.saturating_add(SLOW_DOWN_STEP).min(MAX_INTERVAL)
}

/// Log in: `show` is called once with the code; the login on approval.
pub async fn login(
    registry: &Registry,
    show: impl FnOnce(&DeviceCode),
) -> Result<Login, RegistryError> {
    let bad = |message: String| RegistryError::BadResponse {
        registry: registry.url.clone(),
        message,
    };
    let answer: DeviceCodeResponse = registry.post_empty("device/code").await?;
    let code = DeviceCode::from(answer);
    show(&code);
    let deadline = Instant::now() + Duration::from_secs(code.expires_in);
    let body = DeviceTokenRequest {
        device_code: code.device_code.clone(),
    };
    let mut interval = code.interval;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(RegistryError::LoginExpired);
        }
        tokio::time::sleep(Duration::from_secs(interval).min(left)).await;
        let answer = registry.post("device/token", &body).await?;
        if answer.status >= 500 {
            return Err(registry.error(&answer));
        }
        match classify(&answer).map_err(|e| bad(e.to_string()))? {
            Poll::Done(login) => return Ok(login),
            Poll::Pending => {}
            Poll::SlowDown => interval = slower(interval),
            Poll::Denied => return Err(RegistryError::LoginDenied),
            Poll::Expired => return Err(RegistryError::LoginExpired),
        }
    }
}

/// What a saved login is.
#[derive(Debug, Clone, PartialEq)]
pub struct Saved {
    pub user: String,
    /// The credentials file.
    pub path: std::path::PathBuf,
    /// Whether this registry is now the default one.
    pub default: bool,
}

/// Log in to the registry at `url` and save the login (`credentials::save`, mode 0600; made
/// the default when `make_default` or when no login is). `splice login` and the TUI's `/login`
/// both come through here.
pub async fn login_and_save(
    url: &str,
    make_default: bool,
    show: impl FnOnce(&DeviceCode),
) -> Result<Saved, RegistryError> {
    let registry = Registry::new(url, None)?;
    let login = login(&registry, show).await?;
    let user = login.user.clone();
    let (path, default) = credentials::save(url, login, make_default)?;
    Ok(Saved {
        user,
        path,
        default,
    })
}

/// The TUI's `/login`: the same login as a task feeding the device-code modal. Dropping the
/// handle (Esc) aborts it at its next await, before any token arrives, so nothing is saved.
pub fn start(url: String) -> DeviceLogin {
    DeviceLogin::spawn(move |events| async move {
        let shown = events.clone();
        let done = login_and_save(&url, false, move |code| {
            shown.send(DeviceLoginEvent::Code {
                user_code: code.user_code.clone(),
                verification_uri: code.verification_uri.clone(),
                verification_uri_complete: code.verification_uri_complete.clone(),
                expires_in: code.expires_in,
            });
        })
        .await;
        events.send(match done {
            Ok(saved) => DeviceLoginEvent::SignedIn {
                account: saved.user,
            },
            Err(error) => failure(&error),
        });
    })
}

/// A failed login as the modal shows it: what happened, and what to do about it.
pub fn failure(error: &RegistryError) -> DeviceLoginEvent {
    let (message, hint) = match error {
        RegistryError::LoginExpired => (
            "The code expired before it was approved.".to_string(),
            Some("Run /login again and approve the code before the countdown ends."),
        ),
        RegistryError::LoginDenied => (
            "The login was denied.".to_string(),
            Some("Run /login again if that was a mistake."),
        ),
        RegistryError::Unreachable { .. } => (
            error.to_string(),
            Some(
                "Check that the registry is running and its URL is right (SPLICE_REGISTRY, or \
                 `registry` in the config file).",
            ),
        ),
        other => (other.to_string(), None),
    };
    DeviceLoginEvent::Failed {
        message,
        hint: hint.map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn token_answers_are_classified_per_rfc_8628() {
        let poll = |status, body| classify(&answer(status, body));
        assert_eq!(
            poll(400, r#"{"error":"authorization_pending"}"#),
            Ok(Poll::Pending)
        );
        assert_eq!(poll(400, r#"{"error":"slow_down"}"#), Ok(Poll::SlowDown));
        assert_eq!(poll(400, r#"{"error":"access_denied"}"#), Ok(Poll::Denied));
        assert_eq!(poll(400, r#"{"error":"expired_token"}"#), Ok(Poll::Expired));
        assert!(poll(400, r#"{"error":"what"}"#).is_err());
        assert_eq!(
            poll(400, r#"{"error":"invalid_request"}"#),
            Err(TokenAnswerError::UnknownError(400))
        );
        assert!(poll(200, r#"{"access_token":""}"#).is_err());
        assert_eq!(
            poll(200, r#"{"access_token":"","user":"u"}"#),
            Err(TokenAnswerError::NoToken)
        );
        assert_eq!(poll(400, "<html>"), Err(TokenAnswerError::NotJson(400)));
        let done = poll(
            200,
            r#"{"access_token":"t0k","token_type":"bearer","user":"alice"}"#,
        );
        assert!(
            matches!(&done, Ok(Poll::Done(l)) if l.user == "alice" && l.token.reveal() == "t0k")
        );
    }

    fn parse(value: Value) -> Result<DeviceCode, serde_json::Error> {
        serde_json::from_value::<DeviceCodeResponse>(value).map(DeviceCode::from)
    }

    fn value_without_interval() -> Value {
        json!({
            "device_code": "dc", "user_code": "ABCD-EFGH",
            "verification_uri": "http://r/device",
            "verification_uri_complete": "http://r/device?user_code=ABCD-EFGH",
            "expires_in": 600
        })
    }

    #[test]
    fn a_device_code_is_parsed_with_a_floor_on_the_interval() {
        let value = json!({
            "device_code": "dc", "user_code": "ABCD-EFGH",
            "verification_uri": "http://r/device",
            "verification_uri_complete": "http://r/device?user_code=ABCD-EFGH",
            "expires_in": 600, "interval": 0
        });
        let code = parse(value).expect("parse value");
        assert_eq!(code.interval, MIN_INTERVAL);
        let line = code.json_line();
        assert_eq!(line["type"], "device_code");
        assert_eq!(line["userCode"], "ABCD-EFGH");
        assert!(line.get("deviceCode").is_none() && !line.to_string().contains("\"dc\""));
        assert!(parse(json!({"device_code": "dc"})).is_err());
        // Without an interval, RFC 8628's default.
        assert_eq!(
            parse(value_without_interval()).map(|c| c.interval).ok(),
            Some(5)
        );
    }

    #[test]
    fn slow_down_adds_five_seconds_up_to_the_cap() {
        assert_eq!(slower(1), 6);
        assert_eq!(slower(6), 11);
        assert_eq!(slower(MAX_INTERVAL - 1), MAX_INTERVAL);
        assert_eq!(slower(u64::MAX), MAX_INTERVAL);
    }

    /// A registry's numbers cannot make the client wait for ever or overflow its clock.
    #[test]
    fn a_hostile_expiry_or_interval_is_capped() {
        let value = json!({
            "device_code": "dc", "user_code": "C", "verification_uri": "u",
            "verification_uri_complete": "u", "expires_in": u64::MAX, "interval": u64::MAX
        });
        let code = parse(value).expect("parse value");
        assert!(code.expires_in <= MAX_EXPIRY && code.interval <= MAX_INTERVAL);
        let _ = Instant::now() + Duration::from_secs(code.expires_in);
    }
}
