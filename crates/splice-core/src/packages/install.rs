//! Installing and removing packages in `$SPLICE_DATA_DIR/packages/`. Every install goes
//! through an archive, the path a registry download will take: a directory is packed first
//! (so only what `pkg pack` would ship is installed), the archive is unpacked into a staging
//! directory beside the destination, validated there, and renamed into place, so a reader
//! never sees half a package. Installed files are made read-only (0444) against accidental
//! edits; that is no security boundary, and every load validates the package again.

use std::fs::Permissions;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

use super::Issue;
use super::archive::{self, ArchiveError, LIMITS};
use super::installed::{self, ResolveError, package_dir};
use super::inventory;
use super::package::Package;
use super::spec::PackageSpec;
use crate::layout::Layout;

const READ_ONLY_FILE: u32 = 0o444;

#[derive(Debug, Error)]
pub enum InstallError {
    /// Not a valid package (or an archive that may not be unpacked): each issue.
    #[error("{}", list(.0))]
    Invalid(Vec<Issue>),
    #[error("the archive's sha256 is {actual}, expected {expected}")]
    Checksum { expected: String, actual: String },
    #[error(
        "{id}@{version} is already installed with other contents at {path} (use --force to replace it)"
    )]
    Conflict {
        id: String,
        version: String,
        path: String,
    },
    #[error("the archive holds {found}, not the {expected} it was fetched as")]
    NotExpected { expected: String, found: String },
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

fn list(issues: &[Issue]) -> String {
    let lines: Vec<String> = issues.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |e| InstallError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    }
}

impl From<ArchiveError> for InstallError {
    fn from(error: ArchiveError) -> InstallError {
        match error {
            ArchiveError::Refused(issues) => InstallError::Invalid(issues),
            ArchiveError::Io { path, source } => InstallError::Io {
                path,
                message: source.to_string(),
            },
        }
    }
}

/// What an install did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Installed,
    /// The same version with the same contents was there already: nothing changed.
    Unchanged,
    /// `--force` replaced the same version's other contents.
    Replaced,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Installed => "installed",
            Outcome::Unchanged => "unchanged",
            Outcome::Replaced => "replaced",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Installed {
    pub id: String,
    pub version: String,
    pub path: PathBuf,
    /// The sha256 of the package's deterministic archive: the same for a directory and the
    /// archive `pkg pack` makes of it.
    pub sha256: String,
    pub outcome: Outcome,
}

/// Install a package directory or a `.tgz`/`.tar.gz` archive made by `pkg pack`.
pub fn install_path(
    layout: &Layout,
    source: &Path,
    force: bool,
) -> Result<Installed, InstallError> {
    let meta = std::fs::metadata(source).map_err(io(source))?;
    if meta.is_dir() {
        // Validate first, so an invalid directory reports every rule it breaks.
        Package::load(source).map_err(InstallError::Invalid)?;
        let packed = archive::pack(source)?;
        return install_archive(layout, &packed.bytes, None, force);
    }
    let bytes = std::fs::read(source).map_err(io(source))?;
    install_archive(layout, &bytes, None, force)
}

/// Install from an archive's bytes, refused unless its sha256 is `expected` (when given).
pub fn install_archive(
    layout: &Layout,
    bytes: &[u8],
    expected: Option<&str>,
    force: bool,
) -> Result<Installed, InstallError> {
    install_archive_as(layout, bytes, expected, None, force)
}

/// The package an archive must hold.
#[derive(Debug, Clone, Copy)]
pub struct Identity<'a> {
    pub namespace: &'a str,
    pub name: &'a str,
    pub version: &'a str,
}

/// `install_archive`, also refused (before anything is placed) unless the archive holds
/// `identity`: the path a registry download takes.
pub fn install_archive_as(
    layout: &Layout,
    bytes: &[u8],
    expected: Option<&str>,
    identity: Option<Identity>,
    force: bool,
) -> Result<Installed, InstallError> {
    let actual = archive::sha256_hex(bytes);
    if let Some(expected) = expected
        && !expected.eq_ignore_ascii_case(&actual)
    {
        return Err(InstallError::Checksum {
            expected: expected.to_string(),
            actual,
        });
    }
    let root = layout.packages();
    std::fs::create_dir_all(&root).map_err(io(&root))?;
    let staging = Staging::new(&root)?;
    let unpacked = staging.path.join("package");
    archive::unpack(bytes, &unpacked, LIMITS)?;
    let package = Package::load(&unpacked).map_err(InstallError::Invalid)?;
    let manifest = &package.manifest;
    if let Some(want) = identity {
        let found = (&*manifest.namespace, &*manifest.name, &*manifest.version);
        if found != (want.namespace, want.name, want.version) {
            return Err(InstallError::NotExpected {
                expected: format!("{}/{}@{}", want.namespace, want.name, want.version),
                found: format!("{}@{}", manifest.id(), manifest.version),
            });
        }
    }
    // The identity of the contents: the archive of what was unpacked, which is the same
    // whether the package came as a directory or as any archive of it.
    let sha256 = archive::pack(&package.dir)?.sha256;
    make_read_only(&package.dir)?;
    let dest = package_dir(
        layout,
        &manifest.namespace,
        &manifest.name,
        &manifest.version,
    );
    let parent = dest.parent().unwrap_or(&root);
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let mut installed = Installed {
        id: manifest.id(),
        version: manifest.version.clone(),
        path: dest.clone(),
        sha256: sha256.clone(),
        outcome: Outcome::Installed,
    };
    match rename(&package.dir, &dest, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(installed),
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(io(&dest)(e));
        }
        Err(_) => {}
    }
    let existing = archive::pack(&dest).ok().map(|p| p.sha256);
    if existing.as_deref() == Some(sha256.as_str()) {
        installed.outcome = Outcome::Unchanged;
        return Ok(installed);
    }
    if !force {
        return Err(InstallError::Conflict {
            id: installed.id,
            version: installed.version,
            path: dest.display().to_string(),
        });
    }
    // Swapped in one step: the old contents end up in the staging directory, removed below.
    rename(&package.dir, &dest, rustix::fs::RenameFlags::EXCHANGE).map_err(io(&dest))?;
    installed.outcome = Outcome::Replaced;
    Ok(installed)
}

/// What `remove` removed: the package and its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub spec: PackageSpec,
    pub versions: Vec<String>,
}

/// Remove `ns/name@version`, or every version of `ns/name`; the versions removed. A version
/// disappears in one rename before its files are deleted.
pub fn remove(layout: &Layout, spec: &str) -> Result<Removed, RemoveError> {
    let (spec, _) = PackageSpec::exact(spec).map_err(|why| ResolveError::BadSpec {
        spec: spec.to_string(),
        why,
    })?;
    let versions = match &spec.version {
        Some(version) => vec![version.clone()],
        None => inventory::versions(layout, &spec.namespace, &spec.name),
    };
    let present: Vec<String> = versions
        .into_iter()
        .filter(|v| package_dir(layout, &spec.namespace, &spec.name, v).is_dir())
        .collect();
    if present.is_empty() {
        return Err(RemoveError::Resolve(ResolveError::NotInstalled(
            spec.to_string(),
        )));
    }
    let root = layout.packages();
    let staging = Staging::new(&root).map_err(RemoveError::Install)?;
    for (index, version) in present.iter().enumerate() {
        let dir = package_dir(layout, &spec.namespace, &spec.name, version);
        let gone = staging.path.join(index.to_string());
        std::fs::rename(&dir, &gone).map_err(|e| RemoveError::Install(io(&dir)(e)))?;
        // Its provenance goes with it; none is there for a version installed from a directory.
        let record = installed::source_record(layout, &spec.namespace, &spec.name, version);
        match std::fs::remove_file(&record) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(RemoveError::Install(io(&record)(e)));
            }
            _ => {}
        }
    }
    // Empty name and namespace directories go too; a non-empty one stays (the error is moot).
    let name_dir = root.join(&spec.namespace).join(&spec.name);
    let _ = std::fs::remove_dir(&name_dir);
    let _ = std::fs::remove_dir(root.join(&spec.namespace));
    Ok(Removed {
        spec,
        versions: present,
    })
}

#[derive(Debug, Error)]
pub enum RemoveError {
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error(transparent)]
    Install(InstallError),
}

/// A private directory beside the destinations, removed with everything in it when dropped.
/// Its name starts with a dot, which no namespace can, so listings never see it.
struct Staging {
    path: PathBuf,
}

impl Staging {
    fn new(root: &Path) -> Result<Staging, InstallError> {
        let path = root.join(format!(".staging-{}", crate::ids::random_suffix(12)));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(io(&path))?;
        Ok(Staging { path })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn rename(from: &Path, to: &Path, flags: rustix::fs::RenameFlags) -> std::io::Result<()> {
    rustix::fs::renameat_with(rustix::fs::CWD, from, rustix::fs::CWD, to, flags)
        .map_err(std::io::Error::from)
}

/// Every regular file under `dir` becomes 0444; directories stay 0755 so that removing a
/// package needs no chmod.
fn make_read_only(dir: &Path) -> Result<(), InstallError> {
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            make_read_only(&path)?;
        } else if kind.is_file() {
            std::fs::set_permissions(&path, Permissions::from_mode(READ_ONLY_FILE))
                .map_err(io(&path))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFFICIAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/packages/json");

    /// A download whose bytes are not the ones the registry vouched for places nothing.
    #[test]
    fn an_archive_is_installed_only_with_the_expected_sha256() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        let packed = archive::pack(Path::new(OFFICIAL)).expect("pack");
        let wrong = "0".repeat(64);
        let refused = install_archive(
            &crate::layout::Layout::at(data.path()),
            &packed.bytes,
            Some(&wrong),
            false,
        );
        assert!(
            matches!(&refused, Err(InstallError::Checksum { actual, .. }) if *actual == packed.sha256),
            "{refused:?}"
        );
        assert!(!data.path().join("packages/splice").exists());
        let done = install_archive(
            &crate::layout::Layout::at(data.path()),
            &packed.bytes,
            Some(&packed.sha256),
            false,
        )
        .expect("install archive data");
        assert_eq!(done.outcome, Outcome::Installed);
        assert_eq!(done.sha256, packed.sha256);
        assert!(done.path.join("manifest.json").is_file());
        let left: Vec<_> = std::fs::read_dir(data.path().join("packages"))
            .expect("list packages")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        assert_eq!(left, ["splice"], "no staging directory left");
    }

    /// A registry's archive for one package that holds another is placed nowhere, even with
    /// --force over the other package's installed version.
    #[test]
    fn an_archive_holding_another_package_than_expected_is_not_placed() {
        let data = tempfile::tempdir().expect("create a temporary directory");
        let packed = archive::pack(Path::new(OFFICIAL)).expect("pack");
        let expect = Identity {
            namespace: "acme",
            name: "json",
            version: "0.1.0",
        };
        let refused = install_archive_as(
            &crate::layout::Layout::at(data.path()),
            &packed.bytes,
            Some(&packed.sha256),
            Some(expect),
            true,
        );
        assert!(
            matches!(&refused, Err(InstallError::NotExpected { found, .. }) if found == "splice/json@0.1.0"),
            "{refused:?}"
        );
        let left: Vec<_> = std::fs::read_dir(data.path().join("packages"))
            .expect("list packages")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
