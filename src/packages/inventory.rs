//! What is installed under `$SPLICE_DATA_DIR/packages/`: the packages, their versions, and
//! the one a run offers (the highest release, else the highest pre-release, as `resolve`
//! picks). Names that are not a namespace, name or version (staging directories start with a
//! dot) are not packages.

use std::path::{Path, PathBuf};

use super::installed::{ResolveError, compare};
use super::names::{name_problem, semver_problem};

/// The directory all installed packages are under.
pub fn packages_root(data_dir: &Path) -> PathBuf {
    data_dir.join("packages")
}

/// A parsed `ns/name[@version]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub namespace: String,
    pub name: String,
    pub version: Option<String>,
}

impl Spec {
    pub fn parse(spec: &str) -> Result<Spec, ResolveError> {
        let bad = |why: String| ResolveError::BadSpec {
            spec: spec.to_string(),
            why,
        };
        let (id, version) = match spec.split_once('@') {
            Some((id, version)) => (id, Some(version.to_string())),
            None => (spec, None),
        };
        let (namespace, name) = id
            .split_once('/')
            .ok_or_else(|| bad("no `/` between namespace and name".into()))?;
        for part in [namespace, name] {
            if let Some(why) = name_problem(part) {
                return Err(bad(why));
            }
        }
        if let Some(why) = version.as_deref().and_then(semver_problem) {
            return Err(bad(why));
        }
        Ok(Spec {
            namespace: namespace.to_string(),
            name: name.to_string(),
            version,
        })
    }

    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The installed versions of `ns/name`, lowest first. Entries that are not a version (a
/// staging directory, a stray file) are not versions.
pub fn versions(data_dir: &Path, ns: &str, name: &str) -> Vec<String> {
    let dir = packages_root(data_dir).join(ns).join(name);
    let mut found: Vec<String> = subdirs(&dir)
        .into_iter()
        .filter(|v| semver_problem(v).is_none())
        .collect();
    found.sort_by(|a, b| compare(a, b));
    found
}

/// Every installed `(namespace, name)`, sorted.
pub fn ids(data_dir: &Path) -> Vec<(String, String)> {
    let root = packages_root(data_dir);
    let mut out = Vec::new();
    for ns in subdirs(&root)
        .into_iter()
        .filter(|n| name_problem(n).is_none())
    {
        for name in subdirs(&root.join(&ns))
            .into_iter()
            .filter(|n| name_problem(n).is_none())
        {
            out.push((ns.clone(), name));
        }
    }
    out.sort();
    out
}

/// Names of the real directories (not links) in `dir`; none when it cannot be read.
fn subdirs(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect()
}

/// The version a run offers: the highest release, else the highest pre-release.
pub fn highest(data_dir: &Path, ns: &str, name: &str) -> Option<String> {
    let versions = versions(data_dir, ns, name);
    let is_pre = |v: &String| v.split('+').next().unwrap_or_default().contains('-');
    let release = versions.iter().rev().find(|v| !is_pre(v));
    release.or(versions.last()).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::installed::package_dir;

    #[test]
    fn versions_ids_and_the_offered_version() {
        let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for v in ["0.9.0", "0.10.0", "0.11.0-rc.1"] {
            std::fs::create_dir_all(package_dir(data.path(), "splice", "json", v))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::create_dir_all(package_dir(data.path(), "acme", "pre", "1.0.0-rc.1"))
            .unwrap_or_else(|e| panic!("{e}"));
        for stray in ["splice/json/.staging", ".staging-x/a", "Bad/name"] {
            std::fs::create_dir_all(packages_root(data.path()).join(stray))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        assert_eq!(
            versions(data.path(), "splice", "json"),
            ["0.9.0", "0.10.0", "0.11.0-rc.1"]
        );
        assert_eq!(
            highest(data.path(), "splice", "json").as_deref(),
            Some("0.10.0")
        );
        assert_eq!(
            highest(data.path(), "acme", "pre").as_deref(),
            Some("1.0.0-rc.1")
        );
        assert_eq!(
            ids(data.path()),
            [
                ("acme".to_string(), "pre".to_string()),
                ("splice".into(), "json".into())
            ]
        );
        for bad in [
            "json",
            "splice/../x",
            "Splice/json",
            "splice/json@v1",
            "a/b/c",
        ] {
            assert!(
                matches!(Spec::parse(bad), Err(ResolveError::BadSpec { .. })),
                "{bad}"
            );
        }
    }
}
