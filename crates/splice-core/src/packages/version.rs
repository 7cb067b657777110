//! Package versions, parsed and ordered by the `semver` crate: SemVer 2.0.0 exactly, ordered
//! by precedence (build metadata ignored), and the version a package name alone stands for.

pub use semver::{Version, VersionReq};

/// The largest MAJOR, MINOR or PATCH: nine digits, as the manifest grammar has always allowed.
const MAX_CORE: u64 = 999_999_999;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("`{0}` is not a semantic version (MAJOR.MINOR.PATCH, e.g. 1.0.0)")]
    NotSemver(String),
    #[error("`{0}` has build metadata (`+…`), which package versions may not carry")]
    BuildMetadata(String),
}

/// SemVer 2.0.0, exactly (`1.2.3`, `1.2.3-rc.1+build.5`; no `v`, no leading zeros).
pub fn parse(text: &str) -> Result<Version, VersionError> {
    semver::Version::parse(text)
        .ok()
        .filter(|v| v.major <= MAX_CORE && v.minor <= MAX_CORE && v.patch <= MAX_CORE)
        .ok_or_else(|| VersionError::NotSemver(text.to_string()))
}

/// A package's version: SemVer without build metadata. `1.0.0+evil` has the precedence of
/// `1.0.0`, so a range could pick either; a version must name one package.
pub fn parse_package(text: &str) -> Result<Version, VersionError> {
    let version = parse(text)?;
    if version.build.is_empty() {
        Ok(version)
    } else {
        Err(VersionError::BuildMetadata(text.to_string()))
    }
}

/// The version a package name without a version stands for among `items`: the highest
/// release by precedence, else the highest pre-release.
pub fn preferred<T>(
    items: impl IntoIterator<Item = T>,
    version: impl Fn(&T) -> &Version,
) -> Option<T> {
    let (mut release, mut pre): (Option<T>, Option<T>) = (None, None);
    for item in items {
        let slot = if version(&item).pre.is_empty() {
            &mut release
        } else {
            &mut pre
        };
        if slot
            .as_ref()
            .is_none_or(|best| version(&item).cmp_precedence(version(best)).is_ge())
        {
            *slot = Some(item);
        }
    }
    release.or(pre)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grammar itself is `names::tests::semver_is_strict`'s; here what lies beside it.
    #[test]
    fn versions_are_strict_semver_within_nine_digits() {
        assert!(parse("999999999.999999999.999999999").is_ok());
        for bad in ["", " 1.0.0", "1234567890.0.0", "0.1234567890.0"] {
            assert_eq!(
                parse(bad),
                Err(VersionError::NotSemver(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            parse_package("1.0.0+evil"),
            Err(VersionError::BuildMetadata("1.0.0+evil".into()))
        );
    }

    #[test]
    fn the_preferred_version_is_the_highest_release_else_pre_release() {
        let parsed =
            |list: &[&str]| -> Vec<Version> { list.iter().filter_map(|v| parse(v).ok()).collect() };
        let pick = |list: &[&str]| preferred(parsed(list), |v| v).map(|v| v.to_string());
        assert_eq!(
            pick(&["0.9.0", "0.10.0", "0.10.1-rc.1"]).as_deref(),
            Some("0.10.0")
        );
        assert_eq!(
            pick(&["2.0.0-rc.1", "2.0.0-rc.2", "2.0.0-beta.11"]).as_deref(),
            Some("2.0.0-rc.2")
        );
        assert_eq!(pick(&[]), None);
    }

    #[test]
    fn semver_precedence() {
        let mut versions: Vec<Version> = [
            "1.0.0",
            "1.0.0-rc.1",
            "1.0.0-beta.11",
            "1.0.0-beta.2",
            "1.0.0-beta",
            "1.0.0-alpha.1",
            "1.0.0-alpha",
            "0.10.0",
            "0.9.9",
        ]
        .iter()
        .filter_map(|v| parse(v).ok())
        .collect();
        versions.sort_by(Version::cmp_precedence);
        let sorted: Vec<String> = versions.iter().map(ToString::to_string).collect();
        assert_eq!(
            sorted,
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
    }
}
