//! Archives, content-addressed: stored under their sha256, written once. The trait keeps the
//! index independent of where the bytes live: a directory (`FsBlobStore`) or S3-compatible
//! object storage (`crate::s3::S3BlobStore`). It is async, and the directory store does its
//! file I/O on tokio's blocking pool, so no request ever blocks a runtime worker thread.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use axum::body::Bytes;
use futures_util::future::BoxFuture;
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
    #[error("object store, {key}: {source}")]
    Object {
        key: String,
        source: object_store::Error,
    },
    /// A key already held bytes that are not the archive it names: left alone, refused.
    #[error("object store, {0}: the object there is not the archive its sha256 names")]
    Corrupt(String),
    #[error("blob store task: {0}")]
    Task(String),
}

pub type BlobFuture<'a, T> = BoxFuture<'a, Result<T, BlobError>>;

pub trait BlobStore: Send + Sync {
    /// Store `bytes` under `sha256` (theirs: the caller computed it); a no-op when present,
    /// never an overwrite.
    fn put<'a>(&'a self, sha256: &'a str, bytes: Bytes) -> BlobFuture<'a, ()>;
    /// The bytes, or `None` when absent.
    fn get<'a>(&'a self, sha256: &'a str) -> BlobFuture<'a, Option<Bytes>>;
    /// Where the archives live, for the start-up log line.
    fn describe(&self) -> String;
}

/// `sha256` when it is 64 lowercase hex digits: the only keys any store takes.
pub fn checked_key(sha256: &str) -> Result<&str, BlobError> {
    let hex = sha256.len() == 64
        && sha256
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex {
        Ok(sha256)
    } else {
        Err(BlobError::BadKey(sha256.to_string()))
    }
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
        Ok(self.root.join(checked_key(sha256)?))
    }
}

/// `work` on tokio's blocking pool (file I/O), awaited.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, BlobError> + Send + 'static,
) -> Result<T, BlobError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| BlobError::Task(e.to_string()))?
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BlobError + '_ {
    move |source| BlobError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl BlobStore for FsBlobStore {
    fn put<'a>(&'a self, sha256: &'a str, bytes: Bytes) -> BlobFuture<'a, ()> {
        let target = self.path(sha256);
        let root = self.root.clone();
        let sha256 = sha256.to_string();
        Box::pin(blocking(move || put_file(&root, &target?, &sha256, &bytes)))
    }

    fn get<'a>(&'a self, sha256: &'a str) -> BlobFuture<'a, Option<Bytes>> {
        let path = self.path(sha256);
        Box::pin(blocking(move || {
            let path = path?;
            match std::fs::read(&path) {
                Ok(bytes) => Ok(Some(Bytes::from(bytes))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(io(&path)(e)),
            }
        }))
    }

    fn describe(&self) -> String {
        self.root.display().to_string()
    }
}

/// Written to a temporary file and renamed into place; nothing when `path` exists.
fn put_file(root: &Path, path: &Path, sha256: &str, bytes: &[u8]) -> Result<(), BlobError> {
    if path.exists() {
        return Ok(());
    }
    let temp = root.join(format!(".{sha256}.{}", splice_core::ids::random_suffix(12)));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o444)
        .open(&temp)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            file.sync_all()
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written.map_err(io(path))
}
