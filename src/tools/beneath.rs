//! File access the kernel keeps beneath the working root (`openat2` with `RESOLVE_BENEATH`).
//!
//! The path check in `paths.rs` runs before the write; a symlink swapped in between (a command
//! left running in the background can do that) would otherwise carry the write out of the root.
//! Opening relative to a handle on the root, with the kernel refusing any step outside it,
//! closes that window. Symlinks that stay inside the root still work.

use std::io::{self, Read, Write};
use std::path::{Component, Path};

use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, ResolveFlags, fstat, mkdirat, open, openat2, unlinkat,
};

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);
/// Largest file the write tools load whole (to edit it, or to checkpoint what they replace).
pub const MAX_EDITED_BYTES: u64 = 10 * 1024 * 1024;

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
    // Non-blocking: opening a FIFO for writing would otherwise wait for a reader forever (with
    // none it fails with ENXIO). A device is refused after the open, before any byte moves.
    let fd = openat2(
        &handle,
        &relative,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::from_raw_mode(0o666),
        BENEATH,
    )
    .map_err(beneath_error)?;
    std::fs::File::from(regular(fd)?).write_all(bytes)
}

/// Open `path` (absolute, inside `root`) for reading, if it is a regular file. The open never
/// blocks (a FIFO would wait for a writer) and the type is checked on the opened file, so
/// nothing swapped in after a check can hang the tool or stream a device at it.
pub fn open_regular(root: &Path, path: &Path) -> io::Result<std::fs::File> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    let fd = openat2(
        &handle,
        &relative,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
        BENEATH,
    )
    .map_err(beneath_error)?;
    Ok(std::fs::File::from(regular(fd)?))
}

/// `fd` if it is a regular file, else an error that says what it is.
fn regular(fd: rustix::fd::OwnedFd) -> io::Result<rustix::fd::OwnedFd> {
    let kind = FileType::from_raw_mode(fstat(&fd)?.st_mode);
    if kind == FileType::RegularFile {
        return Ok(fd);
    }
    let what = match kind {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Directory => "a directory",
        _ => "a special file",
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({what})"),
    ))
}

/// Read `path` (absolute, inside `root`) whole: a regular file of at most `MAX_EDITED_BYTES`.
pub fn read(root: &Path, path: &Path) -> io::Result<Vec<u8>> {
    let file = open_regular(root, path)?;
    let size = file.metadata()?.len();
    if size > MAX_EDITED_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{size} bytes, larger than the {} MiB file tools load whole",
                MAX_EDITED_BYTES / (1024 * 1024)
            ),
        ));
    }
    let mut bytes = Vec::new();
    // The size may have grown since the check: never read past the cap.
    file.take(MAX_EDITED_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_EDITED_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the file grew larger than the file tools load whole",
        ));
    }
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
