//! Blocking work on the async paths of a run (git, file planning, checkpoints), kept off the
//! threads that drive the runtime, so a run never holds up the UI loop or another task.

use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};
use tokio::sync::{Mutex, OwnedMutexGuard};

/// One run's lock on the work that changes its repository (worktrees, commits, merges, the
/// checkpointed writes of a merge): one piece at a time, each to its end, whichever design-plan
/// task asks. Clones share the lock.
#[derive(Clone, Default)]
pub struct RunLock(Arc<Mutex<()>>);

impl RunLock {
    /// Wait for the piece of work running now to end, and keep the next from starting while
    /// the guard is held (the run's cleanup after an interrupt).
    pub async fn hold(&self) -> OwnedMutexGuard<()> {
        Arc::clone(&self.0).lock_owned().await
    }
}

/// Run `work` on the blocking pool holding `lock`, so the other futures of this thread (a
/// design plan's sibling tasks, the model streams) go on meanwhile. Atomic as [`atomic`] is:
/// once started, dropping the future (an interrupt) abandons only the wait; the work runs to
/// its end holding the lock, and whatever takes the lock next ([`RunLock::hold`]) finds it done.
/// Work never starts once the future is dropped while it waits for the lock.
pub async fn exclusive<T, F>(lock: &RunLock, work: F) -> T
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let held = lock.hold().await;
    let done = tokio::task::spawn_blocking(move || {
        let _held = held;
        work()
    })
    .await;
    match done {
        Ok(value) => value,
        // The work's own panic goes on as it would have inline.
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Only a runtime shutting down cancels blocking work: the run is over.
        Err(error) => std::panic::resume_unwind(Box::new(error.to_string())),
    }
}

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
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[tokio::test(flavor = "current_thread")]
    async fn exclusive_work_lets_the_thread_s_other_futures_run() {
        let lock = RunLock::default();
        let ticked = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&ticked);
        // Inline, the sleep would hold the only thread and the other future could not tick.
        let work = exclusive(&lock, move || {
            std::thread::sleep(Duration::from_millis(300));
            seen.load(Ordering::SeqCst)
        });
        let other = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            ticked.store(true, Ordering::SeqCst);
        };
        let (saw_tick, ()) = tokio::join!(work, other);
        assert!(saw_tick, "the sibling future ran while the work blocked");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn dropped_exclusive_work_ends_before_the_lock_is_held_again() {
        let lock = RunLock::default();
        let finished = Arc::new(AtomicBool::new(false));
        let mark = Arc::clone(&finished);
        let work = exclusive(&lock, move || {
            std::thread::sleep(Duration::from_millis(200));
            mark.store(true, Ordering::SeqCst);
        });
        // An interrupt: the wait is dropped once the work has started.
        let _ = tokio::time::timeout(Duration::from_millis(30), work).await;
        let _held = lock.hold().await;
        assert!(
            finished.load(Ordering::SeqCst),
            "the work ran to its end first"
        );
    }

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
