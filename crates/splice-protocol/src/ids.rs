//! Run and session identifiers: `run_YYYYMMDD_xxxxxx`, `session_xxxxxxxxxxxx`.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

pub fn random_suffix(len: usize) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    // RandomState is seeded from the OS per process; mixing a counter and the clock makes each
    // call differ within one process too.
    let mut value = RandomState::new().hash_one((COUNTER.fetch_add(1, Ordering::Relaxed), nanos));
    let mut out = String::with_capacity(len);
    for _ in 0..len {
        out.push(char::from(ALPHABET[(value % 36) as usize]));
        value /= 36;
        if value == 0 {
            value = RandomState::new().hash_one(nanos);
        }
    }
    out
}

/// Today's date as `YYYYMMDD` (UTC), from days since the epoch (Howard Hinnant's algorithm).
pub fn today_compact() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}{m:02}{d:02}")
}

pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

pub fn new_run_id() -> String {
    format!("run_{}_{}", today_compact(), random_suffix(6))
}

pub fn new_session_id() -> String {
    format!("session_{}", random_suffix(12))
}

/// Whether `text` has a run id's shape (`run_` then letters, digits and `_`): anything else,
/// `..` or a path, is refused before it names a directory.
pub fn is_run_id(text: &str) -> bool {
    text.strip_prefix("run_").is_some_and(|rest| {
        !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// Now as RFC 3339 UTC to the second (`2026-11-30T18:10:00Z`).
pub fn now_rfc3339() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    rfc3339(ms)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for milliseconds since the epoch.
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Lowercase hexadecimal, two digits a byte.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_675), (2026, 8, 10));
    }

    #[test]
    fn run_ids_have_the_documented_shape_and_differ() {
        let a = new_run_id();
        let b = new_run_id();
        assert_ne!(a, b);
        assert_eq!(a.len(), "run_20260810_abc123".len());
        assert!(a.starts_with("run_2"));
        assert!(is_run_id(&a));
        for bad in [
            "",
            "..",
            "run_",
            "run_../x",
            "run_a/b",
            "session_abc",
            "run_a b",
        ] {
            assert!(!is_run_id(bad), "{bad:?}");
        }
    }
}
