//! `splice publish`: validate as `pkg validate` does, pack deterministically, and upload the
//! archive with the saved login (`--dry-run` stops before the upload and needs no login).

use std::path::Path;

use thiserror::Error;

use super::RegistryError;
use super::credentials;
use super::http::Registry;
use crate::packages::validate::check_dir;
use crate::packages::{Issue, archive};
use crate::registry::api::Published;

/// What was (or would be) published.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub namespace: String,
    pub name: String,
    pub version: String,
    pub sha256: String,
    pub bytes: Vec<u8>,
}

impl Prepared {
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[derive(Debug, Error)]
pub enum PrepareError {
    /// The package breaks these rules (exit 2, as `pkg validate`).
    #[error("the package is not valid")]
    Invalid(Vec<Issue>),
    #[error("cannot pack: {0}")]
    Pack(archive::ArchiveError),
}

/// Validate and pack `dir`.
pub fn prepare(dir: &Path) -> Result<Prepared, PrepareError> {
    let report = check_dir(dir);
    let Some(manifest) = report.manifest.clone().filter(|_| report.valid()) else {
        return Err(PrepareError::Invalid(report.issues));
    };
    let packed = archive::pack(dir).map_err(|e| match e {
        archive::ArchiveError::Refused(issues) => PrepareError::Invalid(issues),
        other => PrepareError::Pack(other),
    })?;
    Ok(Prepared {
        namespace: manifest.namespace,
        name: manifest.name,
        version: manifest.version,
        sha256: packed.sha256,
        bytes: packed.bytes,
    })
}

/// Upload with the saved login for `registry`; the registry's answer. The sha256 it reports
/// must be the one packed here.
pub async fn upload(registry_url: &str, prepared: &Prepared) -> Result<Published, RegistryError> {
    let login = credentials::load(registry_url)?.ok_or_else(|| RegistryError::NotLoggedIn {
        registry: registry_url.to_string(),
    })?;
    let registry = Registry::new(registry_url, Some(login.token))?;
    let path = format!(
        "packages/{}/{}/{}",
        prepared.namespace, prepared.name, prepared.version
    );
    let answer: Published = registry.put_archive(&path, prepared.bytes.clone()).await?;
    // A registry that names no sha256 is taken at its word, as it always was.
    let stored = &answer.sha256;
    if !stored.is_empty() && !stored.eq_ignore_ascii_case(&prepared.sha256) {
        return Err(RegistryError::BadResponse {
            registry: registry_url.to_string(),
            message: format!(
                "it stored sha256 {stored} for an archive whose sha256 is {}",
                prepared.sha256
            ),
        });
    }
    Ok(answer)
}
