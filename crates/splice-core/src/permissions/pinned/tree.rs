//! A directory pinned whole: one digest of every name in it, recursively, with each regular
//! file's content and each link's target (links are not followed), so a file added, removed,
//! renamed or rewritten anywhere beneath it is a change. Bounded, so a huge tree cannot stall
//! the start: past the bounds it cannot be pinned, and the approval is refused instead.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use sha2::Digest;

/// At most this many entries beneath a pinned directory.
const MAX_ENTRIES: usize = 4096;
/// At most this many bytes of file content beneath it.
const MAX_BYTES: u64 = 64 * 1024 * 1024;
/// At most this deep.
const MAX_DEPTH: usize = 32;

/// The state a pinned directory's [`super::Pinned`] holds: `tree:sha256:HEX`, `absent`,
/// `tree:other` (not a directory), or `tree:too-large`.
pub(super) fn state(dir: &Path) -> String {
    match std::fs::metadata(dir) {
        Err(_) => "absent".into(),
        Ok(meta) if !meta.is_dir() => "tree:other".into(),
        Ok(_) => {
            let mut walk = Walk {
                hasher: sha2::Sha256::new(),
                entries: 0,
                bytes: 0,
            };
            match walk.dir(dir, 0) {
                Some(()) => format!("tree:sha256:{}", crate::ids::hex(&walk.hasher.finalize())),
                None => TOO_LARGE.into(),
            }
        }
    }
}

/// The state of a directory past the bounds (or unreadable).
pub(super) const TOO_LARGE: &str = "tree:too-large";

struct Walk {
    hasher: sha2::Sha256,
    entries: usize,
    bytes: u64,
}

impl Walk {
    /// `None`: past a bound, or unreadable.
    fn dir(&mut self, dir: &Path, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut names: Vec<std::ffi::OsString> = std::fs::read_dir(dir)
            .ok()?
            .map(|entry| entry.map(|e| e.file_name()))
            .collect::<Result<_, _>>()
            .ok()?;
        names.sort();
        for name in names {
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                return None;
            }
            let path = dir.join(&name);
            let meta = std::fs::symlink_metadata(&path).ok()?;
            // The name and the kind of each entry, then what it holds.
            self.hasher.update((depth as u64).to_le_bytes());
            self.hasher.update(name.as_bytes());
            self.hasher.update(b"\0");
            let kind = meta.file_type();
            if kind.is_symlink() {
                self.hasher.update(b"l");
                self.hasher
                    .update(std::fs::read_link(&path).ok()?.as_os_str().as_bytes());
                self.hasher.update(b"\0");
            } else if kind.is_dir() {
                self.hasher.update(b"d");
                self.dir(&path, depth + 1)?;
                self.hasher.update(b"e");
            } else if kind.is_file() {
                self.hasher.update(b"f");
                self.file(&path)?;
            } else {
                self.hasher.update(b"o");
            }
        }
        Some(())
    }

    fn file(&mut self, path: &Path) -> Option<()> {
        // Not followed, and never blocking: it was a regular file a moment ago.
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .ok()?;
        let mut content = sha2::Sha256::new();
        let mut buffer = [0u8; 64 * 1024];
        let mut reader = file.take(MAX_BYTES.saturating_sub(self.bytes) + 1);
        loop {
            match reader.read(&mut buffer).ok()? {
                0 => break,
                n => {
                    self.bytes += n as u64;
                    if self.bytes > MAX_BYTES {
                        return None;
                    }
                    content.update(&buffer[..n]);
                }
            }
        }
        self.hasher.update(content.finalize());
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_change_beneath_a_directory_changes_its_state() {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let hooks = dir.path().join("hooks");
        std::fs::create_dir_all(hooks.join("lib")).expect("create dirs");
        std::fs::write(hooks.join("check.sh"), "echo ok\n").expect("write");
        std::fs::write(hooks.join("lib/util.sh"), "x=1\n").expect("write");
        let first = state(&hooks);
        assert!(first.starts_with("tree:sha256:"), "{first}");
        assert_eq!(state(&hooks), first);
        std::fs::write(hooks.join("lib/util.sh"), "x=2\n").expect("rewrite");
        let rewritten = state(&hooks);
        assert_ne!(rewritten, first);
        std::fs::write(hooks.join("lib/util.sh"), "x=1\n").expect("put back");
        assert_eq!(state(&hooks), first);
        std::fs::write(hooks.join("lib/new.sh"), "").expect("add");
        assert_ne!(state(&hooks), first);
        std::fs::remove_file(hooks.join("lib/new.sh")).expect("remove");
        std::os::unix::fs::symlink("/etc/passwd", hooks.join("link")).expect("link");
        assert_ne!(state(&hooks), first);
        assert_eq!(state(&dir.path().join("missing")), "absent");
    }
}
