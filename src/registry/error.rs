//! The API's error: a status and `{"error":{"code","message"[,"issues"]}}`, where the message
//! says what to do. Every failure of a handler becomes one of these.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::packages::Issue;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub issues: Vec<Issue>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            issues: Vec::new(),
        }
    }

    pub fn unauthenticated() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "this needs a valid bearer token: run `splice login --registry URL` first",
        )
    }

    pub fn not_found(what: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", what)
    }

    pub fn invalid(issues: Vec<Issue>) -> ApiError {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "invalid_package",
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
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the registry failed to handle this request; try again, and tell its operator if it persists",
        )
    }
}

impl From<crate::registry::db::DbError> for ApiError {
    fn from(error: crate::registry::db::DbError) -> ApiError {
        ApiError::internal(error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if !self.issues.is_empty() {
            error["issues"] = json!(self.issues);
        }
        (self.status, Json(json!({ "error": error }))).into_response()
    }
}
