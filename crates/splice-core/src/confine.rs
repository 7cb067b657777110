//! File access confined to a working root (`splice_sandbox::confine`), below every feature that
//! reads or writes the tree: the tools, checkpoints, project instructions, MCP project config
//! and package permissions. Writes are kept from what this process protects
//! (`permissions::own::protected`).

pub mod beneath {
    use std::io;
    use std::path::Path;

    use splice_sandbox::confine::beneath as inner;
    pub use splice_sandbox::confine::beneath::{
        Escape, open_regular, read, read_at_most, read_prefix, resolve_beneath,
    };

    use crate::permissions::own::protected;

    /// Write `bytes` to `path` (absolute, inside `root`), creating its directories.
    pub fn write(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
        inner::write(protected(), root, path, bytes)
    }

    /// Whether `path` (absolute, inside `root`) may be written.
    pub fn check_write(root: &Path, path: &Path) -> io::Result<()> {
        inner::check_write(protected(), root, path)
    }

    /// Remove the file at `path` (absolute, inside `root`); a missing file is not an error.
    pub fn remove(root: &Path, path: &Path) -> io::Result<()> {
        inner::remove(protected(), root, path)
    }

    /// Open `path` (absolute, inside `root`) once, for its bytes to leave the machine.
    pub fn open_for_upload(root: &Path, path: &Path) -> io::Result<std::fs::File> {
        inner::open_for_upload(protected(), root, path)
    }
}

pub mod change {
    use std::path::Path;

    pub use splice_sandbox::confine::change::{ApplyError, FileChange};

    /// Write or delete every planned file, each opened beneath `root` by the kernel.
    pub fn apply(root: &Path, changes: &[FileChange]) -> Result<(), ApplyError> {
        splice_sandbox::confine::change::apply(crate::permissions::own::protected(), root, changes)
    }
}
