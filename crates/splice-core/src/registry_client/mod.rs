//! The registry client: `splice login|logout|publish` and `pkg info|search|yank|install` against
//! a registry's HTTP API (`/api/v1`). Exit codes: 0 done, 1 refused or failed (a version that
//! exists, a namespace not yours, a checksum mismatch), 2 usage or an invalid package, 3 no
//! usable login (none saved, refused, denied, expired) or a registry that cannot be reached or
//! answers nonsense (docs/registry.md: 3 is a provider or credential problem).

pub mod command;
pub mod credentials;
pub mod http;
pub mod install;
pub mod login;
pub mod publish;

use thiserror::Error;

use crate::config::{ConfigError, ConfigFile};
use crate::exit::Exit;
use crate::packages::Issue;
use crate::registry::api::ErrorCode;

#[derive(Debug, Error)]
pub enum RegistryError {
    #[error("{0}")]
    Usage(String),
    /// No registry given, configured or saved as the default (a usage error).
    #[error(
        "no registry: pass --registry URL, set SPLICE_REGISTRY, set `registry` in the config \
         file, or log in once with `splice login --registry URL` (the first login becomes the \
         default)"
    )]
    NoRegistry,
    #[error("not logged in to {registry}: run `splice login --registry {registry}`")]
    NotLoggedIn { registry: String },
    #[error(
        "{registry} refused the saved login ({message}): run `splice login --registry {registry}`"
    )]
    Unauthenticated { registry: String, message: String },
    /// The registry said no with a reason (`version_exists`, `namespace_forbidden`, …).
    #[error("{message} ({code})")]
    Refused {
        status: u16,
        code: ErrorCode,
        message: String,
        issues: Vec<Issue>,
    },
    #[error("{registry} cannot be reached: {message}")]
    Unreachable { registry: String, message: String },
    #[error("{registry} answered something unexpected: {message}")]
    BadResponse { registry: String, message: String },
    #[error("the login was denied")]
    LoginDenied,
    #[error("the login code expired before it was approved: run `splice login` again")]
    LoginExpired,
    #[error("{0}")]
    Failed(String),
}

impl RegistryError {
    pub fn exit_code(&self) -> Exit {
        match self {
            RegistryError::Usage(_) | RegistryError::NoRegistry => Exit::Usage,
            RegistryError::Refused { .. } | RegistryError::Failed(_) => Exit::Failed,
            RegistryError::NotLoggedIn { .. }
            | RegistryError::Unauthenticated { .. }
            | RegistryError::Unreachable { .. }
            | RegistryError::BadResponse { .. }
            | RegistryError::LoginDenied
            | RegistryError::LoginExpired => Exit::Provider,
        }
    }
}

/// The registry to talk to: the flag, else `SPLICE_REGISTRY`, else the config's `registry`,
/// else the default login's (the first `splice login`, or the one given `--default`); none is a
/// usage error that says how to set one. Normalised without a trailing slash (the key of its
/// saved login).
pub fn registry_url(flag: Option<&str>) -> Result<String, RegistryError> {
    let from_config = || configured_registry().map_err(|e| RegistryError::Usage(e.to_string()));
    let chosen = match flag
        .map(str::to_string)
        .or_else(|| crate::config::env_value("SPLICE_REGISTRY"))
    {
        Some(url) => url,
        None => match from_config()? {
            Some(url) => url,
            None => credentials::default_registry()?.ok_or(RegistryError::NoRegistry)?,
        },
    };
    normalize_url(&chosen).map_err(|e| RegistryError::Usage(e.to_string()))
}

/// Why a registry URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("registry URL `{url}` {why}")]
pub struct UrlError {
    pub url: String,
    pub why: UrlProblem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum UrlProblem {
    #[error("must start with http:// or https://")]
    Scheme,
    #[error("has no host")]
    NoHost,
    #[error("may not carry a user name or password")]
    UserInfo,
    #[error("may not have a query, fragment or spaces")]
    QueryOrSpaces,
    #[error("must use https:// (plain http:// only for localhost, 127.0.0.0/8 or [::1])")]
    PlainHttp,
}

/// The config file's `registry`, refused as an invalid config file when it is not a registry URL.
fn configured_registry() -> Result<Option<String>, ConfigError> {
    let path = crate::layout::Layout::process().user_config_file()?;
    let config = ConfigFile::load(path)?;
    if let Some(path) = path {
        check_config(&config).map_err(|why| ConfigError::invalid(path, why))?;
    }
    Ok(config.registry)
}

/// The config file's section of the registry client, `registry`: a registry URL.
pub fn check_config(config: &ConfigFile) -> Result<(), String> {
    match &config.registry {
        Some(url) => normalize_url(url)
            .map(drop)
            .map_err(|why| format!("`registry`: {why}")),
        None => Ok(()),
    }
}

/// `http(s)://host[:port][/path]` without a trailing slash; no user info, query or fragment
/// (a URL that carries a password would end up in messages).
pub fn normalize_url(url: &str) -> Result<String, UrlError> {
    let url = url.trim();
    let bad = |why: UrlProblem| {
        Err(UrlError {
            url: url.to_string(),
            why,
        })
    };
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return bad(UrlProblem::Scheme);
    };
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return bad(UrlProblem::NoHost);
    }
    if host.contains('@') {
        return bad(UrlProblem::UserInfo);
    }
    if url.contains('?') || url.contains('#') || url.chars().any(char::is_whitespace) {
        return bad(UrlProblem::QueryOrSpaces);
    }
    // Plain http would hand the token and the archives to anyone on the path; only this
    // machine's own loopback is exempt.
    if url.starts_with("http://") && !is_loopback(host) {
        return bad(UrlProblem::PlainHttp);
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn is_loopback(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_urls_are_normalised_and_refused_when_unsafe() {
        assert_eq!(
            normalize_url("http://127.0.0.1:7878/").as_deref(),
            Ok("http://127.0.0.1:7878")
        );
        assert_eq!(
            normalize_url(" https://reg.example/sub ").as_deref(),
            Ok("https://reg.example/sub")
        );
        for loopback in [
            "http://localhost:1",
            "http://127.0.0.2",
            "http://[::1]:7878",
        ] {
            assert!(normalize_url(loopback).is_ok(), "{loopback}");
        }
        for bad in [
            "ftp://x",
            "http://",
            "http://u:p@host",
            "http://h/?a=1",
            "127.0.0.1:1",
            "http://registry.example.com",
            "http://10.0.0.5:7878",
            "http://127.0.0.1.evil.example",
        ] {
            assert!(normalize_url(bad).is_err(), "{bad}");
        }
    }
}
