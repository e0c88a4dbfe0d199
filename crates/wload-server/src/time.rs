//! Timestamps as the API shows them: RFC 3339 in UTC, whole seconds; kept
//! in the database as Unix seconds so that they sort and compare.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in Unix seconds.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `2026-12-01T14:12:51Z`.
pub fn rfc3339(unix: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(unix.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}
