//! Where installed packages live: `<data dir>/packages/<namespace>/<name>/<version>/`, and
//! `namespace/name[@version]` resolved to one of them (the highest version when none is given:
//! the highest release, or the highest pre-release when there is no release).

use crate::layout::Layout;
use std::path::PathBuf;

use super::inventory;
use super::spec::{PackageSpec, SpecError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("`{spec}` is not a package (a directory, or namespace/name[@version]): {why}")]
    BadSpec { spec: String, why: SpecError },
    #[error("{0} is not installed")]
    NotInstalled(String),
}

/// The directory of one installed version.
pub fn package_dir(layout: &Layout, namespace: &str, name: &str, version: &str) -> PathBuf {
    layout.packages().join(namespace).join(name).join(version)
}

/// Where an installed version came from (a registry install writes it), kept outside the
/// package directory so the installed files stay exactly what was published.
pub fn source_record(layout: &Layout, namespace: &str, name: &str, version: &str) -> PathBuf {
    layout
        .package_sources()
        .join(namespace)
        .join(name)
        .join(format!("{version}.json"))
}

/// `namespace/name[@version]` → its installed directory.
pub fn resolve(layout: &Layout, spec: &str) -> Result<PathBuf, ResolveError> {
    let (parsed, _) = PackageSpec::exact(spec).map_err(|why| ResolveError::BadSpec {
        spec: spec.to_string(),
        why,
    })?;
    let (namespace, name) = (&parsed.namespace, &parsed.name);
    let version = match parsed.version {
        Some(version) => Some(version),
        None => inventory::highest(layout, namespace, name),
    };
    version
        .map(|version| package_dir(layout, namespace, name, &version))
        .filter(|dir| dir.is_dir())
        .ok_or_else(|| ResolveError::NotInstalled(spec.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_the_highest_release_or_the_version_asked_for() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        for version in ["0.9.0", "0.10.0", "0.10.1-rc.1", "not-a-version"] {
            std::fs::create_dir_all(package_dir(
                &crate::layout::Layout::at(data.path()),
                "splice",
                "json",
                version,
            ))
            .expect("create");
        }
        let dir =
            |v: &str| package_dir(&crate::layout::Layout::at(data.path()), "splice", "json", v);
        assert_eq!(
            resolve(&crate::layout::Layout::at(data.path()), "splice/json"),
            Ok(dir("0.10.0"))
        );
        assert_eq!(
            resolve(&crate::layout::Layout::at(data.path()), "splice/json@0.9.0"),
            Ok(dir("0.9.0"))
        );
        assert_eq!(
            resolve(&crate::layout::Layout::at(data.path()), "splice/json@1.0.0"),
            Err(ResolveError::NotInstalled("splice/json@1.0.0".into()))
        );
        assert!(matches!(
            resolve(&crate::layout::Layout::at(data.path()), "splice/../x"),
            Err(ResolveError::BadSpec { .. })
        ));
        assert!(matches!(
            resolve(
                &crate::layout::Layout::at(data.path()),
                "splice/json@../../x"
            ),
            Err(ResolveError::BadSpec { .. })
        ));
        assert!(matches!(
            resolve(&crate::layout::Layout::at(data.path()), "other/json"),
            Err(ResolveError::NotInstalled(_))
        ));
    }
}
