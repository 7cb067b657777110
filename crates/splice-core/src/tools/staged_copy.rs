//! A private copy of a file `transcribe` opened and checked, for the Scribiz CLI to read. The
//! CLI runs unconfined and opens what it is given by path: a path in the working root could be
//! swapped for a symlink (to a key, into `.git`) between Splice's check and the CLI's open. A
//! copy in the run's private data directory, made from the checked file descriptor, cannot.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes copied between two looks at whether the copy is still wanted.
const CHUNK: usize = 256 * 1024;
/// Longest extension kept on the copy's name (the CLI may tell the media's kind by it).
const MAX_EXTENSION: usize = 16;

/// The copy's file, removed when dropped (success, failure, an interrupt dropping the call).
#[derive(Debug)]
pub struct StagedCopy {
    path: PathBuf,
    /// Set on drop: a copy still running on the blocking pool stops at its next chunk.
    abandoned: Arc<AtomicBool>,
}

impl StagedCopy {
    /// Copy `source` (from its first byte, up to its size now: a file still growing does not
    /// keep the copy going) into `dir` (private, existing) as `<stem>-<random>.<extension>`.
    pub async fn create(
        source: &File,
        dir: &Path,
        stem: &str,
        extension: Option<&OsStr>,
    ) -> io::Result<StagedCopy> {
        let mut name = format!("{stem}-{}", crate::ids::random_suffix(8));
        if let Some(extension) = extension.and_then(OsStr::to_str).filter(|e| plain(e)) {
            name.push('.');
            name.push_str(extension);
        }
        let path = std::path::absolute(dir.join(name))?;
        // New, never an existing name (nor a link planted there), readable by its owner only.
        let target = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let staged = StagedCopy {
            path,
            abandoned: Arc::new(AtomicBool::new(false)),
        };
        let source = source.try_clone()?;
        let abandoned = Arc::clone(&staged.abandoned);
        // On the blocking pool, so a large file does not hold up the runtime (nor an interrupt).
        tokio::task::spawn_blocking(move || copy(&source, target, &abandoned))
            .await
            .map_err(io::Error::other)??;
        Ok(staged)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for StagedCopy {
    fn drop(&mut self) {
        self.abandoned.store(true, Ordering::Relaxed);
        let _ = std::fs::remove_file(&self.path);
    }
}

/// An extension kept as it is: short, letters and digits only.
fn plain(extension: &str) -> bool {
    !extension.is_empty()
        && extension.len() <= MAX_EXTENSION
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Copy by offset (the descriptor's own position is never used), in chunks, until the size the
/// source had at the start, its end, or `abandoned`.
fn copy(source: &File, mut target: File, abandoned: &AtomicBool) -> io::Result<()> {
    let size = source.metadata()?.len();
    let mut buffer = vec![0; CHUNK];
    let mut offset = 0u64;
    while offset < size {
        if abandoned.load(Ordering::Relaxed) {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "the copy was abandoned",
            ));
        }
        let want = usize::try_from(size - offset).map_or(CHUNK, |left| left.min(CHUNK));
        let read = match source.read_at(&mut buffer[..want], offset) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        target.write_all(&buffer[..read])?;
        offset += read as u64;
    }
    target.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("build")
    }

    #[test]
    fn copies_the_opened_file_privately_and_removes_the_copy_when_dropped() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let original = dir.path().join("talk.m4a");
        // More than one chunk, and not a multiple of it.
        let bytes: Vec<u8> = (0..CHUNK * 2 + 17).map(|i| (i % 251) as u8).collect();
        std::fs::write(&original, &bytes).expect("write original");
        let source = File::open(&original).expect("open original");
        // What the path names later does not matter: the descriptor was opened.
        std::fs::remove_file(&original).expect("remove original");
        std::fs::write(&original, b"swapped").expect("write original");
        let staged = runtime()
            .block_on(StagedCopy::create(
                &source,
                dir.path(),
                "call_1",
                Some(OsStr::new("m4a")),
            ))
            .expect("block on");
        let path = staged.path().to_path_buf();
        assert_eq!(path.parent(), Some(dir.path()));
        assert_eq!(path.extension(), Some(OsStr::new("m4a")));
        assert!(
            path.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|n| n.starts_with("call_1-"))
        );
        assert_eq!(std::fs::read(&path).ok(), Some(bytes));
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o777)
            .expect("map");
        assert_eq!(mode, 0o600);
        drop(staged);
        assert!(!path.exists());
    }

    #[test]
    fn only_plain_extensions_are_kept() {
        assert!(plain("wav"));
        assert!(plain("MP4"));
        assert!(!plain(""));
        assert!(!plain("a b"));
        assert!(!plain("x\u{1b}[2J"));
        assert!(!plain(&"a".repeat(MAX_EXTENSION + 1)));
    }
}
