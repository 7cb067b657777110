//! Keeping Splice's own places (`places.rs`: its config, data and saved logins) from a confined
//! command when they lie where the command may write (HOME or SPLICE_CONFIG under `/tmp`, as
//! in containers and CI, or under the working root), which Landlock cannot do (it only grants,
//! and write access includes reading). HOME itself is one of them when it lies inside such a
//! place (`places::exposed_home`): its startup files and PATH folders run later, unconfined. The
//! command's first process, before it confines itself, enters a mount namespace of its own
//! (inside a user namespace when not root), makes every mount private, binds each own directory
//! and file onto itself read-only (created first when missing, so one the command would create
//! is covered too; a writable place inside one, such as a worktree in the data directory or
//! the project and tool caches in HOME, stays writable), and mounts an empty, read-only file
//! (`/dev/null`, without device access) over each saved-logins file and credential store file,
//! and an empty, read-only file system no one may enter over each credential store directory
//! (`reads.rs`). The command cannot undo
//! it: Landlock refuses mount changes and it has no capabilities.
//!
//! What else could change or show them, and why it does not:
//! - another hard link: a file with more than one link is refused (it could be read or changed
//!   there); the command cannot make one (the name is in a mount of its own; a link crosses
//!   mounts);
//! - renaming it, or a directory above it, to reach it by another name or put another in its
//!   place (the mount would not follow): every such directory below the writable place is made
//!   a mount point of its own, and the kernel refuses to rename or remove a mount point;
//! - a symbolic link on the way, in a writable place (planted, or swappable for another): the
//!   command is refused;
//! - `/proc/self/root/…`: the same namespace; `/proc/PID/root/…` of a process outside it
//!   (Splice, the supervisor, your shell): refused by Landlock's ptrace rule and non-dumpability.
//!
//! When the namespace cannot be made, the command is not run (fail closed), with the reason.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::StatVfsMountFlags;
use rustix::mount::{
    MountFlags, MountPropagationFlags, mount, mount_bind, mount_bind_recursive, mount_change,
    mount_remount,
};
use rustix::thread::UnshareFlags;

use crate::places::OwnPlaces;

/// Test hook: set (non-empty) to make Splice behave as where no mount namespace can be made.
/// It can only make Splice stricter.
pub const NO_MOUNTNS_ENV: &str = "SPLICE_TEST_NO_MOUNTNS";

/// What is mounted over a hidden file.
const EMPTY: &str = "/dev/null";

/// Keep Splice's own places (`own`, see `places.rs`) read-only and mask each of `hidden` where
/// they lie inside one of `writable` (see the module); the hidden files left are returned for
/// Landlock to keep from the command. An error means the command must not run.
pub fn protect_writable(
    own: &OwnPlaces,
    hidden: &[PathBuf],
    writable: &[PathBuf],
) -> Result<Vec<PathBuf>, String> {
    let places: Vec<PathBuf> = writable
        .iter()
        .map(|w| crate::places::resolved(w))
        .collect();
    let inside = |path: &Path| places.iter().any(|place| path.starts_with(place));
    let read_only = plan_read_only(own, &places, &inside)?;
    let (mut masked, mut rest) = (Vec::new(), Vec::new());
    for path in hidden {
        match path.canonicalize() {
            Ok(real) if inside(&real) => masked.push((path, real)),
            _ => rest.push(path.clone()),
        }
    }
    if masked.is_empty() && read_only.is_empty() {
        return Ok(rest);
    }
    for (path, real) in &masked {
        let meta =
            std::fs::metadata(real).map_err(|e| cannot(path, format!("cannot read it: {e}")))?;
        // A directory's count is its subdirectories'; none can be linked elsewhere.
        let links = meta.nlink();
        if !meta.is_dir() && links > 1 {
            return Err(cannot(
                path,
                format!("it has {links} hard links, and another could show it"),
            ));
        }
    }
    let first = read_only
        .first()
        .map(|(path, _)| path.as_path())
        .or_else(|| masked.first().map(|(path, _)| path.as_path()))
        .unwrap_or(Path::new("/"));
    enter_namespace().map_err(|why| cannot(first, why))?;
    let mut pinned = Vec::new();
    for (path, real) in &read_only {
        keep_read_only(path, real, &places, &inside, &mut pinned)
            .map_err(|why| cannot(path, why))?;
    }
    for (path, real) in &masked {
        mask(real, &inside, &mut pinned).map_err(|why| cannot(path, why))?;
    }
    // The working directory still names the directory through the mounts from before: looked
    // up again, it goes through the new ones, so a relative path cannot pass beneath them.
    std::env::current_dir()
        .and_then(std::env::set_current_dir)
        .map_err(|e| {
            cannot(
                first,
                format!("cannot enter the working directory again: {e}"),
            )
        })?;
    Ok(rest)
}

fn cannot(path: &Path, why: String) -> String {
    format!(
        "{} cannot be kept from the command (it is in a place confined commands may write): \
         {why}; keep HOME, Splice's config directory (SPLICE_CONFIG) and data directory \
         (SPLICE_DATA_DIR) outside the working root and the temporary directories (a file \
         that a project hook you approved runs is kept this way too: without a mount \
         namespace, do not approve the project's hooks)",
        path.display()
    )
}

/// Splice's own places that lie inside a writable place, each as named and as it really is,
/// outermost first; created when missing (so one the command would create later is covered
/// too). Refused: one that is itself a writable place, a link on the way to one inside a
/// writable place (the command, or one before it, could have planted it or could swap it),
/// and a file with other hard links (its content could be changed there).
fn plan_read_only(
    own: &OwnPlaces,
    places: &[PathBuf],
    inside: &dyn Fn(&Path) -> bool,
) -> Result<Vec<(PathBuf, PathBuf)>, String> {
    let mut candidates = Vec::new();
    for (path, is_dir) in own
        .dirs
        .iter()
        .map(|d| (d, true))
        .chain(own.files.iter().map(|f| (f, false)))
    {
        // Even one leading outside: the command could point it elsewhere.
        planted_link(path, inside).map_err(|why| cannot(path, why))?;
        let real = crate::places::resolved(path);
        if !inside(&real) {
            continue; // Landlock grants no write there.
        }
        if places.contains(&real) {
            return Err(cannot(
                path,
                "it is itself a place confined commands may write".into(),
            ));
        }
        candidates.push((path, is_dir, real));
    }
    // Outermost first: one inside another already kept read-only needs nothing more, unless a
    // writable place lies between (it is remounted writable inside the outer one).
    candidates.sort_by_key(|(_, _, real)| real.components().count());
    let mut planned: Vec<(PathBuf, PathBuf)> = Vec::new();
    for (path, is_dir, real) in candidates {
        let covered = planned.iter().any(|(_, dir)| {
            real.starts_with(dir)
                && !places
                    .iter()
                    .any(|place| place.starts_with(dir) && real.starts_with(place))
        });
        if covered {
            continue;
        }
        create(&real, is_dir).map_err(|e| cannot(path, format!("cannot create it: {e}")))?;
        // A link swapped in while it was created would show here.
        if path.canonicalize().ok().as_ref() != Some(&real) {
            return Err(cannot(path, "it moved while it was created".into()));
        }
        let meta = std::fs::metadata(&real).map_err(|e| cannot(path, e.to_string()))?;
        if !is_dir && meta.nlink() > 1 {
            return Err(cannot(
                path,
                format!(
                    "it has {} hard links, and the others could change it",
                    meta.nlink()
                ),
            ));
        }
        planned.push((path.clone(), real));
    }
    Ok(planned)
}

/// A symbolic link at `path` or above it whose directory lies in a writable place.
fn planted_link(path: &Path, inside: &dyn Fn(&Path) -> bool) -> Result<(), String> {
    for at in path.ancestors() {
        let link = std::fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink());
        if link
            && at
                .parent()
                .is_some_and(|dir| inside(&crate::places::resolved(dir)))
        {
            return Err(format!(
                "{} is a symbolic link in a place confined commands may write (one of them may \
                 have planted it); replace it by the directory it names",
                at.display()
            ));
        }
    }
    Ok(())
}

fn create(real: &Path, is_dir: bool) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if is_dir {
        return std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(real);
    }
    if let Some(parent) = real.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)?;
    }
    // Empty: no settings, no logins.
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(real)
    {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Pin `real`'s ancestors (as [`mask`] does), keep each writable place inside it writable (a
/// mount of its own, copied along; created first when missing, as a tool's cache in HOME may
/// be, since nothing could create it later), then bind `real` onto itself and make that mount
/// read-only; check that it took where Splice names it. Nested writable places need no order:
/// each bind is made where its path leads at that moment, and the last bind copies them all.
fn keep_read_only(
    path: &Path,
    real: &Path,
    places: &[PathBuf],
    inside: &dyn Fn(&Path) -> bool,
    pinned: &mut Vec<PathBuf>,
) -> Result<(), String> {
    pin_ancestors(real, inside, pinned)?;
    for place in places {
        if place != real && place.starts_with(real) && !place.exists() {
            // One that cannot be made stays read-only (stricter, never wider).
            let _ = create(place, true);
        }
        if place != real && place.starts_with(real) && place.exists() {
            mount_bind_recursive(place, place)
                .map_err(|e| format!("cannot keep {} writable: {e}", place.display()))?;
        }
    }
    mount_bind_recursive(real, real).map_err(|e| format!("cannot bind it: {e}"))?;
    // A mount point already: an own place inside it need not pin it again.
    pinned.push(real.to_path_buf());
    // The flags a user namespace locks (nosuid, nodev, noexec) must be kept; atime flags are
    // kept by the kernel.
    let kept = rustix::fs::statvfs(real)
        .map_err(|e| format!("cannot read its mount: {e}"))?
        .f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY;
    for (has, flag) in [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
    ] {
        if kept.contains(has) {
            flags |= flag;
        }
    }
    mount_remount(real, flags, "").map_err(|e| format!("cannot make it read-only: {e}"))?;
    let read_only =
        rustix::fs::statvfs(path).is_ok_and(|s| s.f_flag.contains(StatVfsMountFlags::RDONLY));
    if !read_only || path.canonicalize().ok().as_deref() != Some(real) {
        return Err("the read-only mount did not take".into());
    }
    Ok(())
}

/// Make every directory above `path` that the command could rename (its parent is inside a
/// writable place) a mount point, outermost first: the kernel refuses to rename or remove one.
/// `pinned` holds those already made.
fn pin_ancestors(
    path: &Path,
    inside: &dyn Fn(&Path) -> bool,
    pinned: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let mut pins: Vec<&Path> = path
        .ancestors()
        .skip(1)
        .filter(|dir| dir.parent().is_some_and(inside))
        .collect();
    pins.reverse();
    for dir in pins {
        if pinned.iter().any(|done| done == dir) {
            continue;
        }
        mount_bind_recursive(dir, dir).map_err(|e| format!("cannot pin {}: {e}", dir.display()))?;
        pinned.push(dir.to_path_buf());
    }
    Ok(())
}

/// A mount namespace of this process's own, with every mount private (nothing done here
/// reaches the rest of the system): directly as root, else inside a user namespace that maps
/// the same ids (files keep their owners).
#[allow(deprecated)] // `unshare` is deprecated for CLONE_FILES, which is not used here.
fn enter_namespace() -> Result<(), String> {
    if std::env::var_os(NO_MOUNTNS_ENV).is_some_and(|v| !v.is_empty()) {
        return Err(format!(
            "no mount namespace can be made ({NO_MOUNTNS_ENV} is set)"
        ));
    }
    let (uid, gid) = (
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw(),
    );
    let alone = uid == 0 && rustix::thread::unshare(UnshareFlags::NEWNS).is_ok();
    if !alone {
        rustix::thread::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)
            .map_err(|e| format!("cannot make a mount namespace: {e}"))?;
        std::fs::write("/proc/self/setgroups", "deny")
            .and_then(|()| std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")))
            .and_then(|()| std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")))
            .map_err(|e| format!("cannot map ids in the user namespace: {e}"))?;
    }
    mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))
}

/// Pin every directory above `file` that the command could rename (its parent is inside a
/// writable place) by making it a mount point, outermost first, then mount the empty file over
/// `file` (an empty, read-only file system no one may enter over a directory: a credential
/// store, `reads.rs`); check that `file` now shows something else.
fn mask(
    file: &Path,
    inside: &dyn Fn(&Path) -> bool,
    pinned: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let before = std::fs::metadata(file).map_err(|e| format!("cannot read it: {e}"))?;
    pin_ancestors(file, inside, pinned)?;
    if before.is_dir() {
        mount(
            "none",
            file,
            "tmpfs",
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            c"mode=000,size=4k",
        )
        .map_err(|e| format!("cannot mount over it: {e}"))?;
        let after = std::fs::metadata(file).map_err(|e| format!("cannot check the mount: {e}"))?;
        if (after.dev(), after.ino()) == (before.dev(), before.ino()) {
            return Err("the mount over it did not take".into());
        }
        return Ok(());
    }
    mount_bind(EMPTY, file).map_err(|e| format!("cannot mount over it: {e}"))?;
    // Read-only and no device access: reading fails as Landlock's refusal would, writes too.
    // Flags are only added, so a user namespace's locked ones are kept.
    let _ = mount_remount(
        file,
        MountFlags::BIND
            | MountFlags::RDONLY
            | MountFlags::NOSUID
            | MountFlags::NODEV
            | MountFlags::NOEXEC,
        "",
    );
    let after = std::fs::metadata(file).map_err(|e| format!("cannot check the mount: {e}"))?;
    if (after.dev(), after.ino()) == (before.dev(), before.ino()) {
        return Err("the mount over it did not take".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_outside_writable_places_are_left_to_landlock_without_a_namespace() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let file = dir.path().join("credentials.json");
        std::fs::write(&file, "{}").expect("write file");
        let absent = dir.path().join("none.json");
        let elsewhere = vec![PathBuf::from("/nonexistent-writable")];
        let rest = protect_writable(
            &OwnPlaces::default(),
            &[file.clone(), absent.clone()],
            &elsewhere,
        )
        .expect("protect writable");
        assert_eq!(rest, [file, absent.clone()]);
        // Not there yet: nothing to mask, even inside a writable place.
        let rest = protect_writable(
            &OwnPlaces::default(),
            std::slice::from_ref(&absent),
            &[dir.path().to_path_buf()],
        )
        .expect("protect writable");
        assert_eq!(rest, [absent]);
    }

    #[test]
    fn a_file_with_another_hard_link_is_refused() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let file = dir.path().join("credentials.json");
        std::fs::write(&file, "{}").expect("write file");
        std::fs::hard_link(&file, dir.path().join("copy")).expect("hard link file");
        let refused = protect_writable(&OwnPlaces::default(), &[file], &[dir.path().to_path_buf()]);
        assert!(refused.is_err_and(|e| e.contains("2 hard links")));
    }

    #[test]
    fn own_places_outside_writable_places_are_left_to_landlock() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let own = OwnPlaces {
            dirs: vec![dir.path().join("config/splice")],
            files: vec![dir.path().join("config.json")],
        };
        let elsewhere = vec![PathBuf::from("/nonexistent-writable")];
        let rest = protect_writable(&own, &[], &elsewhere).expect("protect writable own");
        assert!(rest.is_empty());
        // Nothing created where nothing had to be protected.
        assert!(!dir.path().join("config").exists());
    }

    #[test]
    fn an_own_place_inside_another_is_kept_on_its_own_when_a_writable_place_lies_between() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        let (home, project) = (base.join("home"), base.join("home/project"));
        std::fs::create_dir_all(&project).expect("create project");
        // Inner ones listed first: the order found must not matter.
        let own = OwnPlaces {
            dirs: vec![home.join(".config/splice"), home.clone()],
            files: vec![project.join("splice.json")],
        };
        let places = [base.clone(), project.clone()];
        let inside = |path: &Path| places.iter().any(|place| path.starts_with(place));
        let planned = plan_read_only(&own, &places, &inside).expect("plan read only own");
        let reals: Vec<&PathBuf> = planned.iter().map(|(_, real)| real).collect();
        assert_eq!(reals, [&home, &project.join("splice.json")]);
    }

    #[test]
    fn an_own_place_that_is_a_writable_place_or_a_link_in_one_is_refused() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        let own = OwnPlaces {
            dirs: vec![base.clone()],
            files: vec![],
        };
        let refused = protect_writable(&own, &[], std::slice::from_ref(&base));
        assert!(refused.is_err_and(|e| e.contains("itself a place")));
        std::fs::create_dir(base.join("elsewhere")).expect("create elsewhere");
        std::os::unix::fs::symlink(base.join("elsewhere"), base.join(".config"))
            .expect("link .config");
        let own = OwnPlaces {
            dirs: vec![base.join(".config/splice")],
            files: vec![],
        };
        let refused = protect_writable(&own, &[], std::slice::from_ref(&base));
        assert!(refused.is_err_and(|e| e.contains("symbolic link")));
        let linked = base.join("elsewhere/config.json");
        std::fs::write(&linked, "{}").expect("write linked");
        std::fs::hard_link(&linked, base.join("copy.json")).expect("hard link linked");
        let own = OwnPlaces {
            dirs: vec![],
            files: vec![linked],
        };
        let refused = protect_writable(&own, &[], std::slice::from_ref(&base));
        assert!(refused.is_err_and(|e| e.contains("2 hard links")));
    }
}
