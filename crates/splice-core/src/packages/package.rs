//! A package as the runtime and the model see it: a directory that passed validation, with its
//! typed manifest and SKILL.md. Loading re-validates, so a package changed on disk after it was
//! installed is refused rather than half trusted.

use std::path::{Path, PathBuf};

use super::Issue;
use super::manifest::{Manifest, Tool};
use super::skill_md::Skill;
use super::validate;

#[derive(Debug, Clone)]
pub struct Package {
    /// The package's directory, canonical.
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub skill: Skill,
}

impl Package {
    /// Validate `dir` and load it; every issue when it is not a valid package.
    pub fn load(dir: &Path) -> Result<Package, Vec<Issue>> {
        let dir = dir
            .canonicalize()
            .map_err(|e| vec![Issue::new(dir.display().to_string(), e.to_string())])?;
        let report = validate::check_dir(&dir);
        match report {
            validate::Report {
                manifest: Some(manifest),
                skill: Some(skill),
                issues,
            } if issues.is_empty() => Ok(Package {
                dir,
                manifest,
                skill,
            }),
            validate::Report { issues, .. } if !issues.is_empty() => Err(issues),
            _ => Err(vec![Issue::new(
                dir.display().to_string(),
                "is not a package (no manifest.json or SKILL.md)",
            )]),
        }
    }

    /// `namespace/name`.
    pub fn id(&self) -> String {
        self.manifest.id()
    }

    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.manifest.tools.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_official_json_package_loads_and_a_broken_one_does_not() {
        let official = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/packages/json");
        let package = Package::load(&official).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(package.id(), "splice/json");
        assert!(package.tool("parse").is_some());
        assert!(package.tool("nope").is_none());
        let dir = tempfile::tempdir().expect("create a temporary directory");
        std::fs::write(dir.path().join("manifest.json"), "{}").expect("write manifest.json");
        let issues = Package::load(dir.path()).err().unwrap_or_default();
        assert!(!issues.is_empty());
    }
}
