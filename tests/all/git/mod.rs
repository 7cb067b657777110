//! Splice's own git calls: the protection of `.git`, the recorded git config, the reviewing diff
//! and `--worktree` runs.

mod config_protection;
mod config_record;
mod git_dirs;
mod merge_back_and_cleanup;
mod object_store;
mod review_diff;
mod worktree;
