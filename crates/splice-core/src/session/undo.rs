//! `Op::Undo`: a run's checkpoint restored, as `splice restore` does, reported for the front
//! end and the session log.

use crate::checkpoint::CheckpointError;
use crate::layout::Layout;

/// What an undo put back.
#[derive(Debug, Clone, PartialEq)]
pub struct Undone {
    pub run_id: String,
    pub sequence: u32,
    /// Every file put back, the removed ones too.
    pub files: Vec<String>,
    /// Of `files`, those the undo removed (the change had created them).
    pub deleted: Vec<String>,
    /// Files left alone: changed since Splice wrote them, or now leading outside the root or
    /// into `.git`.
    pub skipped: Vec<String>,
    /// Why files were left alone, worded as `splice restore` words it.
    pub left_alone: Option<String>,
}

/// Put back the files of `run_id` from checkpoint `sequence` on (without force: files changed
/// since are left alone).
pub(super) fn restore(
    layout: &Layout,
    run_id: &str,
    sequence: u32,
) -> Result<Undone, CheckpointError> {
    let reports = crate::checkpoint::restore(layout, run_id, sequence, false)?;
    let mut undone = Undone {
        run_id: run_id.to_string(),
        sequence,
        files: Vec::new(),
        deleted: Vec::new(),
        skipped: Vec::new(),
        left_alone: crate::checkpoint::left_alone(&reports),
    };
    for report in reports {
        undone.files.extend(report.files_restored);
        undone.deleted.extend(report.files_deleted);
        undone.skipped.extend(report.skipped);
    }
    undone.files.extend(undone.deleted.iter().cloned());
    Ok(undone)
}
