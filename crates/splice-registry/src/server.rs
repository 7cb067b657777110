//! The HTTP API under `/api/v1` and the `/device` page. Handlers check the caller, then hand
//! the rules to `publish`, `device` and the index; every failure is an `ApiError`.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, Form, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;

use crate::MAX_UPLOAD;
use crate::accounts::{NO_PASSWORD, secret_hash, verify_password};
use crate::db::{Db, Inserted, VersionRow};
use crate::device::{self, DeviceSettings, normalize_user_code};
use crate::error::ApiError;
use crate::html;
use crate::publish;
use crate::storage::BlobStore;
use crate::time::{now_ms, rfc3339};
use splice_core::packages::Issue;
use splice_core::packages::version;
use splice_core::registry::api::{
    self, DeviceCodeResponse, DeviceErrorCode, DeviceTokenRequest, ErrorCode, Me, PackageVersions,
    Published, Revoked, SearchHit, SearchQuery, SearchResults, VersionMeta, VersionSummary, Yanked,
};

#[derive(Clone)]
pub struct AppState {
    pub db: Db,
    pub blobs: Arc<dyn BlobStore>,
    /// `http://HOST:PORT`, for the verification URI.
    pub base: String,
    pub device: DeviceSettings,
    /// Where uploads are unpacked for checking.
    pub scratch: PathBuf,
    /// Password checks running at once.
    pub password_checks: Arc<tokio::sync::Semaphore>,
    /// Failed sign-ins on the device page, per user name.
    pub sign_ins: Arc<crate::throttle::SignInThrottle>,
}

/// Password checks allowed at once (each holds 19 MiB for tens of milliseconds).
pub const PASSWORD_CHECKS: usize = 4;

/// A hash of no one's password, checked for an unknown user so that it takes as long.
fn stand_in_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| crate::accounts::hash_password("stand-in").unwrap_or_default())
}

/// Small JSON and form bodies: the default limit of everything but an upload.
const SMALL_BODY: usize = 64 * 1024;

pub fn router(state: AppState) -> Router {
    // The upload reads its body itself, after the caller is checked, to its own limit.
    let upload = put(publish_version).layer(DefaultBodyLimit::disable());
    Router::new()
        .route("/api/v1/device/code", post(device_code))
        .route("/api/v1/device/token", post(device_token))
        .route("/device", get(device_page).post(device_decide))
        .route("/api/v1/me", get(me))
        .route(
            "/api/v1/tokens/current",
            axum::routing::delete(revoke_token),
        )
        .route("/api/v1/search", get(search))
        .route("/api/v1/packages/{ns}/{name}", get(package))
        .route(
            "/api/v1/packages/{ns}/{name}/{version}",
            get(version).merge(upload),
        )
        .route(
            "/api/v1/packages/{ns}/{name}/{version}/archive",
            get(archive),
        )
        .route("/api/v1/packages/{ns}/{name}/{version}/yank", post(yank))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(SMALL_BODY))
        .layer(crate::trace::server_trace())
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such endpoint: the API is under /api/v1 (see docs/registry.md)")
}

/// The token of `Authorization: Bearer TOKEN`.
fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(ApiError::unauthenticated)
}

/// The caller's user name from `Authorization: Bearer TOKEN`.
async fn caller(state: &AppState, headers: &HeaderMap) -> Result<String, ApiError> {
    let token = bearer(headers)?;
    state
        .db
        .token_user(&secret_hash(token))
        .await?
        .ok_or_else(ApiError::unauthenticated)
}

/// `DELETE /api/v1/tokens/current`: the token that signs the request stops working
/// (`splice logout`).
async fn revoke_token(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Revoked>, ApiError> {
    let token = bearer(&headers)?;
    if state.db.remove_token(&secret_hash(token)).await? {
        Ok(Json(Revoked { revoked: true }))
    } else {
        Err(ApiError::unauthenticated())
    }
}

async fn device_code(State(state): State<AppState>) -> Result<Json<DeviceCodeResponse>, ApiError> {
    Ok(Json(
        device::start(&state.db, &state.base, state.device).await?,
    ))
}

async fn device_token(
    State(state): State<AppState>,
    body: Result<Json<DeviceTokenRequest>, JsonRejection>,
) -> Response {
    let Ok(Json(request)) = body else {
        return device::rfc_error(
            DeviceErrorCode::InvalidRequest,
            "send {\"device_code\":\"…\"} as JSON, the code from POST /api/v1/device/code",
        );
    };
    match device::poll(&state.db, &request.device_code).await {
        Ok(response) => response,
        Err(e) => ApiError::internal(e).into_response(),
    }
}

#[derive(Deserialize)]
struct PageQuery {
    user_code: Option<String>,
}

async fn device_page(Query(query): Query<PageQuery>) -> Response {
    html::form_page(query.user_code.as_deref().unwrap_or(""))
}

#[derive(Deserialize)]
struct Decision {
    #[serde(default)]
    user: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    user_code: String,
    #[serde(default)]
    action: String,
}

async fn device_decide(
    State(state): State<AppState>,
    form: Result<Form<Decision>, axum::extract::rejection::FormRejection>,
) -> Response {
    let Ok(Form(decision)) = form else {
        return html::result(
            StatusCode::BAD_REQUEST,
            "The form was incomplete: go back and fill it in.",
        );
    };
    // Too many failed sign-ins for this name: refused before the password is even checked.
    if let Err(wait) = state
        .sign_ins
        .check(&decision.user, std::time::Instant::now())
    {
        let minutes = wait.as_secs().div_ceil(60).max(1);
        let mut response = html::result(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "Too many failed sign-ins for this user: try again in {minutes} minute{}.",
                if minutes == 1 { "" } else { "s" }
            ),
        );
        if let Ok(value) = axum::http::HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, value);
        }
        return response;
    }
    let stored = match state.db.password_hash(&decision.user).await {
        Ok(stored) => stored,
        Err(e) => return ApiError::internal(e).into_response(),
    };
    let password = decision.password.clone();
    // Argon2 takes tens of milliseconds and 19 MiB: off the async threads, a few at a time
    // (unbounded, a flood of sign-ins would exhaust memory). An unknown user costs the same
    // check against a stand-in hash and is refused the same way as a wrong password.
    let Ok(_permit) = state.password_checks.acquire().await else {
        return ApiError::internal("password checks closed").into_response();
    };
    // A user without a web password is refused like an unknown one, after as long a check.
    let verified = tokio::task::spawn_blocking(move || match stored {
        Some(stored) if stored != NO_PASSWORD => verify_password(&password, &stored),
        _ => {
            let _ = verify_password(&password, stand_in_hash());
            false
        }
    })
    .await
    .unwrap_or(false);
    if verified {
        state.sign_ins.succeeded(&decision.user);
    } else {
        state
            .sign_ins
            .failed(&decision.user, std::time::Instant::now());
        return html::result(
            StatusCode::UNAUTHORIZED,
            "Wrong user name or password: go back and try again.",
        );
    }
    let code = normalize_user_code(&decision.user_code);
    let approve = match decision.action.as_str() {
        "approve" => true,
        "deny" => false,
        _ => return html::result(StatusCode::BAD_REQUEST, "Choose Approve or Deny."),
    };
    let user = approve.then_some(decision.user.as_str());
    match state.db.decide_device(&code, user, now_ms()).await {
        Ok(true) if approve => html::result(
            StatusCode::OK,
            &format!(
                "Approved: the device is signed in as {}. You can close this page.",
                decision.user
            ),
        ),
        Ok(true) => html::result(StatusCode::OK, "Denied: the device will not be signed in."),
        Ok(false) => html::result(
            StatusCode::NOT_FOUND,
            "No pending login has that code (expired, already handled, or mistyped): start the login again.",
        ),
        Err(e) => ApiError::internal(e).into_response(),
    }
}

async fn me(State(state): State<AppState>, headers: HeaderMap) -> Result<Json<Me>, ApiError> {
    let user = caller(&state, &headers).await?;
    let namespaces = state.db.namespaces(&user).await?;
    Ok(Json(Me { user, namespaces }))
}

/// How much of a refused upload is read and thrown away so that the client, still sending,
/// gets the answer rather than a reset connection; past this the connection is closed.
const DRAIN_LIMIT: u64 = 2 * MAX_UPLOAD as u64;

async fn publish_version(
    State(state): State<AppState>,
    Path((ns, name, version)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let checked = allowed(&state, &ns, &headers)
        .await
        .and_then(|user| version_allowed(&version).map(|()| user));
    match checked {
        Ok(user) if declared.is_none_or(|n| n <= MAX_UPLOAD as u64) => {
            publish_body(state, (ns, name, version), headers, user, body).await
        }
        refused => {
            // Refused before anything was kept: the body is discarded, never stored.
            if declared.is_none_or(|n| n <= DRAIN_LIMIT) {
                let mut stream = body.into_data_stream();
                let mut seen = 0u64;
                while let Some(Ok(chunk)) = stream.next().await {
                    seen += chunk.len() as u64;
                    if seen > DRAIN_LIMIT {
                        break;
                    }
                }
            }
            Err(refused.err().unwrap_or_else(too_large))
        }
    }
}

/// The caller, when it owns the namespace.
async fn allowed(state: &AppState, ns: &str, headers: &HeaderMap) -> Result<String, ApiError> {
    let user = caller(state, headers).await?;
    if !state.db.owns(&user, ns).await? {
        return Err(ApiError::new(
            ErrorCode::NamespaceForbidden,
            format!(
                "{user} does not own the namespace `{ns}`: publish under one of yours (GET /api/v1/me), \
                 or ask the registry's operator to add you with `splice registry user add {user} --namespace {ns}`"
            ),
        ));
    }
    Ok(user)
}

/// The URL's version, by the manifest's rule (no build metadata: `1.0.0+x` would share
/// `1.0.0`'s precedence and a range could resolve to either). The manifest is checked again.
fn version_allowed(version: &str) -> Result<(), ApiError> {
    match version::parse_package(version) {
        Err(problem) => Err(ApiError::invalid(vec![Issue::new(
            "version",
            problem.to_string(),
        )])),
        Ok(_) => Ok(()),
    }
}

async fn publish_body(
    state: AppState,
    (ns, name, version): (String, String, String),
    headers: HeaderMap,
    user: String,
    body: Body,
) -> Result<Response, ApiError> {
    // Only now, the caller known to have the right, is the body kept.
    let bytes = read_limited(body, MAX_UPLOAD).await?;
    let id = format!("{ns}/{name}");
    // Refuse early what already exists; the insert below refuses it again under races.
    if state.db.version(&id, &version).await?.is_some() {
        return Err(exists(&id, &version));
    }
    let client_version = headers
        .get(api::CLIENT_VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .chars()
        .take(64)
        .collect::<String>();
    let (scratch, check) = (state.scratch.clone(), bytes.clone());
    let (ns2, name2, version2) = (ns.clone(), name.clone(), version.clone());
    let verified = tokio::task::spawn_blocking(move || {
        publish::verify(&check, &ns2, &name2, &version2, &scratch)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::invalid)?;
    let sha256 = splice_core::packages::archive::sha256_hex(&bytes);
    state
        .blobs
        .put(&sha256, bytes.clone())
        .await
        .map_err(ApiError::internal)?;
    let row = VersionRow {
        id: id.clone(),
        version: version.clone(),
        sha256: sha256.clone(),
        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        publisher: user,
        published_ms: now_ms(),
        client_version,
        manifest: verified.manifest.to_string(),
        yanked: false,
    };
    match state
        .db
        .insert_version(&row, &ns, &name, &verified.description)
        .await?
    {
        Inserted::Done => {
            let published = Published {
                id,
                version,
                sha256,
                size: size(row.size),
            };
            Ok((StatusCode::CREATED, Json(published)).into_response())
        }
        Inserted::Exists => Err(exists(&id, &version)),
    }
}

fn too_large() -> ApiError {
    ApiError::new(
        ErrorCode::TooLarge,
        format!("the archive is larger than {MAX_UPLOAD} bytes: make the package smaller"),
    )
}

/// The whole body, refused as soon as it passes `limit` bytes.
async fn read_limited(body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                ErrorCode::BadRequest,
                format!("cannot read the upload: {e}"),
            )
        })?;
        if bytes.len() + chunk.len() > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(bytes))
}

fn exists(id: &str, version: &str) -> ApiError {
    ApiError::new(
        ErrorCode::VersionExists,
        format!(
            "{id}@{version} is already published and never changes: bump the version in manifest.json"
        ),
    )
}

async fn package(
    State(state): State<AppState>,
    Path((ns, name)): Path<(String, String)>,
) -> Result<Json<PackageVersions>, ApiError> {
    let id = format!("{ns}/{name}");
    let description = state.db.description(&id).await?.ok_or_else(|| {
        ApiError::not_found(format!(
            "no package {id}: check the name, or search with GET /api/v1/search?q="
        ))
    })?;
    let mut versions: Vec<(Option<version::Version>, VersionRow)> = state
        .db
        .versions(&id)
        .await?
        .into_iter()
        .map(|row| (version::parse(&row.version).ok(), row))
        .collect();
    // Newest first by precedence; a version that does not parse (none should) last.
    versions.sort_by(|(a, _), (b, _)| match (a, b) {
        (Some(a), Some(b)) => b.cmp_precedence(a),
        (a, b) => b.is_some().cmp(&a.is_some()),
    });
    let versions = versions
        .into_iter()
        .map(|(_, v)| VersionSummary {
            published_at: rfc3339(v.published_ms),
            size: size(v.size),
            version: v.version,
            sha256: v.sha256,
            yanked: v.yanked,
        })
        .collect();
    Ok(Json(PackageVersions {
        id,
        description,
        versions,
    }))
}

async fn find_version(
    state: &AppState,
    ns: &str,
    name: &str,
    version: &str,
) -> Result<VersionRow, ApiError> {
    let id = format!("{ns}/{name}");
    state.db.version(&id, version).await?.ok_or_else(|| {
        ApiError::not_found(format!(
            "no version {id}@{version}: list the versions with GET /api/v1/packages/{id}"
        ))
    })
}

/// A stored size as the API's count of bytes (never negative: it is a length).
fn size(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}

async fn version(
    State(state): State<AppState>,
    Path((ns, name, version)): Path<(String, String, String)>,
) -> Result<Json<VersionMeta>, ApiError> {
    let v = find_version(&state, &ns, &name, &version).await?;
    let manifest: Value = serde_json::from_str(&v.manifest).unwrap_or(Value::Null);
    Ok(Json(VersionMeta {
        id: v.id,
        version: v.version,
        sha256: v.sha256,
        size: size(v.size),
        publisher: v.publisher,
        published_at: rfc3339(v.published_ms),
        client_version: v.client_version,
        yanked: v.yanked,
        manifest,
    }))
}

async fn archive(
    State(state): State<AppState>,
    Path((ns, name, version)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    let v = find_version(&state, &ns, &name, &version).await?;
    let bytes = state
        .blobs
        .get(&v.sha256)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| {
            ApiError::internal(format!(
                "the archive of {ns}/{name}@{version} is missing from the blob store"
            ))
        })?;
    Ok(([(header::CONTENT_TYPE, "application/gzip")], bytes).into_response())
}

async fn yank(
    State(state): State<AppState>,
    Path((ns, name, version)): Path<(String, String, String)>,
    headers: HeaderMap,
) -> Result<Json<Yanked>, ApiError> {
    let user = caller(&state, &headers).await?;
    if !state.db.owns(&user, &ns).await? {
        return Err(ApiError::new(
            ErrorCode::NamespaceForbidden,
            format!("{user} does not own the namespace `{ns}`: only its owners can yank"),
        ));
    }
    let id = format!("{ns}/{name}");
    if !state.db.yank(&id, &version).await? {
        return Err(ApiError::not_found(format!(
            "no version {id}@{version} to yank"
        )));
    }
    Ok(Json(Yanked {
        id,
        version,
        yanked: true,
    }))
}

async fn search(
    State(state): State<AppState>,
    Query(query): Query<SearchQuery>,
) -> Result<Json<SearchResults>, ApiError> {
    let mut packages = Vec::new();
    for (id, description) in state.db.search(&query.q).await? {
        let latest = state
            .db
            .versions(&id)
            .await?
            .into_iter()
            .filter(|v| !v.yanked)
            .filter_map(|v| Some((version::parse_package(&v.version).ok()?, v.version)))
            .max_by(|(a, _), (b, _)| a.cmp_precedence(b))
            .map(|(_, text)| text);
        // A package whose every version is yanked resolves to nothing: not listed.
        if let Some(latest) = latest {
            packages.push(SearchHit {
                id,
                description,
                latest,
            });
        }
    }
    Ok(Json(SearchResults { packages }))
}
