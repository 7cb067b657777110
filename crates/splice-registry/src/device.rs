//! The device-authorization flow (RFC 8628): a device code (secret, kept hashed) and a user
//! code a person types; polling answers `authorization_pending`, `slow_down` (polled faster
//! than the interval: the interval grows by 5 s), `expired_token` or `access_denied`, and once
//! approved a token, after which the device code is spent.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::accounts::{self, random_bytes, secret_hash};
use crate::db::{Db, DbError, Inserted};
use crate::error::ApiError;
use crate::time::now_ms;
use splice_core::registry::api::{
    DeviceCodeResponse, DeviceError, DeviceErrorCode, DeviceToken, TOKEN_TYPE,
};

/// No vowels (no words) and nothing that looks like a digit (RFC 8628 §6.1).
const USER_CODE_LETTERS: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";

/// How much sooner than the interval a poll may come without `slow_down`.
const POLL_SLACK_MS: i64 = 250;

#[derive(Debug, Clone, Copy)]
pub struct DeviceSettings {
    pub interval_secs: i64,
    pub expiry_secs: i64,
}

fn user_code() -> Result<String, ApiError> {
    let bytes = random_bytes::<8>().map_err(ApiError::internal)?;
    let letters: String = bytes
        .iter()
        .map(|b| char::from(USER_CODE_LETTERS[usize::from(*b) % USER_CODE_LETTERS.len()]))
        .collect();
    Ok(format!("{}-{}", &letters[..4], &letters[4..]))
}

/// A user code as typed (any case, with or without the dash or spaces) in its stored shape.
pub fn normalize_user_code(typed: &str) -> String {
    let letters: String = typed
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect();
    if letters.len() == 8 {
        format!("{}-{}", &letters[..4], &letters[4..])
    } else {
        letters
    }
}

pub async fn start(
    db: &Db,
    base: &str,
    settings: DeviceSettings,
) -> Result<DeviceCodeResponse, ApiError> {
    let now = now_ms();
    db.purge_devices(now - 3_600_000).await?;
    for _ in 0..8 {
        let device_code = splice_core::ids::hex(&random_bytes::<32>().map_err(ApiError::internal)?);
        let code = user_code()?;
        let expires = now + settings.expiry_secs * 1000;
        let inserted = db
            .add_device(
                &secret_hash(&device_code),
                &code,
                expires,
                settings.interval_secs,
            )
            .await?;
        if inserted == Inserted::Done {
            return Ok(DeviceCodeResponse {
                device_code,
                verification_uri: format!("{base}/device"),
                verification_uri_complete: format!("{base}/device?user_code={code}"),
                user_code: code,
                // Both are positive (the arguments' ranges).
                expires_in: u64::try_from(settings.expiry_secs).unwrap_or(0),
                interval: u64::try_from(settings.interval_secs).unwrap_or(0),
            });
        }
    }
    Err(ApiError::internal("no free user code after 8 tries"))
}

/// An RFC 8628 §3.5 error: status 400, `{"error","error_description"}`.
pub fn rfc_error(error: DeviceErrorCode, description: &str) -> Response {
    let body = DeviceError {
        error,
        error_description: description.to_string(),
    };
    (StatusCode::BAD_REQUEST, Json(body)).into_response()
}

pub async fn poll(db: &Db, device_code: &str) -> Result<Response, DbError> {
    let hash = secret_hash(device_code);
    let now = now_ms();
    let Some(row) = db.device(&hash).await? else {
        return Ok(rfc_error(
            DeviceErrorCode::ExpiredToken,
            "this device code is unknown, expired or already used: start the login again",
        ));
    };
    if now >= row.expires_ms {
        db.spend_device(&hash).await?;
        return Ok(rfc_error(
            DeviceErrorCode::ExpiredToken,
            "the code expired before it was approved: start the login again",
        ));
    }
    match (row.state.as_str(), row.user_name) {
        ("denied", _) => {
            db.spend_device(&hash).await?;
            Ok(rfc_error(
                DeviceErrorCode::AccessDenied,
                "the login was denied: start it again if that was a mistake",
            ))
        }
        ("approved", Some(user)) => {
            // Whoever deletes the row gets the one token.
            if !db.spend_device(&hash).await? {
                return Ok(rfc_error(
                    DeviceErrorCode::ExpiredToken,
                    "this device code was already used: start the login again",
                ));
            }
            let token = match accounts::new_token() {
                Ok(token) => token,
                Err(e) => return Err(DbError::Refused(e.to_string())),
            };
            db.add_token(&secret_hash(&token), &user, now).await?;
            let answer = DeviceToken {
                access_token: token,
                token_type: TOKEN_TYPE.to_string(),
                user,
            };
            Ok(Json(answer).into_response())
        }
        _ => {
            // A little slack: a client that waits exactly the interval, timed from when it
            // sent rather than when the server read, is not punished for network jitter.
            let too_soon = now - row.last_poll_ms < row.interval_secs * 1000 - POLL_SLACK_MS;
            let interval = if too_soon {
                row.interval_secs + 5
            } else {
                row.interval_secs
            };
            db.device_polled(&hash, now, interval).await?;
            Ok(if too_soon {
                rfc_error(
                    DeviceErrorCode::SlowDown,
                    &format!("polled too often: wait {interval} s between polls"),
                )
            } else {
                rfc_error(
                    DeviceErrorCode::AuthorizationPending,
                    &format!("waiting for the user to approve code {}", row.user_code),
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_have_the_documented_shape() {
        let code = user_code().unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(code.len(), 9);
        assert_eq!(&code[4..5], "-");
        assert!(
            code.bytes()
                .all(|b| b == b'-' || USER_CODE_LETTERS.contains(&b))
        );
        assert_eq!(normalize_user_code(" bcdf ghjk"), "BCDF-GHJK");
        assert_eq!(normalize_user_code("BCDF-GHJK"), "BCDF-GHJK");
    }
}
