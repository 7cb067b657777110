//! What is installed under `$SPLICE_DATA_DIR/packages/`: the packages, their versions, and
//! the one a run offers (the highest release, else the highest pre-release, as `resolve`
//! picks). Names that are not a namespace, name or version (staging directories start with a
//! dot) are not packages.

use crate::layout::Layout;
use std::path::Path;

use super::names::name_problem;
use super::version::{self, Version};

/// The installed versions of `ns/name`, lowest first. Entries that are not a version (a
/// staging directory, a stray file) are not versions.
pub fn versions(layout: &Layout, ns: &str, name: &str) -> Vec<String> {
    let mut found = parsed_versions(layout, ns, name);
    found.sort_by(|(a, _), (b, _)| a.cmp_precedence(b));
    found.into_iter().map(|(_, text)| text).collect()
}

/// The installed versions of `ns/name`, parsed, with their directory names.
fn parsed_versions(layout: &Layout, ns: &str, name: &str) -> Vec<(Version, String)> {
    let dir = layout.packages().join(ns).join(name);
    subdirs(&dir)
        .into_iter()
        .filter_map(|text| Some((version::parse(&text).ok()?, text)))
        .collect()
}

/// Every installed `(namespace, name)`, sorted.
pub fn ids(layout: &Layout) -> Vec<(String, String)> {
    let root = layout.packages();
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
pub fn highest(layout: &Layout, ns: &str, name: &str) -> Option<String> {
    version::preferred(parsed_versions(layout, ns, name), |(v, _)| v).map(|(_, text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::installed::package_dir;

    #[test]
    fn versions_ids_and_the_offered_version() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        for v in ["0.9.0", "0.10.0", "0.11.0-rc.1"] {
            std::fs::create_dir_all(package_dir(
                &crate::layout::Layout::at(data.path()),
                "splice",
                "json",
                v,
            ))
            .expect("create");
        }
        std::fs::create_dir_all(package_dir(
            &crate::layout::Layout::at(data.path()),
            "acme",
            "pre",
            "1.0.0-rc.1",
        ))
        .expect("create");
        for stray in ["splice/json/.staging", ".staging-x/a", "Bad/name"] {
            std::fs::create_dir_all(Layout::at(data.path()).packages().join(stray))
                .expect("create");
        }
        assert_eq!(
            versions(&crate::layout::Layout::at(data.path()), "splice", "json"),
            ["0.9.0", "0.10.0", "0.11.0-rc.1"]
        );
        assert_eq!(
            highest(&crate::layout::Layout::at(data.path()), "splice", "json").as_deref(),
            Some("0.10.0")
        );
        assert_eq!(
            highest(&crate::layout::Layout::at(data.path()), "acme", "pre").as_deref(),
            Some("1.0.0-rc.1")
        );
        assert_eq!(
            ids(&crate::layout::Layout::at(data.path())),
            [
                ("acme".to_string(), "pre".to_string()),
                ("splice".into(), "json".into())
            ]
        );
    }
}
