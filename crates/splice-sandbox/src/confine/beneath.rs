//! File access the kernel keeps beneath the working root (`openat2` with `RESOLVE_BENEATH`).
//!
//! The path check in `paths.rs` runs before the write; a symlink swapped in between (a command
//! left running in the background can do that) would otherwise carry the write out of the root.
//! Opening relative to a handle on the root, with the kernel refusing any step outside it,
//! closes that window. Symlinks that stay inside the root still work.
//!
//! Writes and removals also refuse a directory that is, or is inside, a git dir (the root's
//! `.git`, what a `.git` file points to, or anything that looks like one, or would once the
//! write added its file or directory), judged on the directory actually opened, so no symlink
//! (`docs/internals -> ../.git`, `h -> .git/hooks`) carries a write there. Writes refuse a file
//! with other hard links too: one of its names may be `.git/config`. A final symlink is followed by hand, one hop at a time, each hop
//! judged the same way; the file itself is then opened with `O_NOFOLLOW`.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{
    AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat, fstat, mkdirat, open, openat, openat2,
    readlinkat, statat, unlinkat,
};

use crate::places::Protected;

const BENEATH: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);
/// Largest file the write tools load whole (to edit it, or to checkpoint what they replace).
pub const MAX_EDITED_BYTES: u64 = 10 * 1024 * 1024;

/// Most symlinks followed by hand for one write, as the kernel's own limit.
const MAX_LINK_HOPS: usize = 40;

/// Why a path was refused: it leads out of the root, or into a git dir.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Escape {
    #[error("path leaves the working root")]
    Outside,
    #[error("path leads into a .git directory")]
    Protected,
    /// Another name of the same file may be anywhere, `.git/config` included; no write
    /// goes through it.
    #[error("the file has other hard links (one may be inside .git)")]
    HardLinked,
    /// Splice's own config or data directory, or one of its own files (the [`Protected`] value),
    /// when it lies beneath the root (HOME as the root, `SPLICE_CONFIG` in the project): what
    /// it holds governs the next run (hooks, MCP servers, rules).
    #[error("path leads into Splice's own config or data directory")]
    Own,
    /// A file one of the project's approved hooks or MCP servers runs (kept by the [`Protected`] value):
    /// it runs as the person, unsandboxed, so the model may not change it meanwhile.
    #[error("the file is run by one of the project's approved hooks or MCP servers")]
    HookFile,
}

impl Escape {
    fn error(self) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, self)
    }

    /// The refusal an error carries, if it is one.
    pub fn of(error: &io::Error) -> Option<Escape> {
        error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<Escape>())
            .copied()
    }
}

fn root_handle(root: &Path) -> io::Result<OwnedFd> {
    Ok(open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

fn relative(root: &Path, path: &Path) -> io::Result<PathBuf> {
    path.strip_prefix(root)
        .map(Path::to_path_buf)
        .map_err(|_| Escape::Outside.error())
}

fn beneath_error(error: rustix::io::Errno) -> io::Error {
    if error == rustix::io::Errno::XDEV || error == rustix::io::Errno::LOOP {
        Escape::Outside.error()
    } else {
        error.into()
    }
}

/// The directory `dir` (relative to the root; empty is the root) opened beneath the root.
fn open_dir(root: &OwnedFd, dir: &Path) -> io::Result<OwnedFd> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    openat2(
        root,
        dir,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
        BENEATH,
    )
    .map_err(beneath_error)
}

/// Create the directories of `dir` (relative to the root) that do not exist, each beneath it.
fn create_dirs(protected: &Protected, root: &OwnedFd, dir: &Path) -> io::Result<()> {
    let mut done = PathBuf::new();
    for component in dir.components() {
        let Component::Normal(name) = component else {
            continue;
        };
        let parent = open_dir(root, &done)?;
        refuse_git_dir(protected, root, &parent)?;
        refuse_completing(&parent, name, true)?;
        match mkdirat(&parent, name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(error) => return Err(error.into()),
        }
        done.push(name);
    }
    Ok(())
}

fn same(a: &Stat, b: &Stat) -> bool {
    a.st_dev == b.st_dev && a.st_ino == b.st_ino
}

/// Whether a directory has what git needs of a git dir (`HEAD`, and `objects/` and `refs/` or
/// a `commondir` file naming where they are).
fn looks_like_git_dir(dir: &OwnedFd) -> bool {
    git_dir_shape(dir, None)
}

/// Whether `dir` is shaped like a git dir once `added` (a name, and whether it is a directory)
/// is in it too. Judging only what a directory holds before a write let a config written into
/// a plain directory become a git dir's config when a later write added the last piece.
/// Fail closed: a `HEAD` of any kind but a directory counts, and links are followed, as git
/// does, for the rest.
fn git_dir_shape(dir: &OwnedFd, added: Option<(&OsStr, bool)>) -> bool {
    let has = |name: &str, directory: bool| {
        if added.is_some_and(|(n, d)| n == OsStr::new(name) && d == directory) {
            return true;
        }
        let flags = if name == "HEAD" {
            AtFlags::SYMLINK_NOFOLLOW
        } else {
            AtFlags::empty()
        };
        statat(dir, name, flags).is_ok_and(|st| {
            (FileType::from_raw_mode(st.st_mode) == FileType::Directory) == directory
        })
    };
    has("HEAD", false) && ((has("objects", true) && has("refs", true)) || has("commondir", false))
}

/// Refuse adding `name` (a directory when `directory`) to `dir` when that makes it a git dir.
fn refuse_completing(dir: &OwnedFd, name: &OsStr, directory: bool) -> io::Result<()> {
    if git_dir_shape(dir, Some((name, directory))) {
        return Err(Escape::Protected.error());
    }
    Ok(())
}

/// The root's own git dirs that resolve inside it: `.git` (followed, beneath the root), and the
/// directory a `.git` file names (`gitdir: …`).
fn root_git_dirs(root: &OwnedFd) -> Vec<Stat> {
    let open_path = |path: &Path| {
        openat2(
            root,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH,
        )
        .ok()
        .and_then(|fd| fstat(fd).ok())
    };
    let mut found: Vec<Stat> = open_path(Path::new(".git")).into_iter().collect();
    let gitfile = openat2(
        root,
        ".git",
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
        BENEATH,
    );
    if let Ok(fd) = gitfile {
        let mut text = String::new();
        let is_file = fstat(&fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode).is_file());
        let read = is_file
            && std::fs::File::from(fd)
                .take(4096)
                .read_to_string(&mut text)
                .is_ok();
        if let Some(target) = text.trim().strip_prefix("gitdir:").filter(|_| read) {
            found.extend(open_path(Path::new(target.trim())));
        }
    }
    found
}

/// Refuse `dir` (opened beneath the root) when it or any directory between it and the root
/// is a git dir, one of Splice's own directories, or one an approved hook runs from. Walks up with `..` from the opened directory itself, so how the path was
/// spelled, and which links it went through, do not matter.
fn refuse_git_dir(protected: &Protected, root: &OwnedFd, dir: &OwnedFd) -> io::Result<()> {
    let root_stat = fstat(root)?;
    let git_dirs = root_git_dirs(root);
    let own: Vec<Stat> = protected
        .own()
        .dirs
        .iter()
        .filter_map(|dir| rustix::fs::stat(dir).ok())
        .collect();
    // The directories approved hooks run from, pinned whole (kept by the [`Protected`] value).
    let hooks: Vec<Stat> = protected
        .hook_dirs()
        .iter()
        .filter_map(|dir| rustix::fs::stat(dir).ok())
        .collect();
    let mut current = openat(
        dir,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    // A directory beneath the root reaches it within PATH_MAX / 2 steps.
    for _ in 0..4096 {
        let stat = fstat(&current)?;
        if same(&stat, &root_stat) {
            return Ok(());
        }
        if git_dirs.iter().any(|p| same(p, &stat)) || looks_like_git_dir(&current) {
            return Err(Escape::Protected.error());
        }
        if own.iter().any(|p| same(p, &stat)) {
            return Err(Escape::Own.error());
        }
        if hooks.iter().any(|p| same(p, &stat)) {
            return Err(Escape::HookFile.error());
        }
        let parent = openat(
            &current,
            "..",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if same(&fstat(&parent)?, &stat) {
            // The filesystem's root, without passing the working root: not beneath it.
            return Err(Escape::Outside.error());
        }
        current = parent;
    }
    Err(Escape::Outside.error())
}

/// Refuse the file `name` in `dir` when it is one of Splice's own files (`SPLICE_CONFIG`'s
/// target, whose hooks and rules the next run takes, the saved logins, the price table) or one
/// the project's approved hooks run, there or to be created there: judged by the directory
/// actually opened, so the path's spelling and the links it went through do not matter.
fn refuse_protected_file(protected: &Protected, dir: &OwnedFd, name: &OsStr) -> io::Result<()> {
    let own = &protected.own().files;
    let hooks = protected.hook_files();
    if own.is_empty() && hooks.is_empty() {
        return Ok(());
    }
    let dir_stat = fstat(dir)?;
    let names = |file: &PathBuf| {
        file.file_name() == Some(name)
            && file
                .parent()
                .and_then(|parent| rustix::fs::stat(parent).ok())
                .is_some_and(|parent| same(&parent, &dir_stat))
    };
    if own.iter().any(names) {
        return Err(Escape::Own.error());
    }
    if hooks.iter().any(names) {
        return Err(Escape::HookFile.error());
    }
    Ok(())
}

/// A regular file with more than one name: where the others are cannot be known.
fn hard_linked(stat: &Stat) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile && stat.st_nlink > 1
}

/// Split `relative` into its parent directory and its last, normal, component.
fn split(relative: &Path) -> io::Result<(PathBuf, OsString)> {
    match relative.components().next_back() {
        Some(Component::Normal(name)) => Ok((
            relative.parent().map(Path::to_path_buf).unwrap_or_default(),
            name.to_os_string(),
        )),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path does not name a file",
        )),
    }
}

/// The directory that will hold the file `relative` names, and the file's name in it: every
/// final symlink followed by hand (beneath the root), every directory judged by
/// [`refuse_git_dir`].
fn parent_for_write(
    protected: &Protected,
    root: &OwnedFd,
    relative: &Path,
) -> io::Result<(OwnedFd, OsString)> {
    let mut relative = relative.to_path_buf();
    for _ in 0..=MAX_LINK_HOPS {
        let (parent, name) = split(&relative)?;
        let dir = match open_dir(root, &parent) {
            Ok(dir) => dir,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                refuse_nearest(protected, root, &parent)?;
                return Err(error);
            }
            Err(error) => return Err(error),
        };
        refuse_git_dir(protected, root, &dir)?;
        if name == OsStr::new(".git") {
            return Err(Escape::Protected.error());
        }
        match readlinkat(&dir, name.as_os_str(), Vec::new()) {
            Ok(target) => {
                let target = Path::new(OsStr::from_bytes(target.as_bytes()));
                if target.is_absolute() {
                    return Err(Escape::Outside.error());
                }
                relative = parent.join(target);
            }
            // Not a link, or nothing there yet.
            Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOENT) => {
                refuse_completing(&dir, &name, false)?;
                refuse_protected_file(protected, &dir, &name)?;
                if statat(&dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| hard_linked(&st))
                {
                    return Err(Escape::HardLinked.error());
                }
                return Ok((dir, name));
            }
            Err(error) => return Err(error.into()),
        }
    }
    Err(Escape::Outside.error())
}

/// For a directory that does not exist yet: refuse it when the nearest one above it that does
/// is, or is inside, a git dir (the write would create it there).
fn refuse_nearest(protected: &Protected, root: &OwnedFd, missing: &Path) -> io::Result<()> {
    let mut above = missing.to_path_buf();
    while let Some(name) = above.file_name().map(OsStr::to_os_string) {
        above.pop();
        if let Ok(dir) = open_dir(root, &above) {
            refuse_git_dir(protected, root, &dir)?;
            // Nor may creating the first missing directory make that one a git dir.
            return refuse_completing(&dir, &name, true);
        }
    }
    Ok(())
}

/// Write `bytes` to `path` (absolute, inside `root`), creating its directories; never into
/// what `protected` keeps.
pub fn write(protected: &Protected, root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    if let Some(parent) = relative.parent() {
        create_dirs(protected, &handle, parent)?;
    }
    let (dir, name) = parent_for_write(protected, &handle, &relative)?;
    // NONBLOCK: a FIFO without a reader fails instead of hanging; then only files are written.
    let fd = openat(
        &dir,
        name.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o666),
    )
    .map_err(beneath_error)?;
    let fd = regular(fd)?;
    // Judged on the opened file: a link made after the check above is caught too.
    if hard_linked(&fstat(&fd)?) {
        return Err(Escape::HardLinked.error());
    }
    rustix::fs::ftruncate(&fd, 0)?;
    std::fs::File::from(fd).write_all(bytes)
}

/// Whether `path` (absolute, inside `root`) may be written: beneath the root and out of any
/// git dir, through whatever links lead there now. Checked when a write is planned, so the
/// refusal can be shown before anything is asked or saved.
pub fn check_write(protected: &Protected, root: &Path, path: &Path) -> io::Result<()> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    match parent_for_write(protected, &handle, &relative) {
        // Directories still to be created were judged by where they would be created.
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
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

/// Open `path` (absolute, inside `root`) once, for its bytes to leave the machine (the
/// `transcribe` upload): a regular file with a single name, beneath the root and out of any git
/// dir, all judged on what is opened. A final symlink is followed by hand, one hop at a time,
/// each hop's directory judged as a write's is; then the file is opened with `O_NOFOLLOW`.
/// Last, where the opened file really is (`/proc/self/fd`) must be beneath the root and name no
/// `.git`; when that cannot be read, the file is refused.
pub fn open_for_upload(
    protected: &Protected,
    root: &Path,
    path: &Path,
) -> io::Result<std::fs::File> {
    let handle = root_handle(root)?;
    let mut relative = relative(root, path)?;
    for _ in 0..=MAX_LINK_HOPS {
        let (parent, name) = split(&relative)?;
        let dir = open_dir(&handle, &parent)?;
        refuse_git_dir(protected, &handle, &dir)?;
        if name == OsStr::new(".git") {
            return Err(Escape::Protected.error());
        }
        let opened = openat(
            &dir,
            name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        );
        match opened {
            Ok(fd) => {
                let fd = regular(fd)?;
                if hard_linked(&fstat(&fd)?) {
                    return Err(Escape::HardLinked.error());
                }
                refuse_resolved(&handle, &fd)?;
                return Ok(std::fs::File::from(fd));
            }
            // A symlink: its target is judged on the next round.
            Err(rustix::io::Errno::LOOP) => match readlinkat(&dir, name.as_os_str(), Vec::new()) {
                Ok(target) => {
                    let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                    relative = if target.is_absolute() {
                        absolute_beneath(root, &target)?
                    } else {
                        parent.join(target)
                    };
                }
                // Swapped back to a file since the open: open it again.
                Err(rustix::io::Errno::INVAL) => {}
                Err(error) => return Err(error.into()),
            },
            Err(error) => return Err(beneath_error(error)),
        }
    }
    Err(Escape::Outside.error())
}

/// Where `relative` (a path declared relative to the root, as a package's `permissions.fs`
/// paths are) really is: opened beneath the root, so the kernel follows every link on the way
/// and refuses ([`Escape::Outside`]) one that leads out; an absolute link counts as leading
/// out, as for every `RESOLVE_BENEATH` open, and so does `..`. What does not exist yet is
/// resolved as far as it does and the rest appended as written; a link where the first
/// missing name is (a dangling link) is refused, as its target cannot be judged. The answer
/// holds no link, so a grant that names it cannot be carried elsewhere by one.
pub fn resolve_beneath(root: &Path, relative: &Path) -> io::Result<PathBuf> {
    let mut existing = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => existing.push(name),
            Component::CurDir => {}
            _ => return Err(Escape::Outside.error()),
        }
    }
    let handle = root_handle(root)?;
    let real_root = real_path(&handle)?;
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        let target = if existing.as_os_str().is_empty() {
            Path::new(".")
        } else {
            existing.as_path()
        };
        match openat2(
            &handle,
            target,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            BENEATH,
        ) {
            Ok(fd) => {
                let mut real = real_path(&fd)?;
                if !real.starts_with(&real_root) {
                    return Err(Escape::Outside.error());
                }
                if let Some(first) = missing.last()
                    && statat(&fd, first.as_os_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok()
                {
                    return Err(Escape::Outside.error());
                }
                real.extend(missing.iter().rev());
                return Ok(real);
            }
            Err(rustix::io::Errno::NOENT) if !existing.as_os_str().is_empty() => {
                let (parent, name) = split(&existing)?;
                missing.push(name);
                existing = parent;
            }
            Err(error) => return Err(beneath_error(error)),
        }
    }
}

/// The kernel's name for what `fd` is open on; refused when it cannot be read.
fn real_path(fd: &OwnedFd) -> io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|error| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("cannot tell where the opened file is (/proc/self/fd: {error})"),
        )
    })
}

/// An absolute link target as a path relative to the root, when it names a place beneath it.
fn absolute_beneath(root: &Path, target: &Path) -> io::Result<PathBuf> {
    let real_root = root.canonicalize()?;
    target
        .strip_prefix(root)
        .or_else(|_| target.strip_prefix(&real_root))
        .map(Path::to_path_buf)
        .map_err(|_| Escape::Outside.error())
}

/// Refuse `fd` unless the kernel's name for it is beneath the root's and holds no `.git`.
fn refuse_resolved(root: &OwnedFd, fd: &OwnedFd) -> io::Result<()> {
    let (real_root, real_file) = (real_path(root)?, real_path(fd)?);
    let inside = real_file
        .strip_prefix(&real_root)
        .map_err(|_| Escape::Outside.error())?;
    if inside.components().any(|c| c.as_os_str() == ".git") {
        return Err(Escape::Protected.error());
    }
    Ok(())
}

/// `fd` if it is a regular file, else an error that says what it is.
fn regular(fd: OwnedFd) -> io::Result<OwnedFd> {
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
    read_at_most(root, path, MAX_EDITED_BYTES)
}

/// Read `path` (absolute, inside `root`) whole: a regular file of at most `max` bytes, else an
/// `InvalidInput` error.
pub fn read_at_most(root: &Path, path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(root, path)?;
    let size = file.metadata()?.len();
    if size > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{size} bytes, larger than the {max} bytes file tools load whole"),
        ));
    }
    let mut bytes = Vec::new();
    // The size may have grown since the check: never read past the cap.
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the file grew larger than the file tools load whole",
        ));
    }
    Ok(bytes)
}

/// At most `max` bytes of the regular file `path` (absolute, inside `root`); anything else (a
/// FIFO, a device) is refused without blocking.
pub fn read_prefix(root: &Path, path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(root, path)?
        .take(max)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Remove the file at `path` (absolute, inside `root`); a missing file is not an error. A link
/// is removed itself, never followed.
pub fn remove(protected: &Protected, root: &Path, path: &Path) -> io::Result<()> {
    let handle = root_handle(root)?;
    let relative = relative(root, path)?;
    let (parent, name) = split(&relative)?;
    let dir = match open_dir(&handle, &parent) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other?,
    };
    refuse_git_dir(protected, &handle, &dir)?;
    if name == OsStr::new(".git") {
        return Err(Escape::Protected.error());
    }
    match unlinkat(&dir, name.as_os_str(), AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The checks with nothing of Splice's to keep (the protected places have tests of their own).
    fn write(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
        super::write(&Protected::default(), root, path, bytes)
    }
    fn check_write(root: &Path, path: &Path) -> io::Result<()> {
        super::check_write(&Protected::default(), root, path)
    }
    fn remove(root: &Path, path: &Path) -> io::Result<()> {
        super::remove(&Protected::default(), root, path)
    }
    fn open_for_upload(root: &Path, path: &Path) -> io::Result<std::fs::File> {
        super::open_for_upload(&Protected::default(), root, path)
    }

    fn root() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let root = dir.path().join("root");
        std::fs::create_dir_all(&root).expect("create root");
        (dir, root)
    }

    #[test]
    fn writes_inside_and_follows_links_that_stay_inside() {
        let (_dir, root) = root();
        write(&root, &root.join("a/b/c.txt"), b"hi").expect("write root");
        assert_eq!(
            std::fs::read(root.join("a/b/c.txt")).ok().as_deref(),
            Some(&b"hi"[..])
        );
        std::os::unix::fs::symlink("a/b/c.txt", root.join("link")).expect("link link");
        write(&root, &root.join("link"), b"via link").expect("write root");
        assert_eq!(
            read(&root, &root.join("a/b/c.txt")).ok().as_deref(),
            Some(&b"via link"[..])
        );
        remove(&root, &root.join("a/b/c.txt")).expect("remove root");
        assert!(!root.join("a/b/c.txt").exists());
    }

    #[test]
    fn declared_paths_resolve_beneath_the_root_or_are_refused() {
        let (dir, root) = root();
        let outside = dir.path().join("elsewhere");
        std::fs::create_dir_all(&outside).expect("create outside");
        std::fs::create_dir_all(root.join("build/out")).expect("create build/out");
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).expect("link name")
        };
        link(&outside, "out");
        link(Path::new("../elsewhere"), "up");
        link(Path::new("build"), "inner");
        link(Path::new("missing-target"), "dangling");
        let real = root.canonicalize().expect("canonicalize root");
        let resolve = |p: &str| resolve_beneath(&root, Path::new(p));
        assert_eq!(resolve(".").ok(), Some(real.clone()));
        assert_eq!(resolve("./build").ok(), Some(real.join("build")));
        // A link that stays inside resolves to where it leads; what is missing is appended.
        assert_eq!(resolve("inner/out").ok(), Some(real.join("build/out")));
        assert_eq!(
            resolve("inner/new/file.txt").ok(),
            Some(real.join("build/new/file.txt"))
        );
        for out in [
            "out",
            "out/x",
            "up",
            "up/deeper/x",
            "../elsewhere",
            "build/../../elsewhere",
            "dangling",
            "dangling/x",
        ] {
            let refused = resolve(out);
            assert_eq!(
                refused.as_ref().err().and_then(Escape::of),
                Some(Escape::Outside),
                "{out}: {refused:?}"
            );
        }
    }

    fn protected(result: io::Result<()>) -> bool {
        result.as_ref().err().and_then(Escape::of) == Some(Escape::Protected)
    }

    #[test]
    fn git_dirs_are_judged_where_links_lead() {
        let (_dir, root) = root();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).expect("link name")
        };
        // A `.git` file pointing at a git dir inside the root, holding only a config.
        std::fs::create_dir_all(root.join("store")).expect("create store");
        std::fs::write(root.join("store/config"), "[core]\n").expect("write store/config");
        std::fs::write(root.join(".git"), "gitdir: store\n").expect("write .git");
        link("store", "s");
        // Anything shaped like a git dir, whatever its name.
        for part in ["bare/objects", "bare/refs"] {
            std::fs::create_dir_all(root.join(part)).expect("create part");
        }
        std::fs::write(root.join("bare/HEAD"), "ref: refs/heads/main\n").expect("write bare/HEAD");
        // A chain of file links ending in a git dir, and one ending at a dangling name there.
        link("b", "a");
        link("store/config", "b");
        link("bare/hooks/pre-commit", "dangling");
        assert!(protected(write(&root, &root.join("s/config"), b"x")));
        assert!(protected(write(&root, &root.join("bare/config"), b"x")));
        assert!(protected(write(&root, &root.join("a"), b"x")));
        assert!(protected(write(&root, &root.join("dangling"), b"x")));
        assert!(protected(write(&root, &root.join("s/new/deep.txt"), b"x")));
        assert!(protected(check_write(&root, &root.join("s/new/deep.txt"))));
        assert!(protected(remove(&root, &root.join("s/config"))));
        assert!(protected(write(&root, &root.join(".git"), b"x")));
        assert_eq!(
            std::fs::read_to_string(root.join("store/config"))
                .ok()
                .as_deref(),
            Some("[core]\n")
        );
        assert!(!root.join("store/new").exists());
        assert!(!root.join("bare/hooks").exists());
        // Removing a link that leads into one removes the link, not what it leads to.
        remove(&root, &root.join("b")).expect("remove root");
        assert!(root.join("store/config").exists());
        // Elsewhere, writes go through.
        write(&root, &root.join("src/main.rs"), b"fn main() {}").expect("write root");
        assert!(check_write(&root, &root.join("src/new/lib.rs")).is_ok());
    }

    #[test]
    fn no_write_completes_a_git_dir() {
        let (_dir, root) = root();
        std::fs::create_dir_all(root.join("p/objects")).expect("create p/objects");
        std::fs::write(root.join("p/config"), "[core]\n").expect("write p/config");
        std::fs::write(root.join("p/HEAD"), "ref: refs/heads/main\n").expect("write p/HEAD");
        // The missing `refs/` would make `p` a git dir: refused when planned and when written,
        // and the directory is not left behind.
        assert!(protected(check_write(&root, &root.join("p/refs/heads/x"))));
        assert!(protected(write(&root, &root.join("p/refs/heads/x"), b"")));
        assert!(!root.join("p/refs").exists());
        // A `commondir` file makes a git dir of `HEAD` alone.
        assert!(protected(write(&root, &root.join("p/commondir"), b"..")));
        std::fs::create_dir_all(root.join("q/refs")).expect("create q/refs");
        std::fs::create_dir_all(root.join("q/objects")).expect("create q/objects");
        assert!(protected(write(&root, &root.join("q/HEAD"), b"x")));
        // A file called HEAD elsewhere, or a directory called refs, is fine.
        write(&root, &root.join("docs/HEAD"), b"x").expect("write root");
        write(&root, &root.join("docs/refs/a.md"), b"x").expect("write root");
    }

    #[test]
    fn no_write_goes_through_a_hard_link() {
        let (_dir, root) = root();
        std::fs::write(root.join("a.txt"), "mine\n").expect("write a.txt");
        std::fs::hard_link(root.join("a.txt"), root.join("b.txt")).expect("hard link a.txt");
        let linked =
            |r: io::Result<()>| r.as_ref().err().and_then(Escape::of) == Some(Escape::HardLinked);
        assert!(linked(check_write(&root, &root.join("b.txt"))));
        assert!(linked(write(&root, &root.join("b.txt"), b"x")));
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).ok().as_deref(),
            Some("mine\n")
        );
        // Removing one name is harmless, and then the other is an ordinary file again.
        remove(&root, &root.join("b.txt")).expect("remove root");
        write(&root, &root.join("a.txt"), b"x").expect("write root");
    }

    #[test]
    fn reads_a_prefix_of_files_only() {
        let (_dir, root) = root();
        std::fs::write(root.join("big.txt"), "0123456789").expect("write big.txt");
        assert_eq!(
            read_prefix(&root, &root.join("big.txt"), 4).ok().as_deref(),
            Some(&b"0123"[..])
        );
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            root.join("fifo"),
            Mode::from_raw_mode(0o600),
        )
        .expect("mkfifoat");
        assert!(read_prefix(&root, &root.join("fifo"), 4).is_err());
        assert!(write(&root, &root.join("fifo"), b"x").is_err());
    }

    #[test]
    fn uploads_open_only_single_named_files_beneath_the_root_and_out_of_git() {
        let (dir, root) = root();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, root.join(name)).expect("link name")
        };
        let open = |name: &str| {
            let mut bytes = Vec::new();
            open_for_upload(&root, &root.join(name))
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .map(|_| bytes)
        };
        let refused = |name: &str| open(name).err().as_ref().and_then(Escape::of);
        std::fs::write(root.join("talk.wav"), "media").expect("write talk.wav");
        std::fs::write(dir.path().join("id_rsa"), "key").expect("write id_rsa");
        std::fs::create_dir_all(root.join(".git")).expect("create .git");
        std::fs::write(root.join(".git/config"), "token").expect("write .git/config");
        // A `.git` that is not shaped like a git dir, reached through a directory link.
        std::fs::create_dir_all(root.join("sub/.git")).expect("create sub/.git");
        std::fs::write(root.join("sub/.git/x.wav"), "x").expect("write sub/.git/x.wav");
        link(Path::new("talk.wav"), "rel.wav");
        link(&root.join("talk.wav"), "abs.wav");
        link(&dir.path().join("id_rsa"), "key.wav");
        link(Path::new(".git/config"), "config.wav");
        link(Path::new("sub/.git"), "g");
        link(Path::new("../id_rsa"), "up.wav");
        std::fs::write(root.join("one.wav"), "one").expect("write one.wav");
        std::fs::hard_link(root.join("one.wav"), root.join("two.wav")).expect("hard link one.wav");
        for name in ["talk.wav", "rel.wav", "abs.wav"] {
            assert_eq!(open(name).ok().as_deref(), Some(&b"media"[..]), "{name}");
        }
        assert_eq!(refused("key.wav"), Some(Escape::Outside));
        assert_eq!(refused("up.wav"), Some(Escape::Outside));
        assert_eq!(refused("config.wav"), Some(Escape::Protected));
        assert_eq!(refused(".git/config"), Some(Escape::Protected));
        assert_eq!(refused("g/x.wav"), Some(Escape::Protected));
        assert_eq!(refused("two.wav"), Some(Escape::HardLinked));
        assert!(open("sub").is_err());
        // A FIFO is refused without waiting for a writer.
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            root.join("fifo.wav"),
            Mode::from_raw_mode(0o600),
        )
        .expect("mkfifoat");
        assert_eq!(
            open("fifo.wav").err().map(|e| e.kind()),
            Some(io::ErrorKind::InvalidInput)
        );
        assert_eq!(
            open("missing.wav").err().map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn a_link_out_of_the_root_is_refused_by_the_kernel() {
        let (dir, root) = root();
        let outside = dir.path().join("outside.txt");
        std::os::unix::fs::symlink(&outside, root.join("evil")).expect("link evil");
        std::os::unix::fs::symlink(dir.path(), root.join("up")).expect("link up");
        let error = write(&root, &root.join("evil"), b"x").err();
        assert_eq!(
            error.map(|e| e.kind()),
            Some(io::ErrorKind::PermissionDenied)
        );
        assert!(write(&root, &root.join("up/new.txt"), b"x").is_err());
        assert!(!outside.exists());
        assert!(!dir.path().join("new.txt").exists());
        std::fs::write(&outside, "secret").expect("write outside");
        assert!(read(&root, &root.join("evil")).is_err());
    }

    #[test]
    fn what_the_protected_value_keeps_is_refused_however_it_is_reached() {
        let (_dir, root) = root();
        std::fs::create_dir_all(root.join("own/deep")).expect("create own");
        std::fs::create_dir_all(root.join("hooks")).expect("create hooks");
        std::os::unix::fs::symlink("own", root.join("via")).expect("link via");
        let protected = Protected::new(crate::places::OwnPlaces {
            dirs: vec![root.join("own")],
            files: vec![root.join("settings.json")],
        });
        protected.protect_hook_files(&[root.join("check.sh")]);
        protected.protect_hook_dirs(&[root.join("hooks")]);
        let refusal = |result: io::Result<()>| result.err().as_ref().and_then(Escape::of);
        let own = Some(Escape::Own);
        assert_eq!(
            refusal(super::write(
                &protected,
                &root,
                &root.join("via/deep/x"),
                b"x"
            )),
            own
        );
        assert_eq!(
            refusal(super::check_write(
                &protected,
                &root,
                &root.join("own/new/y")
            )),
            own
        );
        assert_eq!(
            refusal(super::write(
                &protected,
                &root,
                &root.join("settings.json"),
                b"x"
            )),
            own
        );
        let hook = Some(Escape::HookFile);
        assert_eq!(
            refusal(super::write(
                &protected,
                &root,
                &root.join("check.sh"),
                b"x"
            )),
            hook
        );
        assert_eq!(
            refusal(super::remove(&protected, &root, &root.join("hooks/a.sh"))),
            hook
        );
        // The same writes pass with nothing protected.
        assert!(write(&root, &root.join("via/deep/x"), b"x").is_ok());
        assert!(write(&root, &root.join("check.sh"), b"x").is_ok());
    }
}
