//! Failed iterations: each distinct message is printed once, then only
//! counted, so a test that fails every iteration on 1,000 VUs does not
//! bury the terminal. The counts go into the summary.

use std::collections::HashMap;
use std::sync::Mutex;

/// Distinct messages kept; beyond this, failures are only counted.
const MAX_DISTINCT: usize = 100;

#[derive(Debug, Default)]
pub struct Failures {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    counts: HashMap<String, u64>,
    order: Vec<String>,
    other: u64,
}

impl Failures {
    /// Count one failure; print it if it is new.
    pub fn report(&self, vu: u32, message: &str) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = inner.counts.get_mut(message) {
            *n += 1;
            return;
        }
        if inner.counts.len() >= MAX_DISTINCT {
            inner.other += 1;
            return;
        }
        eprintln!("ERROR [vu {vu}] iteration failed: {message}");
        inner.counts.insert(message.to_owned(), 1);
        inner.order.push(message.to_owned());
    }

    /// `(message, count)` in order of first occurrence, then the count of
    /// failures whose messages were not kept.
    pub fn summary(&self) -> (Vec<(String, u64)>, u64) {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let list = inner
            .order
            .iter()
            .map(|m| (m.clone(), inner.counts[m]))
            .collect();
        (list, inner.other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_messages_are_counted_once() {
        let f = Failures::default();
        f.report(1, "a");
        f.report(2, "b");
        f.report(3, "a");
        let (list, other) = f.summary();
        assert_eq!(list, vec![("a".into(), 2), ("b".into(), 1)]);
        assert_eq!(other, 0);
    }
}
