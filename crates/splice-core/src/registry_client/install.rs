//! Install from a registry: resolve `ns/name[@VERSION|@RANGE]` to a version (yanked versions
//! only when named exactly), read its metadata's sha256, download the archive, refuse it
//! unless its sha256 is that one (before anything is unpacked), install it through the same
//! path as a local archive, and record where it came from in
//! `<data dir>/package-sources/NS/NAME/VERSION.json` (outside the package directory, whose
//! contents are its identity).

use serde::Serialize;
use thiserror::Error;

use super::RegistryError;
use super::http::Registry;
use crate::layout::Layout;
use crate::packages::install::{self, InstallError, Installed};
use crate::packages::installed;
use crate::packages::spec::{PackageSpec, SpecError};
use crate::packages::version::{self, Version, VersionReq};
use crate::registry::api::{PackageVersions, VersionMeta};

/// Which version a spec asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Want {
    Latest,
    Exact(Version),
    Range(VersionReq),
}

/// A parsed `ns/name[@VERSION|@RANGE]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistrySpec {
    pub namespace: String,
    pub name: String,
    pub want: Want,
}

/// Why a text names no registry package (a usage error).
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RegistrySpecError {
    #[error("`{0}` is not namespace/name[@version]")]
    NotASpec(String),
    #[error("`{spec}`: {why}")]
    BadName { spec: String, why: String },
    /// A version or range with build metadata names no package version (they carry none).
    #[error("`{0}`: package versions carry no build metadata (`+…`): name the version without it")]
    BuildMetadata(String),
    #[error("`{version}` is neither a version nor a version range ({why})")]
    NotAVersion { version: String, why: String },
}

impl RegistrySpec {
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    pub fn parse(text: &str) -> Result<RegistrySpec, RegistrySpecError> {
        let spec: PackageSpec = text.parse().map_err(|e| match e {
            SpecError::Name(why) => RegistrySpecError::BadName {
                spec: text.to_string(),
                why,
            },
            _ => RegistrySpecError::NotASpec(text.to_string()),
        })?;
        let want = match spec.version.as_deref().map(str::trim) {
            None => Want::Latest,
            Some(v) if v.contains('+') => {
                return Err(RegistrySpecError::BuildMetadata(v.to_string()));
            }
            Some(v) => match version::parse(v) {
                Ok(exact) => Want::Exact(exact),
                Err(_) => Want::Range(VersionReq::parse(v).map_err(|e| {
                    RegistrySpecError::NotAVersion {
                        version: v.to_string(),
                        why: e.to_string(),
                    }
                })?),
            },
        };
        Ok(RegistrySpec {
            namespace: spec.namespace,
            name: spec.name,
            want,
        })
    }
}

/// Whether an install SOURCE names a registry package rather than a path.
pub fn looks_like_spec(source: &str) -> bool {
    RegistrySpec::parse(source).is_ok()
}

/// One version from the registry's list.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub version: Version,
    pub yanked: bool,
}

pub fn listed(package: &PackageVersions) -> Vec<Listed> {
    package
        .versions
        .iter()
        .filter_map(|v| {
            // A version with build metadata (refused at publish since, but perhaps in an
            // older index) has the precedence of another: never a candidate.
            Some(Listed {
                version: version::parse_package(&v.version).ok()?,
                yanked: v.yanked,
            })
        })
        .collect()
}

/// The version `want` resolves to among `versions`: exact may be yanked; a range or the latest
/// never is (the latest: the highest release, else the highest pre-release).
pub fn pick(versions: &[Listed], want: &Want) -> Option<Version> {
    let live = versions.iter().filter(|v| !v.yanked);
    let found = match want {
        Want::Exact(version) => versions.iter().find(|v| &v.version == version),
        Want::Range(req) => live
            .filter(|v| req.matches(&v.version))
            .max_by(|a, b| a.version.cmp_precedence(&b.version)),
        Want::Latest => version::preferred(live, |v| &v.version),
    };
    found.map(|v| v.version.clone())
}

/// The registry's `{id, description, versions}` of the package; one it does not have is a
/// failure that says how to find the right name.
pub async fn package(
    registry: &Registry,
    spec: &RegistrySpec,
) -> Result<PackageVersions, RegistryError> {
    let path = format!("packages/{}/{}", spec.namespace, spec.name);
    registry.get_json(&path).await.map_err(|e| match e {
        RegistryError::Refused { status: 404, .. } => RegistryError::Failed(format!(
            "no package {} on {}: look for it with `splice pkg search {} --registry {}`",
            spec.id(),
            registry.url,
            spec.name,
            registry.url
        )),
        other => other,
    })
}

/// Resolve a spec to a version of the registry's.
pub async fn resolve(registry: &Registry, spec: &RegistrySpec) -> Result<Version, RegistryError> {
    let package = package(registry, spec).await?;
    let versions = listed(&package);
    pick(&versions, &spec.want).ok_or_else(|| {
        let asked = match &spec.want {
            Want::Latest => String::new(),
            Want::Exact(v) => format!("@{v}"),
            Want::Range(r) => format!("@{r}"),
        };
        RegistryError::Failed(format!(
            "{}{asked}: no version of it on {} matches (yanked versions are only installed when \
             named exactly)",
            spec.id(),
            registry.url
        ))
    })
}

/// Resolve, download, verify, install, record.
pub async fn install(
    registry: &Registry,
    layout: &Layout,
    spec: &RegistrySpec,
    force: bool,
) -> Result<Installed, RegistryError> {
    let version = resolve(registry, spec).await?.to_string();
    let base = format!("packages/{}/{}/{version}", spec.namespace, spec.name);
    let meta: VersionMeta = registry.get_json(&base).await?;
    let expected = Some(meta.sha256.as_str())
        .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| RegistryError::BadResponse {
            registry: registry.url.clone(),
            message: format!("the metadata of {}@{version} has no sha256", spec.id()),
        })?
        .to_ascii_lowercase();
    let bytes = registry.get_bytes(&format!("{base}/archive")).await?;
    let identity = install::Identity {
        namespace: &spec.namespace,
        name: &spec.name,
        version: &version,
    };
    let installed =
        install::install_archive_as(layout, &bytes, Some(&expected), Some(identity), force);
    let done = installed.map_err(|e| match e {
        InstallError::Checksum { expected, actual } => RegistryError::Failed(format!(
            "the archive of {}@{version} downloaded from {} has sha256 {actual}, but its \
             metadata says {expected}: nothing was installed",
            spec.id(),
            registry.url
        )),
        InstallError::Invalid(issues) => {
            let lines: Vec<String> = issues.iter().map(ToString::to_string).collect();
            RegistryError::Failed(format!(
                "{}@{version} from {} is not a valid package:\n{}",
                spec.id(),
                registry.url,
                lines.join("\n")
            ))
        }
        InstallError::NotExpected { expected, found } => RegistryError::Failed(format!(
            "the archive {} serves as {expected} holds {found}: nothing was installed",
            registry.url
        )),
        other => RegistryError::Failed(format!("cannot install {}: {other}", spec.id())),
    })?;
    record_source(layout, spec, &done, &registry.url)?;
    Ok(done)
}

/// `package-sources/NS/NAME/VERSION.json`: where an installed version came from.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SourceRecord<'a> {
    registry: &'a str,
    id: &'a str,
    version: &'a str,
    sha256: &'a str,
    installed_at: String,
}

/// Record where `done` (the package `spec` names: the install checked its identity) came from.
fn record_source(
    layout: &Layout,
    spec: &RegistrySpec,
    done: &Installed,
    registry: &str,
) -> Result<(), RegistryError> {
    let path = installed::source_record(layout, &spec.namespace, &spec.name, &done.version);
    let record = SourceRecord {
        registry,
        id: &done.id,
        version: &done.version,
        sha256: &done.sha256,
        installed_at: crate::ids::now_rfc3339(),
    };
    let failed = |e: std::io::Error| {
        RegistryError::Failed(format!(
            "cannot record the source in {}: {e}",
            path.display()
        ))
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    let text = serde_json::to_string_pretty(&record).map_err(|e| {
        RegistryError::Failed(format!(
            "cannot record the source in {}: {e}",
            path.display()
        ))
    })?;
    std::fs::write(&path, format!("{text}\n")).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions() -> Vec<Listed> {
        [
            ("0.1.0", false),
            ("0.1.5", false),
            ("0.2.0", true),
            ("1.0.0-rc.1", false),
        ]
        .into_iter()
        .map(|(v, yanked)| Listed {
            version: version::parse(v).expect("parse v"),
            yanked,
        })
        .collect()
    }

    fn pick_for(spec: &str) -> Option<String> {
        let spec = RegistrySpec::parse(spec).expect("parse spec");
        pick(&versions(), &spec.want).map(|v| v.to_string())
    }

    #[test]
    fn ranges_skip_yanked_versions_and_exact_versions_do_not() {
        assert_eq!(pick_for("acme/x").as_deref(), Some("0.1.5"));
        assert_eq!(pick_for("acme/x@^0.1").as_deref(), Some("0.1.5"));
        assert_eq!(pick_for("acme/x@~0.1.0").as_deref(), Some("0.1.5"));
        assert_eq!(pick_for("acme/x@>=0.1.0, <0.1.5").as_deref(), Some("0.1.0"));
        assert_eq!(pick_for("acme/x@^0.2"), None);
        assert_eq!(pick_for("acme/x@0.2.0").as_deref(), Some("0.2.0"));
        assert_eq!(pick_for("acme/x@9.9.9"), None);
        assert_eq!(pick_for("acme/x@1.0.0-rc.1").as_deref(), Some("1.0.0-rc.1"));
    }

    /// An index that holds `1.0.0+evil` beside `1.0.0` (published before the registry refused
    /// build metadata): no spec resolves to it.
    #[test]
    fn versions_with_build_metadata_are_never_candidates() {
        let package: PackageVersions = serde_json::from_value(serde_json::json!({"versions": [
            {"version": "1.0.0", "yanked": false},
            {"version": "1.0.0+evil", "yanked": false},
            {"version": "1.0.1+evil", "yanked": false},
        ]}))
        .expect("parse");
        let versions = listed(&package);
        assert_eq!(versions.len(), 1, "{versions:?}");
        for spec in ["acme/x", "acme/x@^1.0", "acme/x@1.0.0", "acme/x@>=1.0.0"] {
            let spec = RegistrySpec::parse(spec).expect("parse spec");
            assert_eq!(
                pick(&versions, &spec.want)
                    .map(|v| v.to_string())
                    .as_deref(),
                Some("1.0.0")
            );
        }
        for spec in ["acme/x@1.0.0+evil", "acme/x@^1.0+evil"] {
            assert!(RegistrySpec::parse(spec).is_err(), "{spec}");
        }
    }

    #[test]
    fn specs_are_ids_with_a_version_or_a_range() {
        assert!(RegistrySpec::parse("acme/x@not a range").is_err());
        assert!(RegistrySpec::parse("./acme/x").is_err());
        assert!(RegistrySpec::parse("acme").is_err());
        assert!(RegistrySpec::parse("../x").is_err());
        assert!(looks_like_spec("acme/json@0.1.0"));
    }
}
