//! Hiding Splice's credential files from a confined command when they lie where the command may
//! write (HOME or SPLICE_CONFIG under `/tmp`, as in containers and CI), which Landlock cannot do
//! (write access includes reading). The command's first process, before it confines itself,
//! enters a mount namespace of its own (inside a user namespace when not root), makes every
//! mount private, and mounts an empty, read-only file (`/dev/null`, without device access) over
//! each such file. The command cannot undo it: Landlock refuses mount changes and it has no
//! capabilities.
//!
//! What else could show the file, and why it does not:
//! - another hard link: a file with more than one link is refused (it could be read there);
//!   the command cannot make one (the file's name is a mount point; a link to it crosses mounts);
//! - renaming it, or a directory above it, to read it by another name in a later command (the
//!   mount would not follow there): every such directory below the writable place is made a
//!   mount point of its own, and the kernel refuses to rename or remove a mount point;
//! - `/proc/self/root/…`: the same namespace; `/proc/PID/root/…` of a process outside it
//!   (Splice, the supervisor, your shell): refused by Landlock's ptrace rule and non-dumpability.
//!
//! When the namespace cannot be made, the command is not run (fail closed), with the reason.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::mount::{
    MountFlags, MountPropagationFlags, mount_bind, mount_bind_recursive, mount_change,
    mount_remount,
};
use rustix::thread::UnshareFlags;

/// Test hook: set (non-empty) to make Splice behave as where no mount namespace can be made.
/// It can only make Splice stricter.
pub const NO_MOUNTNS_ENV: &str = "SPLICE_TEST_NO_MOUNTNS";

/// What is mounted over a hidden file.
const EMPTY: &str = "/dev/null";

/// Mask each of `hidden` that exists inside one of `writable` (see the module); the rest is
/// returned for Landlock to keep from the command. An error means the command must not run.
pub fn mask_writable(hidden: &[PathBuf], writable: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let places: Vec<PathBuf> = writable
        .iter()
        .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
        .collect();
    let inside = |path: &Path| places.iter().any(|place| path.starts_with(place));
    let (mut masked, mut rest) = (Vec::new(), Vec::new());
    for path in hidden {
        match path.canonicalize() {
            Ok(real) if inside(&real) => masked.push((path, real)),
            _ => rest.push(path.clone()),
        }
    }
    if masked.is_empty() {
        return Ok(rest);
    }
    let cannot = |path: &Path, why: String| {
        format!(
            "{} cannot be kept from the command (it is in a place confined commands may write): \
             {why}; keep Splice's config directory (SPLICE_CONFIG) outside the working root and \
             the temporary directories",
            path.display()
        )
    };
    for (path, real) in &masked {
        let links = std::fs::metadata(real)
            .map_err(|e| cannot(path, format!("cannot read it: {e}")))?
            .nlink();
        if links > 1 {
            return Err(cannot(
                path,
                format!("it has {links} hard links, and another could show it"),
            ));
        }
    }
    let first = masked[0].0;
    enter_namespace().map_err(|why| cannot(first, why))?;
    for (path, real) in &masked {
        mask(real, &inside).map_err(|why| cannot(path, why))?;
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
/// `file`; check that `file` now shows something else.
fn mask(file: &Path, inside: &dyn Fn(&Path) -> bool) -> Result<(), String> {
    let before = std::fs::metadata(file).map_err(|e| format!("cannot read it: {e}"))?;
    let mut pinned: Vec<&Path> = file
        .ancestors()
        .skip(1)
        .filter(|dir| dir.parent().is_some_and(inside))
        .collect();
    pinned.reverse();
    for dir in pinned {
        mount_bind_recursive(dir, dir).map_err(|e| format!("cannot pin {}: {e}", dir.display()))?;
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
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("credentials.json");
        std::fs::write(&file, "{}").unwrap_or_else(|e| panic!("{e}"));
        let absent = dir.path().join("none.json");
        let elsewhere = vec![PathBuf::from("/nonexistent-writable")];
        let rest = mask_writable(&[file.clone(), absent.clone()], &elsewhere)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rest, [file, absent.clone()]);
        // Not there yet: nothing to mask, even inside a writable place.
        let rest = mask_writable(std::slice::from_ref(&absent), &[dir.path().to_path_buf()])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rest, [absent]);
    }

    #[test]
    fn a_file_with_another_hard_link_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("credentials.json");
        std::fs::write(&file, "{}").unwrap_or_else(|e| panic!("{e}"));
        std::fs::hard_link(&file, dir.path().join("copy")).unwrap_or_else(|e| panic!("{e}"));
        let refused = mask_writable(&[file], &[dir.path().to_path_buf()]);
        assert!(refused.is_err_and(|e| e.contains("2 hard links")));
    }
}
