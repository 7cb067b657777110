//! Failed sign-ins on the `/device` page, counted per user name: past a few in a window, the
//! name is refused without checking the password until the oldest failure ages out. Without
//! it, anyone who can reach the page could guess a password at the rate the server hashes.
//! Counting by name, not by address, holds behind a proxy and against many addresses; the cost
//! is that someone who knows a name can keep its page sign-in refused (the CLI's `registry
//! approve` on the server's shell still works).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed sign-ins a name may have within [`WINDOW`].
pub const MAX_FAILURES: usize = 5;
pub const WINDOW: Duration = Duration::from_secs(15 * 60);
/// Names tracked at once; past it the names with the oldest failures are forgotten.
const MAX_NAMES: usize = 10_000;

#[derive(Debug, Default)]
pub struct SignInThrottle {
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl SignInThrottle {
    /// `Err(wait)` while `user` has had too many failures: how long until one ages out.
    pub fn check(&self, user: &str, now: Instant) -> Result<(), Duration> {
        let Ok(mut failures) = self.failures.lock() else {
            // A poisoned lock counts as throttled: refusing is the safe side.
            return Err(WINDOW);
        };
        let Some(times) = failures.get_mut(&key(user)) else {
            return Ok(());
        };
        forget_old(times, now);
        match times.front() {
            Some(&oldest) if times.len() >= MAX_FAILURES => {
                Err(WINDOW.saturating_sub(now.saturating_duration_since(oldest)))
            }
            _ => Ok(()),
        }
    }

    pub fn failed(&self, user: &str, now: Instant) {
        let Ok(mut failures) = self.failures.lock() else {
            return;
        };
        if failures.len() >= MAX_NAMES && !failures.contains_key(&key(user)) {
            failures.retain(|_, times| {
                forget_old(times, now);
                !times.is_empty()
            });
            if failures.len() >= MAX_NAMES {
                // The name with the fewest failures goes (the oldest among them), never a
                // refused one before the others: otherwise failing on many other names would
                // forget a guessed name's failures and let its guessing go on.
                let oldest = failures
                    .iter()
                    .min_by_key(|(_, times)| (times.len(), times.back().copied()))
                    .map(|(name, _)| name.clone());
                if let Some(name) = oldest {
                    failures.remove(&name);
                }
            }
        }
        let times = failures.entry(key(user)).or_default();
        forget_old(times, now);
        times.push_back(now);
        while times.len() > MAX_FAILURES {
            times.pop_front();
        }
    }

    /// A right password clears the name's failures.
    pub fn succeeded(&self, user: &str) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(&key(user));
        }
    }
}

/// Names are compared as the index compares them, without case, so `Alice` counts for `alice`.
fn key(user: &str) -> String {
    user.trim().to_lowercase()
}

fn forget_old(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|&t| now.saturating_duration_since(t) >= WINDOW)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_refused_after_its_failures_until_the_oldest_ages_out() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for i in 0..MAX_FAILURES {
            assert_eq!(throttle.check("alice", start), Ok(()), "failure {i}");
            throttle.failed("alice", start + Duration::from_secs(i as u64));
        }
        let now = start + Duration::from_secs(60);
        // The sixth try is refused, whatever the case of the name.
        assert_eq!(
            throttle.check("Alice", now),
            Err(WINDOW - Duration::from_secs(60))
        );
        // Other names are not affected.
        assert_eq!(throttle.check("bob", now), Ok(()));
        // Once the oldest failure is older than the window, one more try is allowed.
        assert_eq!(throttle.check("alice", start + WINDOW), Ok(()));
    }

    #[test]
    fn a_right_password_clears_the_count_and_memory_stays_bounded() {
        let throttle = SignInThrottle::default();
        let now = Instant::now();
        for _ in 0..MAX_FAILURES - 1 {
            throttle.failed("alice", now);
        }
        throttle.succeeded("alice");
        for _ in 0..MAX_FAILURES - 1 {
            throttle.failed("alice", now);
        }
        assert_eq!(throttle.check("alice", now), Ok(()));
        for i in 0..MAX_NAMES + 10 {
            throttle.failed(&format!("user{i}"), now);
        }
        let tracked = throttle.failures.lock().map(|f| f.len()).unwrap_or(0);
        assert!(tracked <= MAX_NAMES, "{tracked}");
    }

    /// Attack: a name refused after its failures, then one failure on each of as many other
    /// names as are tracked, must not have its failures forgotten (and its guessing resumed).
    #[test]
    fn failing_on_many_other_names_does_not_forget_a_refused_name() {
        let throttle = SignInThrottle::default();
        let start = Instant::now();
        for _ in 0..MAX_FAILURES {
            throttle.failed("alice", start);
        }
        assert!(throttle.check("alice", start).is_err());
        let later = start + Duration::from_secs(1);
        for i in 0..MAX_NAMES + 10 {
            throttle.failed(&format!("flood{i}"), later);
        }
        assert!(throttle.check("alice", later).is_err());
    }
}
