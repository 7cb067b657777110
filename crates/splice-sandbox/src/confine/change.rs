//! A file about to change, planned before it is applied, so the permission prompt can show the
//! diff and the checkpoint can save what is about to change; and applying such changes.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::beneath;
use crate::places::Protected;

/// One file about to change: `after == None` deletes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// Relative to the root, forward slashes.
    pub shown: String,
    pub before: Option<Vec<u8>>,
    pub after: Option<Vec<u8>>,
}

/// A planned change that could not be applied.
#[derive(Debug, Error)]
pub enum ApplyError {
    #[error("cannot write {shown}: {source}")]
    Write {
        shown: String,
        source: std::io::Error,
    },
    #[error("cannot delete {shown}: {source}")]
    Delete {
        shown: String,
        source: std::io::Error,
    },
}

/// Write or delete every planned file, each opened beneath `root` by the kernel, never in what
/// `protected` keeps.
pub fn apply(protected: &Protected, root: &Path, changes: &[FileChange]) -> Result<(), ApplyError> {
    for change in changes {
        let shown = || change.shown.clone();
        match &change.after {
            Some(bytes) => {
                beneath::write(protected, root, &change.path, bytes).map_err(|source| {
                    ApplyError::Write {
                        shown: shown(),
                        source,
                    }
                })?
            }
            None => beneath::remove(protected, root, &change.path).map_err(|source| {
                ApplyError::Delete {
                    shown: shown(),
                    source,
                }
            })?,
        }
    }
    Ok(())
}
