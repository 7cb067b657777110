//! The registry commands' output: messages on stderr, results on stdout (one JSON document, or
//! JSON lines for `login --json`), exit codes from `RegistryError::exit_code`.

use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde_json::json;

use super::http::{Registry, clean};
use super::install::{RegistrySpec, Want};
use super::publish::{self, PrepareError};
use super::{RegistryError, credentials, install, login, registry_url};
use crate::exit::Exit;
use crate::layout::Layout;
use crate::registry::api::{ErrorCode, SearchResults, VersionMeta, Yanked};

/// Print a failure on stderr; its exit code.
fn fail(error: &RegistryError, err: &mut dyn Write) -> Exit {
    let _ = writeln!(err, "splice: {error}");
    if let RegistryError::Refused { issues, .. } = error {
        for issue in issues {
            let _ = writeln!(err, "{issue}");
        }
    }
    error.exit_code()
}

fn line(out: &mut dyn Write, value: &impl Serialize) {
    let text = serde_json::to_string(value).unwrap_or_default();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// `splice login [--registry URL] [--default] [--json]`. Without `--json`: the link and code
/// on stderr, `Logged in to URL as USER` on stdout (and on stderr whether it is the default
/// registry). With it: a `device_code` line, then a `result` line (exit 0) or an `error` line
/// (exit 3 for a denied, expired or refused login).
pub async fn login(
    flag: Option<&str>,
    make_default: bool,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let result = async {
        let url = registry_url(flag)?;
        let saved = login::login_and_save(&url, make_default, |code| {
            if as_json {
                line(out, &code.json_line());
            } else {
                let _ = writeln!(
                    err,
                    "To log in to {url}, open {}\n(or open {} and enter the code {})\nWaiting for \
                     approval; the code expires in {} s.",
                    code.verification_uri_complete,
                    code.verification_uri,
                    code.user_code,
                    code.expires_in
                );
                let _ = err.flush();
            }
        })
        .await?;
        Ok::<_, RegistryError>((url, saved))
    }
    .await;
    match result {
        Ok((url, saved)) => {
            if as_json {
                line(
                    out,
                    &json!({"type": "result", "kind": "login", "saved": true,
                        "configPath": saved.path.display().to_string(), "user": saved.user,
                        "registry": url, "default": saved.default}),
                );
            } else {
                let _ = writeln!(out, "Logged in to {url} as {}", saved.user);
                if saved.default {
                    let _ = writeln!(
                        err,
                        "{url} is your default registry: publish and pkg search|info|install|yank \
                         use it without --registry (SPLICE_REGISTRY or the config's `registry` \
                         come first)"
                    );
                }
            }
            Exit::Success
        }
        Err(error) if as_json => {
            let code = match &error {
                RegistryError::Usage(_) | RegistryError::NoRegistry => "INPUT_UNSUPPORTED",
                RegistryError::Unreachable { .. } | RegistryError::BadResponse { .. } => "SERVICE",
                RegistryError::Failed(_) | RegistryError::Refused { .. } => "FAILED",
                _ => "AUTH",
            };
            let mut body = json!({"code": code, "message": error.to_string(),
                "retryable": false, "scope": "account"});
            if matches!(
                error,
                RegistryError::LoginExpired | RegistryError::LoginDenied
            ) {
                body["hint"] = json!("Run `splice login` again and approve the code in time.");
            }
            line(out, &json!({"type": "error", "error": body}));
            let _ = writeln!(err, "splice: {error}");
            error.exit_code()
        }
        Err(error) => fail(&error, err),
    }
}

/// `splice logout [--registry URL]`: revokes the token on the registry and removes the saved
/// login. The local login goes even when the registry cannot be reached (then it says the
/// token stays valid there); exit 0 either way.
pub async fn logout(flag: Option<&str>, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let url = match registry_url(flag) {
        Ok(url) => url,
        Err(error) => return fail(&error, err),
    };
    let revoked = match credentials::load(&url) {
        Ok(Some(login)) => Some(revoke(&url, login.token).await),
        _ => None,
    };
    let result = credentials::remove(&url).map(|removed| (removed, url));
    match result {
        Ok((true, url)) => {
            match revoked {
                Some(Err(why)) => {
                    let _ = writeln!(
                        err,
                        "warning: the token could not be revoked on {url} ({why}); it stays valid \
                         there until the registry's owner deletes it"
                    );
                    let _ = writeln!(out, "Logged out of {url}");
                }
                _ => {
                    let _ = writeln!(out, "Logged out of {url} (the token is revoked)");
                }
            }
            Exit::Success
        }
        Ok((false, url)) => {
            let _ = writeln!(out, "Not logged in to {url}: nothing to remove");
            Exit::Success
        }
        Err(error) => fail(&error, err),
    }
}

/// Ask the registry to forget `token`. A token it no longer knows counts as revoked.
async fn revoke(url: &str, token: credentials::Token) -> Result<(), RegistryError> {
    let registry = Registry::new(url, Some(token))?;
    let answer = registry.delete("tokens/current").await?;
    match answer.status {
        200 | 401 => Ok(()),
        _ => Err(registry.error(&answer)),
    }
}

/// `splice publish DIR [--registry URL] [--dry-run] [--json]`.
pub async fn publish(
    dir: &Path,
    flag: Option<&str>,
    dry_run: bool,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let prepared = match publish::prepare(dir) {
        Ok(prepared) => prepared,
        Err(PrepareError::Invalid(issues)) => {
            // File names in the package may carry escapes: printed as validate prints them.
            crate::packages::command::print_issues(&issues, err);
            if as_json {
                line(out, &json!({"valid": false, "errors": issues}));
            }
            return Exit::Usage;
        }
        Err(error @ PrepareError::Pack(_)) => {
            let _ = writeln!(err, "splice: {error}");
            return Exit::Failed;
        }
    };
    let (id, version, size) = (
        prepared.id(),
        prepared.version.clone(),
        prepared.bytes.len(),
    );
    if dry_run {
        if as_json {
            line(
                out,
                &json!({"id": id, "version": version, "size": size,
                    "sha256": prepared.sha256, "dryRun": true}),
            );
        } else {
            let _ = writeln!(
                out,
                "would publish {id}@{version}  {size} bytes  sha256:{}",
                prepared.sha256
            );
        }
        return Exit::Success;
    }
    let uploaded = match registry_url(flag) {
        Ok(url) => publish::upload(&url, &prepared)
            .await
            .map(|answer| (url, answer)),
        Err(error) => Err(error),
    };
    match uploaded {
        Ok((url, _)) => {
            if as_json {
                line(
                    out,
                    &json!({"id": id, "version": version, "size": size,
                        "sha256": prepared.sha256, "registry": url}),
                );
            } else {
                let _ = writeln!(
                    out,
                    "published {id}@{version} to {url}  {size} bytes  sha256:{}",
                    prepared.sha256
                );
            }
            Exit::Success
        }
        Err(RegistryError::Refused {
            code: code @ ErrorCode::VersionExists,
            message,
            ..
        }) => {
            // The registry's message names the version; say it here when it does not.
            let named = format!("{id}@{version}");
            let message = if message.contains(&named) {
                message
            } else {
                format!("{named} is already published and a version never changes: {message}")
            };
            let _ = writeln!(err, "splice: {message} ({code})");
            Exit::Failed
        }
        Err(RegistryError::Refused {
            code: code @ ErrorCode::NamespaceForbidden,
            message,
            ..
        }) => {
            let _ = writeln!(
                err,
                "splice: you may not publish to the namespace `{}`: {message} ({code})",
                prepared.namespace
            );
            Exit::Failed
        }
        Err(error) => fail(&error, err),
    }
}

/// `ns/name` or `ns/name@VERSION|RANGE`, as a usage error otherwise.
fn spec(text: &str) -> Result<RegistrySpec, RegistryError> {
    RegistrySpec::parse(text).map_err(|e| RegistryError::Usage(e.to_string()))
}

/// `pkg info`'s document: the version's metadata, with the package's description when the
/// metadata has none of its own.
#[derive(Serialize)]
struct Info {
    #[serde(flatten)]
    meta: VersionMeta,
    description: String,
}

/// `splice pkg info ID[@VERSION] [--registry URL] [--json]`: one version's metadata and
/// provenance (the latest when none is given).
pub async fn info(
    text: &str,
    flag: Option<&str>,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let result = async {
        let spec = spec(text)?;
        let registry = Registry::new(&registry_url(flag)?, None)?;
        let package = install::package(&registry, &spec).await?;
        let version = match &spec.want {
            Want::Exact(v) => v.clone(),
            _ => install::resolve(&registry, &spec).await?,
        };
        let meta: VersionMeta = registry
            .get_json(&format!(
                "packages/{}/{}/{version}",
                spec.namespace, spec.name
            ))
            .await?;
        Ok::<_, RegistryError>(Info {
            meta,
            description: package.description,
        })
    }
    .await;
    match result {
        Ok(info) if as_json => {
            line(out, &info);
            Exit::Success
        }
        Ok(Info { meta, description }) => {
            let _ = writeln!(out, "{}@{}", clean(&meta.id), clean(&meta.version));
            for (key, value) in [
                ("description", clean(&description)),
                ("sha256", clean(&meta.sha256)),
                ("size", meta.size.to_string()),
                ("publisher", clean(&meta.publisher)),
                ("publishedAt", clean(&meta.published_at)),
                ("clientVersion", clean(&meta.client_version)),
                ("yanked", meta.yanked.to_string()),
            ] {
                let _ = writeln!(out, "  {key}: {value}");
            }
            Exit::Success
        }
        Err(error) => fail(&error, err),
    }
}

/// `splice pkg search TEXT [--registry URL] [--json]`: `ID  LATEST  DESCRIPTION` a line, or the
/// registry's `{"packages":[…]}`.
pub async fn search(
    text: &str,
    flag: Option<&str>,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let result = async {
        let registry = Registry::new(&registry_url(flag)?, None)?;
        registry
            .get_json::<SearchResults>(&format!("search?q={}", percent_encode(text)))
            .await
    }
    .await;
    match result {
        Ok(found) if as_json => {
            line(out, &found);
            Exit::Success
        }
        Ok(found) => {
            for package in found.packages {
                let _ = writeln!(
                    out,
                    "{}  {}  {}",
                    clean(&package.id),
                    clean(&package.latest),
                    clean(&package.description)
                );
            }
            Exit::Success
        }
        Err(error) => fail(&error, err),
    }
}

/// `splice pkg yank ID@VERSION [--registry URL]`: needs the saved login of a namespace owner.
pub async fn yank(
    text: &str,
    flag: Option<&str>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let result = async {
        let spec = spec(text)?;
        let Want::Exact(version) = &spec.want else {
            return Err(RegistryError::Usage(format!(
                "`{text}`: yank needs an exact version (namespace/name@VERSION)"
            )));
        };
        let url = registry_url(flag)?;
        let login = credentials::load(&url)?.ok_or_else(|| RegistryError::NotLoggedIn {
            registry: url.clone(),
        })?;
        let registry = Registry::new(&url, Some(login.token))?;
        registry
            .post_empty::<Yanked>(&format!(
                "packages/{}/{}/{version}/yank",
                spec.namespace, spec.name
            ))
            .await?;
        Ok(format!("yanked {}@{version}", spec.id()))
    }
    .await;
    match result {
        Ok(message) => {
            let _ = writeln!(out, "{message}");
            Exit::Success
        }
        Err(error) => fail(&error, err),
    }
}

/// `splice pkg install ID[@VERSION|@RANGE] [--registry URL]`: output as for a local install,
/// with `registry` in the JSON.
pub async fn install(
    layout: &Layout,
    text: &str,
    flag: Option<&str>,
    force: bool,
    as_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let result = async {
        let spec = spec(text)?;
        // SOURCE was no path here: say so, in case a path was meant.
        let url = registry_url(flag).map_err(|e| match e {
            usage @ (RegistryError::Usage(_) | RegistryError::NoRegistry) => {
                RegistryError::Usage(format!(
                    "`{text}` is no file or directory here, so it names a registry package: {usage}"
                ))
            }
            other => other,
        })?;
        let registry = Registry::new(&url, None)?;
        let done = install::install(&registry, layout, &spec, force).await?;
        Ok::<_, RegistryError>((url, done))
    }
    .await;
    match result {
        Ok((url, done)) => {
            if let Some(text) = crate::packages::secrets::install_notice(&done.path) {
                let _ = writeln!(err, "splice: {text}");
            }
            let path = done.path.display().to_string();
            if as_json {
                line(
                    out,
                    &json!({"id": done.id, "version": done.version, "path": path,
                        "sha256": done.sha256, "status": done.outcome.as_str(), "registry": url}),
                );
            } else {
                let _ = writeln!(
                    out,
                    "{} {} {}  {path}  sha256:{}",
                    done.outcome.as_str(),
                    done.id,
                    done.version,
                    done.sha256
                );
            }
            Exit::Success
        }
        Err(error) => fail(&error, err),
    }
}

/// A query parameter's value, percent-encoded (RFC 3986 unreserved characters kept).
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_text_is_percent_encoded() {
        assert_eq!(percent_encode("json tools&x=1"), "json%20tools%26x%3D1");
    }
}
