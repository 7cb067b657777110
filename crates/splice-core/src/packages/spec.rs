//! `namespace/name[@version]`, the one way a package is named on the command line: parsed
//! here, for what is installed (`pkg run|remove`) and for a registry (`pkg install|info|yank`).
//! The text after `@` is kept as written: an installed package needs an exact version, a
//! registry also takes a range.

use std::fmt;
use std::str::FromStr;

use super::names::name_problem;
use super::version::{self, Version, VersionError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("no `/` between namespace and name")]
    NoSlash,
    /// The namespace or the name breaks the name grammar.
    #[error("{0}")]
    Name(String),
    #[error("{0}")]
    Version(#[from] VersionError),
}

/// A parsed `namespace/name[@version]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSpec {
    pub namespace: String,
    pub name: String,
    /// What followed the first `@`, as written.
    pub version: Option<String>,
}

impl PackageSpec {
    /// `namespace/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// A spec whose version, when given, is exact SemVer (what is installed is looked up by
    /// its version).
    pub fn exact(text: &str) -> Result<(PackageSpec, Option<Version>), SpecError> {
        let spec: PackageSpec = text.parse()?;
        let version = spec.version.as_deref().map(version::parse).transpose()?;
        Ok((spec, version))
    }
}

impl FromStr for PackageSpec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<PackageSpec, SpecError> {
        let (id, version) = match text.split_once('@') {
            Some((id, version)) => (id, Some(version.to_string())),
            None => (text, None),
        };
        let (namespace, name) = id.split_once('/').ok_or(SpecError::NoSlash)?;
        for part in [namespace, name] {
            if let Some(why) = name_problem(part) {
                return Err(SpecError::Name(why));
            }
        }
        Ok(PackageSpec {
            namespace: namespace.to_string(),
            name: name.to_string(),
            version,
        })
    }
}

impl fmt::Display for PackageSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        match &self.version {
            Some(version) => write!(f, "@{version}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        for text in [
            "acme/json",
            "acme/json@1.0.0",
            "acme/json@^1.2",
            "a/b@>=1, <2",
        ] {
            let spec: PackageSpec = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(spec.to_string(), text);
        }
        let spec: PackageSpec = "acme/json@1.0.0".parse().expect("parse");
        assert_eq!(spec.id(), "acme/json");
        assert_eq!(spec.version.as_deref(), Some("1.0.0"));
        assert_eq!("json".parse::<PackageSpec>(), Err(SpecError::NoSlash));
        for bad in ["splice/../x", "Splice/json", "a/b/c", "./acme/x", "../x"] {
            assert!(
                matches!(bad.parse::<PackageSpec>(), Err(SpecError::Name(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_installed_spec_needs_an_exact_version() {
        let exact = |text: &str| PackageSpec::exact(text).map(|(_, v)| v.map(|v| v.to_string()));
        assert_eq!(exact("a/b@1.0.0-rc.1"), Ok(Some("1.0.0-rc.1".into())));
        assert_eq!(exact("a/b"), Ok(None));
        for bad in ["a/b@v1", "a/b@^1", "a/b@../../x", "a/b@"] {
            assert!(
                matches!(PackageSpec::exact(bad), Err(SpecError::Version(_))),
                "{bad}"
            );
        }
    }
}
