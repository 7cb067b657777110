//! The registry's HTTP API under `/api/v1`, as types: what the server writes and the client
//! reads (docs/registry.md is the contract). Serde only: the client links none of the server's
//! crates (the server is the `splice-registry` crate). Responses are written whole by the server; the client
//! reads them leniently (`#[serde(default)]` on what it never required), as it always has.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::packages::Issue;

/// Where the API lives on a registry's URL.
pub const PREFIX: &str = "/api/v1";

/// The header a publish names its client's version in.
pub const CLIENT_VERSION_HEADER: &str = "x-splice-client-version";

// ---- errors --------------------------------------------------------------------------------

/// Why the registry refused a request, serialised as its snake_case name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorCode {
    Unauthenticated,
    NamespaceForbidden,
    VersionExists,
    TooLarge,
    InvalidPackage,
    NotFound,
    BadRequest,
    Internal,
    /// A code this client does not know (a newer registry's), kept as it was sent.
    Other(String),
}

impl ErrorCode {
    /// Every code the registry sends.
    pub const KNOWN: [ErrorCode; 8] = [
        ErrorCode::Unauthenticated,
        ErrorCode::NamespaceForbidden,
        ErrorCode::VersionExists,
        ErrorCode::TooLarge,
        ErrorCode::InvalidPackage,
        ErrorCode::NotFound,
        ErrorCode::BadRequest,
        ErrorCode::Internal,
    ];

    pub fn as_str(&self) -> &str {
        match self {
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::NamespaceForbidden => "namespace_forbidden",
            ErrorCode::VersionExists => "version_exists",
            ErrorCode::TooLarge => "too_large",
            ErrorCode::InvalidPackage => "invalid_package",
            ErrorCode::NotFound => "not_found",
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::Internal => "internal",
            ErrorCode::Other(code) => code,
        }
    }

    /// The HTTP status the registry answers a code with.
    pub fn status(&self) -> u16 {
        match self {
            ErrorCode::Unauthenticated => 401,
            ErrorCode::NamespaceForbidden => 403,
            ErrorCode::VersionExists => 409,
            ErrorCode::TooLarge => 413,
            ErrorCode::InvalidPackage => 422,
            ErrorCode::NotFound => 404,
            ErrorCode::BadRequest | ErrorCode::Other(_) => 400,
            ErrorCode::Internal => 500,
        }
    }

    fn parse(text: &str) -> ErrorCode {
        ErrorCode::KNOWN
            .into_iter()
            .find(|code| code.as_str() == text)
            .unwrap_or_else(|| ErrorCode::Other(text.to_string()))
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ErrorCode, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(ErrorCode::parse(&text))
    }
}

/// Every error answer but the token endpoint's: `{"error":{"code","message"[,"issues"]}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    /// What to do about it.
    #[serde(default)]
    pub message: String,
    /// `invalid_package`'s violations; left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<Issue>,
}

// ---- the device login (RFC 8628) -------------------------------------------------------------

/// `POST /device/code`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceCodeResponse {
    /// The secret the device polls with; never shown.
    pub device_code: String,
    pub user_code: String,
    pub verification_uri: String,
    pub verification_uri_complete: String,
    pub expires_in: u64,
    /// Seconds between polls; 5 when left out (RFC 8628 §3.2).
    #[serde(default = "default_interval")]
    pub interval: u64,
}

fn default_interval() -> u64 {
    5
}

/// `POST /device/token`'s body.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceTokenRequest {
    pub device_code: String,
}

/// `POST /device/token` once the code is approved (200).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceToken {
    pub access_token: String,
    #[serde(default)]
    pub token_type: String,
    pub user: String,
}

/// The only `token_type` the registry issues.
pub const TOKEN_TYPE: &str = "bearer";

/// The token endpoint's RFC 8628 §3.5 errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceErrorCode {
    AuthorizationPending,
    SlowDown,
    ExpiredToken,
    AccessDenied,
    InvalidRequest,
}

/// The token endpoint's error answer (400): `{"error","error_description"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceError {
    pub error: DeviceErrorCode,
    #[serde(default)]
    pub error_description: String,
}

// ---- accounts ------------------------------------------------------------------------------

/// `GET /me`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Me {
    pub user: String,
    pub namespaces: Vec<String>,
}

/// `DELETE /tokens/current`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Revoked {
    pub revoked: bool,
}

// ---- packages ------------------------------------------------------------------------------

/// `PUT /packages/NS/NAME/VERSION` (201).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Published {
    pub id: String,
    pub version: String,
    pub sha256: String,
    pub size: u64,
}

/// `GET /packages/NS/NAME`: its versions newest first.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PackageVersions {
    pub id: String,
    pub description: String,
    pub versions: Vec<VersionSummary>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VersionSummary {
    pub version: String,
    pub sha256: String,
    pub size: u64,
    pub yanked: bool,
    /// RFC 3339, UTC.
    pub published_at: String,
}

/// `GET /packages/NS/NAME/VERSION`: one version's metadata and provenance.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct VersionMeta {
    pub id: String,
    pub version: String,
    pub sha256: String,
    pub size: u64,
    pub publisher: String,
    /// RFC 3339, UTC.
    pub published_at: String,
    /// The publishing client's `X-Splice-Client-Version`, at most 64 characters.
    pub client_version: String,
    pub yanked: bool,
    /// `manifest.json` as published.
    pub manifest: Value,
}

/// `POST /packages/NS/NAME/VERSION/yank`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Yanked {
    pub id: String,
    pub version: String,
    pub yanked: bool,
}

/// `GET /search?q=TEXT`'s query.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchQuery {
    pub q: String,
}

/// `GET /search?q=TEXT`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchResults {
    pub packages: Vec<SearchHit>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchHit {
    pub id: String,
    pub description: String,
    /// The highest version neither yanked nor carrying build metadata.
    pub latest: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::DeserializeOwned;

    /// `body` (as the registry writes it: docs/registry.md's shapes, in its field order) read into
    /// `T` and written back, byte for byte.
    fn round_trip<T: Serialize + DeserializeOwned>(body: &str) {
        let parsed: T = serde_json::from_str(body).unwrap_or_else(|e| panic!("{body}: {e}"));
        let written = serde_json::to_string(&parsed).expect("serialise parsed");
        assert_eq!(written, body);
    }

    #[test]
    fn every_endpoint_answers_in_its_recorded_shape() {
        // POST /device/code
        round_trip::<DeviceCodeResponse>(
            r#"{"device_code":"4f1c","user_code":"BCDF-GHJK","verification_uri":"http://127.0.0.1:7878/device","verification_uri_complete":"http://127.0.0.1:7878/device?user_code=BCDF-GHJK","expires_in":900,"interval":5}"#,
        );
        // POST /device/token: the request, the token, the RFC 8628 errors
        round_trip::<DeviceTokenRequest>(r#"{"device_code":"4f1c"}"#);
        round_trip::<DeviceToken>(
            r#"{"access_token":"spl_x","token_type":"bearer","user":"alice"}"#,
        );
        for error in [
            "authorization_pending",
            "slow_down",
            "expired_token",
            "access_denied",
            "invalid_request",
        ] {
            round_trip::<DeviceError>(&format!(
                r#"{{"error":"{error}","error_description":"start the login again"}}"#
            ));
        }
        // GET /me, DELETE /tokens/current
        round_trip::<Me>(r#"{"user":"alice","namespaces":["acme","tools"]}"#);
        round_trip::<Revoked>(r#"{"revoked":true}"#);
        // PUT /packages/NS/NAME/VERSION
        round_trip::<Published>(
            r#"{"id":"acme/json","version":"0.1.0","sha256":"ab12","size":2048}"#,
        );
        // GET /packages/NS/NAME
        round_trip::<PackageVersions>(
            r#"{"id":"acme/json","description":"JSON tools","versions":[{"version":"0.2.0","sha256":"cd34","size":2050,"yanked":true,"publishedAt":"2026-01-02T03:04:05Z"},{"version":"0.1.0","sha256":"ab12","size":2048,"yanked":false,"publishedAt":"2026-01-01T00:00:00Z"}]}"#,
        );
        // GET /packages/NS/NAME/VERSION
        round_trip::<VersionMeta>(
            r#"{"id":"acme/json","version":"0.1.0","sha256":"ab12","size":2048,"publisher":"alice","publishedAt":"2026-01-01T00:00:00Z","clientVersion":"0.1.0","yanked":false,"manifest":{"specVersion":1,"namespace":"acme","name":"json"}}"#,
        );
        // POST /packages/NS/NAME/VERSION/yank
        round_trip::<Yanked>(r#"{"id":"acme/json","version":"0.1.0","yanked":true}"#);
        // GET /search?q=
        round_trip::<SearchQuery>(r#"{"q":"json"}"#);
        round_trip::<SearchResults>(
            r#"{"packages":[{"id":"acme/json","description":"JSON tools","latest":"0.1.0"}]}"#,
        );
        // Every error answer, with and without issues
        round_trip::<ErrorBody>(
            r#"{"error":{"code":"version_exists","message":"acme/json@0.1.0 is already published"}}"#,
        );
        round_trip::<ErrorBody>(
            r#"{"error":{"code":"invalid_package","message":"fix each issue","issues":[{"path":"version","message":"has build metadata"}]}}"#,
        );
    }

    /// docs/registry.md's table: each code with its status, spelled as on the wire.
    #[test]
    fn error_codes_keep_their_names_and_statuses() {
        let table = [
            ("unauthenticated", 401),
            ("namespace_forbidden", 403),
            ("version_exists", 409),
            ("too_large", 413),
            ("invalid_package", 422),
            ("not_found", 404),
            ("bad_request", 400),
            ("internal", 500),
        ];
        assert_eq!(ErrorCode::KNOWN.len(), table.len());
        for (code, (name, status)) in ErrorCode::KNOWN.iter().zip(table) {
            assert_eq!(code.as_str(), name);
            assert_eq!(code.status(), status, "{name}");
            let json = serde_json::to_string(code).unwrap_or_default();
            assert_eq!(json, format!("\"{name}\""));
            let back: ErrorCode = serde_json::from_str(&json).expect("parse json");
            assert_eq!(&back, code);
        }
        // A newer registry's code is kept as sent, and written back the same.
        let other: ErrorCode = serde_json::from_str(r#""rate_limited""#).expect("parse");
        assert_eq!(other, ErrorCode::Other("rate_limited".into()));
        assert_eq!(other.to_string(), "rate_limited");
    }

    /// What the client never required stays optional when it reads.
    #[test]
    fn the_client_reads_leniently_where_it_always_did() {
        let code: DeviceCodeResponse = serde_json::from_str(
            r#"{"device_code":"d","user_code":"U","verification_uri":"v","verification_uri_complete":"c","expires_in":60}"#,
        )
        .expect("parse");
        assert_eq!(code.interval, 5);
        assert!(serde_json::from_str::<DeviceCodeResponse>(r#"{"device_code":"d"}"#).is_err());
        let token: DeviceToken =
            serde_json::from_str(r#"{"access_token":"t","user":"u"}"#).expect("parse");
        assert_eq!(token.token_type, "");
        let error: ErrorBody =
            serde_json::from_str(r#"{"error":{"code":"not_found"}}"#).expect("parse");
        assert_eq!(error.error.message, "");
        assert!(serde_json::from_str::<ErrorBody>(r#"{"error":"slow_down"}"#).is_err());
        let package: PackageVersions =
            serde_json::from_str(r#"{"versions":[{"version":"1.0.0"}]}"#).expect("parse");
        assert!(!package.versions[0].yanked);
    }
}
