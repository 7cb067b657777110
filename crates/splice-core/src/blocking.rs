//! Blocking work on the async paths of a run (git, file planning, checkpoints), kept off the
//! threads that drive the runtime, so a run never holds up the UI loop or another task.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Run `work` on the blocking pool. Dropping the future (an interrupt) abandons only the wait:
/// for work whose result may be thrown away, such as reading a diff. `None` if it panicked.
pub async fn detached<T, F>(work: F) -> Option<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    tokio::task::spawn_blocking(work).await.ok()
}

/// Run `work` to its end on this thread while the runtime hands this worker's other tasks to
/// another: an interrupt cannot cut it in half (a checkpoint and the write it guards land
/// together, a merge completes). Inline on a current-thread runtime, where that is impossible.
pub fn atomic<T>(work: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_runs_inline_without_a_runtime_and_on_a_current_thread_one() {
        assert_eq!(atomic(|| 1), 1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("build");
        assert_eq!(runtime.block_on(async { atomic(|| 2) }), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn atomic_and_detached_run_on_a_multi_thread_runtime() {
        assert_eq!(atomic(|| 3), 3);
        assert_eq!(detached(|| 4).await, Some(4));
        let spawned = tokio::spawn(async { atomic(|| 5) }).await;
        assert_eq!(spawned.ok(), Some(5));
    }
}
