//! Where installed packages live: `<data dir>/packages/<namespace>/<name>/<version>/`, and
//! `namespace/name[@version]` resolved to one of them (the highest version when none is given:
//! the highest release, or the highest pre-release when there is no release).

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use super::names::{name_problem, semver_problem};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("`{spec}` is not a package (a directory, or namespace/name[@version]): {why}")]
    BadSpec { spec: String, why: String },
    #[error("{0} is not installed")]
    NotInstalled(String),
}

/// The directory of one installed version.
pub fn package_dir(data_dir: &Path, namespace: &str, name: &str, version: &str) -> PathBuf {
    data_dir
        .join("packages")
        .join(namespace)
        .join(name)
        .join(version)
}

/// Where an installed version came from (a registry install writes it), kept outside the
/// package directory so the installed files stay exactly what was published.
pub fn source_record(data_dir: &Path, namespace: &str, name: &str, version: &str) -> PathBuf {
    data_dir
        .join("package-sources")
        .join(namespace)
        .join(name)
        .join(format!("{version}.json"))
}

/// `namespace/name[@version]` → its installed directory.
pub fn resolve(data_dir: &Path, spec: &str) -> Result<PathBuf, ResolveError> {
    let bad = |why: String| ResolveError::BadSpec {
        spec: spec.to_string(),
        why,
    };
    let (id, version) = match spec.split_once('@') {
        Some((id, version)) => (id, Some(version)),
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
    if let Some(version) = version {
        if let Some(why) = semver_problem(version) {
            return Err(bad(why));
        }
        let dir = package_dir(data_dir, namespace, name, version);
        return if dir.is_dir() {
            Ok(dir)
        } else {
            Err(ResolveError::NotInstalled(spec.to_string()))
        };
    }
    let versions_dir = data_dir.join("packages").join(namespace).join(name);
    let versions: Vec<String> = std::fs::read_dir(&versions_dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|v| semver_problem(v).is_none())
                .collect()
        })
        .unwrap_or_default();
    highest(&versions)
        .map(|version| versions_dir.join(version))
        .ok_or_else(|| ResolveError::NotInstalled(spec.to_string()))
}

/// The highest release, else the highest pre-release.
fn highest(versions: &[String]) -> Option<&String> {
    let best = |pre: bool| {
        versions
            .iter()
            .filter(|v| is_prerelease(v) == pre)
            .max_by(|a, b| compare(a, b))
    };
    best(false).or_else(|| best(true))
}

fn is_prerelease(version: &str) -> bool {
    version.split('+').next().unwrap_or_default().contains('-')
}

/// SemVer precedence of two valid versions (build metadata ignored).
pub fn compare(a: &str, b: &str) -> Ordering {
    let split = |v: &str| {
        let v = v.split('+').next().unwrap_or_default();
        let (core, pre) = v.split_once('-').unwrap_or((v, ""));
        let core: Vec<u64> = core.split('.').filter_map(|p| p.parse().ok()).collect();
        (core, pre.to_string())
    };
    let ((core_a, pre_a), (core_b, pre_b)) = (split(a), split(b));
    core_a
        .cmp(&core_b)
        .then_with(|| match (pre_a.is_empty(), pre_b.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => compare_pre(&pre_a, &pre_b),
        })
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let order = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if order != Ordering::Equal {
                    return order;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_the_highest_release_or_the_version_asked_for() {
        let data = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for version in ["0.9.0", "0.10.0", "0.10.1-rc.1", "not-a-version"] {
            std::fs::create_dir_all(package_dir(data.path(), "splice", "json", version))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let dir = |v: &str| package_dir(data.path(), "splice", "json", v);
        assert_eq!(resolve(data.path(), "splice/json"), Ok(dir("0.10.0")));
        assert_eq!(resolve(data.path(), "splice/json@0.9.0"), Ok(dir("0.9.0")));
        assert_eq!(
            resolve(data.path(), "splice/json@1.0.0"),
            Err(ResolveError::NotInstalled("splice/json@1.0.0".into()))
        );
        assert!(matches!(
            resolve(data.path(), "splice/../x"),
            Err(ResolveError::BadSpec { .. })
        ));
        assert!(matches!(
            resolve(data.path(), "splice/json@../../x"),
            Err(ResolveError::BadSpec { .. })
        ));
        assert!(matches!(
            resolve(data.path(), "other/json"),
            Err(ResolveError::NotInstalled(_))
        ));
    }

    #[test]
    fn semver_precedence() {
        let mut versions = [
            "1.0.0",
            "1.0.0-rc.1",
            "1.0.0-beta.11",
            "1.0.0-beta.2",
            "1.0.0-beta",
            "1.0.0-alpha.1",
            "1.0.0-alpha",
            "0.10.0",
            "0.9.9",
        ];
        versions.sort_by(|a, b| compare(a, b));
        assert_eq!(
            versions,
            [
                "0.9.9",
                "0.10.0",
                "1.0.0-alpha",
                "1.0.0-alpha.1",
                "1.0.0-beta",
                "1.0.0-beta.2",
                "1.0.0-beta.11",
                "1.0.0-rc.1",
                "1.0.0"
            ]
        );
        let only_pre = ["2.0.0-rc.1".to_string(), "2.0.0-rc.2".to_string()];
        assert_eq!(highest(&only_pre).map(String::as_str), Some("2.0.0-rc.2"));
    }
}
