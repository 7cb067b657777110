//! Checkpoints and `splice restore`: putting back a run's files, and rolling back a failed plan
//! task.

mod restore;
mod task_rollback;
