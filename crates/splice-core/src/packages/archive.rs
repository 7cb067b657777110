//! Deterministic package archives and their safe unpacking.
//!
//! Packing: the package's files and directories, hidden ones (a component starting with `.`)
//! and `node_modules` left out, sorted by path (bytes), as ustar entries with mtime 0, uid/gid 0,
//! empty user and group names, mode 0644 for files and 0755 for directories; a path that does
//! not fit ustar's 100-byte name plus 155-byte prefix is refused, never spilled into a GNU or pax
//! extension. Then gzip at level 6 with a header holding no time, no name and OS byte 255. So
//! the bytes depend on the names and contents only. A symlink, FIFO, socket or device is
//! refused with its path: a package is plain files.
//!
//! Unpacking accepts only what packing makes: regular files and directories with relative,
//! plain paths (no `..`, `.`, empty or hidden component, no `node_modules`), each once, never
//! beneath a file; no links, devices, FIFOs or extension headers. Everything is written into a
//! fresh directory beside the target and renamed onto it only when all went well, so a refused
//! archive leaves nothing behind and nothing is ever written outside the target.

use std::collections::{HashMap, HashSet};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use flate2::read::GzDecoder;
use flate2::{Compression, GzBuilder};
use sha2::{Digest, Sha256};
use tar::{EntryType, Header};

use super::Issue;
use super::names::is_unpacked_name;

/// The fixed modification time of every entry (the epoch).
pub const MTIME: u64 = 0;
pub const FILE_MODE: u32 = 0o644;
pub const DIR_MODE: u32 = 0o755;
/// The gzip level; fixed, since another level gives other bytes.
pub const GZIP_LEVEL: u32 = 6;
/// The gzip header's OS byte: 255, "unknown", so the bytes do not depend on the packer's OS.
pub const GZIP_OS: u8 = 255;

/// Bounds on a package, enforced when packing and when unpacking (a gzip bomb stops here).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_entries: usize,
    pub max_bytes: u64,
}

pub const LIMITS: Limits = Limits {
    max_entries: 10_000,
    max_bytes: 64 * 1024 * 1024,
};

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("{}", list(.0))]
    Refused(Vec<Issue>),
    #[error("{path}: {source}")]
    Io { path: String, source: io::Error },
}

fn list(issues: &[Issue]) -> String {
    let lines: Vec<String> = issues.iter().map(ToString::to_string).collect();
    lines.join("\n")
}

fn refused(path: impl Into<String>, message: impl Into<String>) -> ArchiveError {
    ArchiveError::Refused(vec![Issue::new(path, message)])
}

fn io_error(path: impl Into<String>) -> impl FnOnce(io::Error) -> ArchiveError {
    let path = path.into();
    move |source| ArchiveError::Io { path, source }
}

/// One thing to pack: its path relative to the package (with `/`) and whether it is a
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub dir: bool,
}

/// The entries a package packs to, sorted; or every reason it cannot be packed (links,
/// special files, names that are not UTF-8 or too long for ustar, too many files).
pub fn entries(root: &Path) -> Result<Vec<Entry>, Vec<Issue>> {
    let (found, issues) = scan(root);
    if issues.is_empty() {
        Ok(found)
    } else {
        Err(issues)
    }
}

/// The packable entries, sorted, and every problem found beside them (so a validator can
/// go on checking the rest of the package).
pub fn scan(root: &Path) -> (Vec<Entry>, Vec<Issue>) {
    let mut found = Vec::new();
    let mut issues = Vec::new();
    walk(root, "", &mut found, &mut issues);
    if found.len() > LIMITS.max_entries {
        issues.push(Issue::new(
            ".",
            format!(
                "has {} files and directories; a package holds at most {}",
                found.len(),
                LIMITS.max_entries
            ),
        ));
    }
    found.sort_by(|a: &Entry, b: &Entry| a.path.as_bytes().cmp(b.path.as_bytes()));
    (found, issues)
}

fn walk(dir: &Path, prefix: &str, found: &mut Vec<Entry>, issues: &mut Vec<Issue>) {
    let shown = if prefix.is_empty() { "." } else { prefix };
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) => return issues.push(Issue::new(shown, format!("cannot read: {e}"))),
    };
    let mut children: Vec<_> = read.filter_map(Result::ok).collect();
    children.sort_by_key(|c| c.file_name());
    for child in children {
        let Some(name) = child.file_name().to_str().map(str::to_string) else {
            issues.push(Issue::new(
                format!("{prefix}{}", child.file_name().to_string_lossy()),
                "the name is not UTF-8",
            ));
            continue;
        };
        if is_unpacked_name(&name) {
            continue;
        }
        let path = format!("{prefix}{name}");
        // The entry itself, never what a link points to.
        let kind = match child.path().symlink_metadata() {
            Ok(meta) => meta.file_type(),
            Err(e) => {
                issues.push(Issue::new(path, format!("cannot read: {e}")));
                continue;
            }
        };
        let what = if kind.is_symlink() {
            Some("a symlink")
        } else if kind.is_fifo() {
            Some("a FIFO")
        } else if kind.is_socket() {
            Some("a socket")
        } else if kind.is_block_device() || kind.is_char_device() {
            Some("a device")
        } else {
            None
        };
        if let Some(what) = what {
            issues.push(Issue::new(
                path,
                format!("is {what}; a package holds plain files and directories only"),
            ));
            continue;
        }
        if let Err(e) = Header::new_ustar().set_path(&path) {
            issues.push(Issue::new(
                path.clone(),
                format!(
                    "the path does not fit a ustar header (100-byte name, 155-byte directory): {e}"
                ),
            ));
        }
        if kind.is_dir() {
            found.push(Entry {
                path: path.clone(),
                dir: true,
            });
            walk(&child.path(), &format!("{path}/"), found, issues);
        } else {
            found.push(Entry { path, dir: false });
        }
    }
}

/// A packed package: its bytes and their sha256 (lowercase hex).
#[derive(Debug, Clone)]
pub struct Packed {
    pub bytes: Vec<u8>,
    pub sha256: String,
}

/// Pack the directory `root` into a deterministic `.tar.gz`.
pub fn pack(root: &Path) -> Result<Packed, ArchiveError> {
    let entries = entries(root).map_err(ArchiveError::Refused)?;
    let gzip = GzBuilder::new()
        .mtime(0)
        .operating_system(GZIP_OS)
        .write(Vec::new(), Compression::new(GZIP_LEVEL));
    let mut tar = tar::Builder::new(gzip);
    let mut total = 0u64;
    for entry in &entries {
        let mut header = Header::new_ustar();
        header
            .set_path(&entry.path)
            .map_err(io_error(entry.path.clone()))?;
        header.set_mtime(MTIME);
        header.set_uid(0);
        header.set_gid(0);
        header
            .set_username("")
            .and_then(|()| header.set_groupname(""))
            .map_err(io_error(entry.path.clone()))?;
        let data = if entry.dir {
            header.set_entry_type(EntryType::Directory);
            header.set_mode(DIR_MODE);
            Vec::new()
        } else {
            header.set_entry_type(EntryType::Regular);
            header.set_mode(FILE_MODE);
            read_plain_file(&root.join(&entry.path), &entry.path)?
        };
        total += data.len() as u64;
        if total > LIMITS.max_bytes {
            return Err(refused(
                ".",
                format!("holds more than {} bytes", LIMITS.max_bytes),
            ));
        }
        header.set_size(data.len() as u64);
        header.set_cksum();
        tar.append(&header, data.as_slice())
            .map_err(io_error(entry.path.clone()))?;
    }
    let bytes = tar
        .into_inner()
        .and_then(|gzip| gzip.finish())
        .map_err(io_error("archive"))?;
    let sha256 = sha256_hex(&bytes);
    Ok(Packed { bytes, sha256 })
}

/// A regular file's content, opened without following a link (one swapped in after the walk
/// fails) and without blocking on a FIFO.
fn read_plain_file(full: &Path, shown: &str) -> Result<Vec<u8>, ArchiveError> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(full)
        .map_err(io_error(shown))?;
    let meta = file.metadata().map_err(io_error(shown))?;
    if !meta.is_file() {
        return Err(refused(shown, "is not a regular file"));
    }
    let mut data = Vec::new();
    (&mut file)
        .take(LIMITS.max_bytes + 1)
        .read_to_end(&mut data)
        .map_err(io_error(shown))?;
    Ok(data)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    crate::ids::hex(&Sha256::digest(bytes))
}

/// Unpack `archive` (a `.tar.gz`) into `target`, which must not exist yet; its parent must.
pub fn unpack(archive: impl Read, target: &Path, limits: Limits) -> Result<(), ArchiveError> {
    let shown = target.display().to_string();
    if target.symlink_metadata().is_ok() {
        return Err(refused(shown, "already exists"));
    }
    let parent = match target.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return Err(refused(shown, "has no parent directory")),
    };
    let staging = parent.join(format!(".splice-unpack-{}", crate::ids::random_suffix(12)));
    DirBuilder::new()
        .mode(0o700)
        .create(&staging)
        .map_err(io_error(staging.display().to_string()))?;
    let done = extract(archive, &staging, limits).and_then(|()| {
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(DIR_MODE))
            .map_err(io_error(shown.clone()))?;
        // NOREPLACE: a target that appeared meanwhile is never replaced.
        rustix::fs::renameat_with(
            rustix::fs::CWD,
            &staging,
            rustix::fs::CWD,
            target,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(|e| ArchiveError::Io {
            path: shown.clone(),
            source: e.into(),
        })
    });
    if done.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    done
}

/// Counts what the gzip stream expands to and fails past `limit`: a bomb is refused after
/// `limit` bytes of work, not after filling the disk.
struct Bounded<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 {
            return Err(io::Error::other(
                "the archive expands beyond the size limit",
            ));
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

fn extract(archive: impl Read, staging: &Path, limits: Limits) -> Result<(), ArchiveError> {
    // Data plus, per entry, a 512-byte header and at most 511 bytes of padding, plus the end.
    let budget = limits.max_bytes + 1024 * (limits.max_entries as u64 + 2);
    let mut tar = tar::Archive::new(Bounded {
        inner: GzDecoder::new(archive),
        left: budget,
    });
    let corrupt = |e: io::Error| refused("archive", format!("not a package archive: {e}"));
    let entries = tar.entries().map_err(corrupt)?.raw(true);
    // What each unpacked path is (true: a directory), and the paths entries named.
    let mut kinds: HashMap<String, bool> = HashMap::new();
    let mut named: HashSet<String> = HashSet::new();
    let mut total = 0u64;
    for (count, entry) in entries.enumerate() {
        let mut entry = entry.map_err(corrupt)?;
        if count >= limits.max_entries {
            return Err(refused(
                "archive",
                format!("holds more than {} entries", limits.max_entries),
            ));
        }
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let dir = match entry.header().entry_type() {
            EntryType::Regular => false,
            EntryType::Directory => true,
            other => return Err(refused(shown, format!("is {}", describe(other)))),
        };
        let path = entry_path(&raw, dir).map_err(|why| refused(shown.clone(), why))?;
        if !named.insert(path.clone()) {
            return Err(refused(shown, "appears twice in the archive"));
        }
        make_parents(staging, &path, &mut kinds).map_err(|why| refused(shown.clone(), why))?;
        match kinds.get(&path) {
            Some(true) if dir => continue,
            Some(_) => return Err(refused(shown, "is already unpacked")),
            None => {}
        }
        let full = staging.join(&path);
        if dir {
            DirBuilder::new()
                .mode(DIR_MODE)
                .create(&full)
                .map_err(io_error(shown.clone()))?;
            kinds.insert(path, true);
            continue;
        }
        let size = entry.header().size().map_err(corrupt)?;
        total = total.saturating_add(size);
        if total > limits.max_bytes {
            return Err(refused(
                "archive",
                format!("expands beyond {} bytes", limits.max_bytes),
            ));
        }
        let mut file: File = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&full)
            .map_err(io_error(shown.clone()))?;
        let copied = io::copy(&mut (&mut entry).take(size), &mut file).map_err(corrupt)?;
        file.flush().map_err(io_error(shown.clone()))?;
        if copied != size {
            return Err(refused(shown, "is truncated"));
        }
        kinds.insert(path, false);
    }
    Ok(())
}

/// A relative path of plain components (`a/b.ts`, `a/` for a directory), or why not.
fn entry_path(raw: &[u8], dir: bool) -> Result<String, String> {
    let text = std::str::from_utf8(raw).map_err(|_| "the path is not UTF-8".to_string())?;
    let trimmed = if dir {
        text.strip_suffix('/').unwrap_or(text)
    } else {
        text
    };
    if trimmed.is_empty() || trimmed.starts_with('/') {
        return Err("is not a relative path".into());
    }
    for component in trimmed.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return Err("has an empty, `.` or `..` component".into());
        }
        if is_unpacked_name(component) || component.contains('\\') {
            return Err(format!(
                "has the component `{component}` (hidden, node_modules or a backslash), which no package holds"
            ));
        }
    }
    Ok(trimmed.to_string())
}

/// Create the directories above `path` that no entry named, refusing one that is a file.
fn make_parents(
    staging: &Path,
    path: &str,
    kinds: &mut HashMap<String, bool>,
) -> Result<(), String> {
    let mut at = 0;
    while let Some(slash) = path[at..].find('/') {
        let parent = &path[..at + slash];
        match kinds.get(parent) {
            Some(true) => {}
            Some(false) => return Err(format!("lies beneath `{parent}`, which is a file")),
            None => {
                DirBuilder::new()
                    .mode(DIR_MODE)
                    .create(staging.join(parent))
                    .map_err(|e| format!("cannot create `{parent}`: {e}"))?;
                kinds.insert(parent.to_string(), true);
            }
        }
        at += slash + 1;
    }
    Ok(())
}

fn describe(kind: EntryType) -> &'static str {
    match kind {
        EntryType::Symlink => "a symlink",
        EntryType::Link => "a hard link",
        EntryType::Char | EntryType::Block => "a device",
        EntryType::Fifo => "a FIFO",
        EntryType::GNULongName | EntryType::GNULongLink | EntryType::XHeader => {
            "an extension header, which package archives never use"
        }
        EntryType::XGlobalHeader => "a pax global header, which package archives never use",
        _ => "not a regular file or directory",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_paths_are_plain_and_relative() {
        assert_eq!(entry_path(b"a/b.ts", false), Ok("a/b.ts".into()));
        assert_eq!(entry_path(b"tools/", true), Ok("tools".into()));
        for bad in [
            &b"/etc/x"[..],
            b"../x",
            b"a/../../x",
            b"a//b",
            b"./a",
            b"",
            b".env",
            b"node_modules/x",
            b"a\\b",
            b"\xff",
        ] {
            assert!(entry_path(bad, false).is_err(), "{bad:?}");
        }
        assert!(entry_path(b"a/", false).is_err());
    }

    #[test]
    fn the_hash_is_sha256() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
