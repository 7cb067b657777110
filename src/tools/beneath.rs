//! File access the kernel keeps beneath the working root (`openat2` with `RESOLVE_BENEATH`).
//!
//! The path check in `paths.rs` runs before the write; a symlink swapped in between (a command
//! left running in the background can do that) would otherwise carry the write out of the root.
//! Opening relative to a handle on the root, with the kernel refusing any step outside it,
//! closes that window. Symlinks that stay inside the root still work.

use std::io::{self, Read, Write};
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags, mkdirat, open, openat2, unlinkat};

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

fn root_handle(root: &Path) -> io::Result<rustix::fd::OwnedFd> {
    Ok(open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn relative(root: &Path, path: &Path) -> io::Result<std::path::PathBuf> {
    path.strip_prefix(root).map(Path::to_path_buf).map_err(|_| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "path leaves the working root",
        )
    })
}

fn beneath_error(error: rustix::io::Errno) -> io::Error {
    if error == rustix::io::Errno::XDEV || error == rustix::io::Errno::LOOP {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            "path leaves the working root",
        )
    } else {
        error.into()
    }
}

/// Create the directories of `dir` (relative to the root) that do not exist, each beneath it.
fn create_dirs(root: &rustix::fd::OwnedFd, dir: &Path) -> io::Result<()> {
    let mut done = std::path::PathBuf::new();
    for component in dir.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let parent = if done.as_os_str().is_empty() {
            openat2(
                root,
                ".",
                OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
                BENEATH,
            )
        } else {
            openat2(
                root,
                &done,
                OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
                BENEATH,
            )
        }
        .map_err(beneath_error)?;
        match mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(error) => return Err(error.into()),
        }
        done.push(name);
    }
    Ok(())
}

/// Write `bytes` to `path` (absolute, inside `root`), creating its directories.
pub fn write(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    if let Some(parent) = relative.parent() {
        create_dirs(&handle, parent)?;
    }
    let fd = openat2(
        &handle,
        &relative,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
        BENEATH,
    )
    .map_err(beneath_error)?;
    std::fs::File::from(fd).write_all(bytes)
}

/// Read `path` (absolute, inside `root`).
pub fn read(root: &Path, path: &Path) -> io::Result<Vec<u8>> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    let fd = openat2(
        &handle,
        &relative,
        OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
        BENEATH,
    )
    .map_err(beneath_error)?;
    let mut bytes = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// At most `max` bytes of the regular file at `relative` beneath `root`: for files Splice reads
/// from a repository on its own initiative (project instructions, build manifests). The open
/// never blocks (a FIFO would otherwise hang the run), and anything but a regular file is
/// refused, so `/proc` links, devices and sockets cannot stand in for a file.
pub fn read_prefix(root: &Path, relative: &Path, max: usize) -> io::Result<Vec<u8>> {
    let handle = root_handle(root)?;
    let fd = openat2(
        &handle,
        relative,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
        BENEATH,
    )
    .map_err(beneath_error)?;
    if !rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode).is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(u64::try_from(max).unwrap_or(u64::MAX))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Remove the file at `path` (absolute, inside `root`); a missing file is not an error.
pub fn remove(root: &Path, path: &Path) -> io::Result<()> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
        return Ok(());
    };
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let dir = openat2(
        &handle,
        parent,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
        BENEATH,
    )
    .map_err(beneath_error)?;
    match unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        (dir, root)
    }

    #[test]
    fn writes_inside_and_follows_links_that_stay_inside() {
        let (_dir, root) = root();
        write(&root, &root.join("a/b/c.txt"), b"hi").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            std::fs::read(root.join("a/b/c.txt")).ok().as_deref(),
            Some(&b"hi"[..])
        );
        std::os::unix::fs::symlink("a/b/c.txt", root.join("link"))
            .unwrap_or_else(|e| panic!("{e}"));
        write(&root, &root.join("link"), b"via link").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            read(&root, &root.join("a/b/c.txt")).ok().as_deref(),
            Some(&b"via link"[..])
        );
        remove(&root, &root.join("a/b/c.txt")).unwrap_or_else(|e| panic!("{e}"));
        assert!(!root.join("a/b/c.txt").exists());
    }

    #[test]
    fn a_link_out_of_the_root_is_refused_by_the_kernel() {
        let (dir, root) = root();
        let outside = dir.path().join("outside.txt");
        std::os::unix::fs::symlink(&outside, root.join("evil")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(dir.path(), root.join("up")).unwrap_or_else(|e| panic!("{e}"));
        let error = write(&root, &root.join("evil"), b"x").err();
        assert_eq!(
            error.map(|e| e.kind()),
            Some(io::ErrorKind::PermissionDenied)
        );
        assert!(write(&root, &root.join("up/new.txt"), b"x").is_err());
        assert!(!outside.exists());
        assert!(!dir.path().join("new.txt").exists());
        std::fs::write(&outside, "secret").unwrap_or_else(|e| panic!("{e}"));
        assert!(read(&root, &root.join("evil")).is_err());
    }
}
