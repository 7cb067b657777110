//! Wall-clock times as the index stores them: seconds or milliseconds since the epoch, and
//! RFC 3339 UTC for `publishedAt`.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub use splice_core::ids::rfc3339;

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_utc() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_786_320_061_000), "2026-08-10T00:01:01Z");
    }
}
