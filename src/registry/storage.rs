//! Archives, content-addressed: stored under their sha256, written once. The trait keeps the
//! index independent of where the bytes live (a directory today; object storage later).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum BlobError {
    #[error("blob store {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("`{0}` is not a sha256 in lowercase hex")]
    BadKey(String),
}

pub trait BlobStore: Send + Sync {
    /// Store `bytes` under `sha256` (theirs: the caller computed it); a no-op when present.
    fn put(&self, sha256: &str, bytes: &[u8]) -> Result<(), BlobError>;
    /// The bytes, or `None` when absent.
    fn get(&self, sha256: &str) -> Result<Option<Vec<u8>>, BlobError>;
    fn exists(&self, sha256: &str) -> Result<bool, BlobError>;
}

/// `DIR/blobs/sha256/<hex>`, each written to a temporary file and renamed into place, so a
/// reader sees a whole archive or none.
pub struct FsBlobStore {
    root: PathBuf,
}

impl FsBlobStore {
    pub fn new(data: &Path) -> Result<FsBlobStore, BlobError> {
        let root = data.join("blobs").join("sha256");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&root)
            .map_err(io(&root))?;
        Ok(FsBlobStore { root })
    }

    fn path(&self, sha256: &str) -> Result<PathBuf, BlobError> {
        let hex = sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !hex {
            return Err(BlobError::BadKey(sha256.to_string()));
        }
        Ok(self.root.join(sha256))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BlobError + '_ {
    move |source| BlobError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl BlobStore for FsBlobStore {
    fn put(&self, sha256: &str, bytes: &[u8]) -> Result<(), BlobError> {
        let path = self.path(sha256)?;
        if path.exists() {
            return Ok(());
        }
        let temp = self
            .root
            .join(format!(".{sha256}.{}", crate::ids::random_suffix(12)));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o444)
            .open(&temp)
            .and_then(|mut file| {
                file.write_all(bytes)?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&temp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written.map_err(io(&path))
    }

    fn get(&self, sha256: &str) -> Result<Option<Vec<u8>>, BlobError> {
        let path = self.path(sha256)?;
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path)(e)),
        }
    }

    fn exists(&self, sha256: &str) -> Result<bool, BlobError> {
        Ok(self.path(sha256)?.exists())
    }
}
