//! Where installed packages live, `$SPLICE_DATA_DIR/packages/<ns>/<name>/<version>/`, and
//! finding one by `ns/name[@version]` (the highest version by SemVer precedence when none is
//! given).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::names::{name_problem, semver_problem};

#[derive(Debug, Error, PartialEq, Eq)]
pub enum ResolveError {
    #[error("`{spec}` is not a package name: {why} (expected NAMESPACE/NAME[@VERSION])")]
    BadSpec { spec: String, why: String },
    #[error("{0} is not installed")]
    NotInstalled(String),
}

/// The directory all installed packages are under.
pub fn packages_root(data_dir: &Path) -> PathBuf {
    data_dir.join("packages")
}

/// The directory of one installed version (which may not exist).
pub fn package_dir(data_dir: &Path, ns: &str, name: &str, version: &str) -> PathBuf {
    packages_root(data_dir).join(ns).join(name).join(version)
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

/// The directory of `ns/name@version`, or of the highest installed version of `ns/name`.
pub fn resolve(data_dir: &Path, spec: &str) -> Result<PathBuf, ResolveError> {
    let spec = Spec::parse(spec)?;
    let version = match &spec.version {
        Some(version) => Some(version.clone()),
        None => versions(data_dir, &spec.namespace, &spec.name).pop(),
    };
    version
        .map(|v| package_dir(data_dir, &spec.namespace, &spec.name, &v))
        .filter(|dir| dir.is_dir())
        .ok_or_else(|| ResolveError::NotInstalled(spec.id()))
}

/// The installed versions of `ns/name`, lowest first. Entries that are not a version (a
/// staging directory, a stray file) are not versions.
pub fn versions(data_dir: &Path, ns: &str, name: &str) -> Vec<String> {
    let dir = packages_root(data_dir).join(ns).join(name);
    let mut found: Vec<String> = subdirs(&dir)
        .into_iter()
        .filter(|v| semver_problem(v).is_none())
        .collect();
    found.sort_by(|a, b| compare_versions(a, b));
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

/// SemVer 2.0.0 precedence of two valid versions (build metadata ignored; a pre-release is
/// lower than its release; numeric identifiers compare as numbers and below alphanumeric ones).
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn split(v: &str) -> (Vec<u64>, Option<&str>) {
        let v = v.split_once('+').map_or(v, |(core, _)| core);
        let (core, pre) = match v.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (v, None),
        };
        (
            core.split('.').map(|n| n.parse().unwrap_or(0)).collect(),
            pre,
        )
    }
    let ((core_a, pre_a), (core_b, pre_b)) = (split(a), split(b));
    core_a.cmp(&core_b).then_with(|| match (pre_a, pre_b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => {
            let (mut xs, mut ys) = (x.split('.'), y.split('.'));
            loop {
                match (xs.next(), ys.next()) {
                    (None, None) => return Ordering::Equal,
                    (None, Some(_)) => return Ordering::Less,
                    (Some(_), None) => return Ordering::Greater,
                    (Some(i), Some(j)) => {
                        let order = match (i.parse::<u64>(), j.parse::<u64>()) {
                            (Ok(m), Ok(n)) => m.cmp(&n),
                            (Ok(_), Err(_)) => Ordering::Less,
                            (Err(_), Ok(_)) => Ordering::Greater,
                            (Err(_), Err(_)) => i.cmp(j),
                        };
                        if order != Ordering::Equal {
                            return order;
                        }
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_semver_precedence() {
        let mut versions = vec![
            "1.0.0",
            "0.10.0",
            "0.9.0",
            "1.0.0-rc.1",
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-2",
            "1.0.0-10",
        ];
        versions.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            versions,
            [
                "0.9.0",
                "0.10.0",
                "1.0.0-2",
                "1.0.0-10",
                "1.0.0-alpha",
                "1.0.0-alpha.1",
                "1.0.0-rc.1",
                "1.0.0"
            ]
        );
        assert_eq!(compare_versions("1.0.0+a", "1.0.0+b"), Ordering::Equal);
    }

    #[test]
    fn resolve_picks_the_highest_version_and_refuses_bad_specs() {
        let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for v in ["0.9.0", "0.10.0", "0.11.0-rc.1"] {
            std::fs::create_dir_all(package_dir(data.path(), "splice", "json", v))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::create_dir_all(packages_root(data.path()).join("splice/json/.staging"))
            .unwrap_or_else(|e| panic!("{e}"));
        let got = resolve(data.path(), "splice/json").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            got.ends_with("splice/json/0.11.0-rc.1"),
            "{}",
            got.display()
        );
        let got = resolve(data.path(), "splice/json@0.9.0").unwrap_or_else(|e| panic!("{e}"));
        assert!(got.ends_with("splice/json/0.9.0"));
        assert_eq!(
            resolve(data.path(), "splice/json@1.0.0"),
            Err(ResolveError::NotInstalled("splice/json".into()))
        );
        for bad in [
            "json",
            "splice/../x",
            "Splice/json",
            "splice/json@v1",
            "a/b/c",
        ] {
            assert!(
                matches!(resolve(data.path(), bad), Err(ResolveError::BadSpec { .. })),
                "{bad}"
            );
        }
        assert_eq!(ids(data.path()), [("splice".into(), "json".into())]);
    }
}
