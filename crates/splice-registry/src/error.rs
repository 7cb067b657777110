//! The API's error: a status and `{"error":{"code","message"[,"issues"]}}` (`api::ErrorBody`),
//! where the message says what to do. Every failure of a handler becomes one of these.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use splice_core::packages::Issue;
use splice_core::registry::api::{ErrorBody, ErrorCode, ErrorDetail};

#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub issues: Vec<Issue>,
}

impl ApiError {
    /// An answer with `code`'s status (`ErrorCode::status`).
    pub fn new(code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            issues: Vec::new(),
        }
    }

    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.code.status()).unwrap_or(StatusCode::BAD_REQUEST)
    }

    pub fn unauthenticated() -> ApiError {
        ApiError::new(
            ErrorCode::Unauthenticated,
            "this needs a valid bearer token: run `splice login --registry URL` first",
        )
    }

    pub fn not_found(what: impl Into<String>) -> ApiError {
        ApiError::new(ErrorCode::NotFound, what)
    }

    pub fn invalid(issues: Vec<Issue>) -> ApiError {
        ApiError {
            code: ErrorCode::InvalidPackage,
            message: "the archive is not a valid package: fix each issue, then pack it with \
                      `splice pkg pack` (or publish with `splice publish`)"
                .to_string(),
            issues,
        }
    }

    /// A failure of the server itself (database, disk): logged on stderr, not shown in detail.
    pub fn internal(error: impl std::fmt::Display) -> ApiError {
        eprintln!("splice registry: {error}");
        ApiError::new(
            ErrorCode::Internal,
            "the registry failed to handle this request; try again, and tell its operator if it persists",
        )
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(error: crate::db::DbError) -> ApiError {
        ApiError::internal(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
                issues: self.issues,
            },
        };
        (status, Json(body)).into_response()
    }
}
