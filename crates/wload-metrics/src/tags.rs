//! Tag sets: the `key=value` pairs that split a metric into series.
//!
//! A tag set is built once per sample batch (one per HTTP request), sorted
//! by key, and carries its hash so that the per-thread series maps hash it
//! in O(1).

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

/// A shared, immutable tag set.
pub type Tags = Arc<TagSet>;

#[derive(Debug, Clone, Eq)]
pub struct TagSet {
    pairs: Vec<(Arc<str>, Arc<str>)>,
    hash: u64,
}

impl TagSet {
    /// Build from pairs; a later pair with the same key replaces an
    /// earlier one.
    pub fn new<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> TagSet
    where
        K: Into<Arc<str>>,
        V: Into<Arc<str>>,
    {
        let mut out: Vec<(Arc<str>, Arc<str>)> = pairs
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        // Sort, then drop repeated keys: O(n log n). (Looking each key up
        // in the pairs so far was O(n²): an options object with 200k tags
        // took minutes.) The sort is stable, so of equal keys the one
        // given last comes last; `dedup_by` keeps the first of a run and
        // is handed (later, kept), so the later value moves into the kept
        // slot.
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                std::mem::swap(&mut later.1, &mut kept.1);
            }
            same
        });
        let hash = FIXED_STATE.hash_one(&out);
        TagSet { pairs: out, hash }
    }

    pub fn empty() -> TagSet {
        TagSet::new(std::iter::empty::<(&str, &str)>())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (&**k, &**v))
    }

    pub fn pairs(&self) -> &[(Arc<str>, Arc<str>)] {
        &self.pairs
    }

    /// This set with `extra` pairs added (overriding equal keys).
    pub fn with<K, V>(&self, extra: impl IntoIterator<Item = (K, V)>) -> TagSet
    where
        K: Into<Arc<str>>,
        V: Into<Arc<str>>,
    {
        TagSet::new(
            self.pairs
                .iter()
                .cloned()
                .chain(extra.into_iter().map(|(k, v)| (k.into(), v.into()))),
        )
    }
}

/// Distinct tag sets [`intern`] keeps; past this it hands out unshared
/// sets (which only cost the series lookups a string comparison).
const MAX_INTERNED: usize = 1 << 16;

/// Tags for engine-level gauges (`vus`, `vus_max`): none, as in k6.
pub fn untagged() -> Tags {
    Arc::new(TagSet::empty())
}

/// The separator of nested group names in the `group` tag (`::outer::inner`);
/// k6 refuses it inside a group or check name.
pub const GROUP_PATH_SEPARATOR: &str = "::";

/// One shared copy of `set` for every VU that builds an equal one.
///
/// Each thread's series map looks tag sets up on every sample: by address
/// when the set is the one the map holds, by comparing every tag string
/// otherwise. VUs cache the sets they build (per group, check and kind of
/// request), so interning those once makes every lookup the cheap kind,
/// whichever VU records.
pub fn intern(set: TagSet) -> Tags {
    static SETS: LazyLock<Mutex<HashSet<Tags>>> = LazyLock::new(Default::default);
    let mut sets = SETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(shared) = sets.get(&set) {
        return shared.clone();
    }
    let set = Arc::new(set);
    if sets.len() < MAX_INTERNED {
        sets.insert(set.clone());
    }
    set
}

/// A fixed hasher state: the cached hash must be the same for equal sets
/// built anywhere in the process.
static FIXED_STATE: std::hash::BuildHasherDefault<std::collections::hash_map::DefaultHasher> =
    std::hash::BuildHasherDefault::new();

impl PartialEq for TagSet {
    fn eq(&self, other: &Self) -> bool {
        // The series maps mostly look up the very set they hold.
        std::ptr::eq(self, other) || (self.hash == other.hash && self.pairs == other.pairs)
    }
}

impl Hash for TagSet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

impl std::fmt::Display for TagSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}:{v}")?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_does_not_matter_and_later_keys_win() {
        let a = TagSet::new([("b", "2"), ("a", "1")]);
        let b = TagSet::new([("a", "0"), ("b", "2"), ("a", "1")]);
        assert_eq!(a, b);
        assert_eq!(a.get("a"), Some("1"));
        assert_eq!(a.to_string(), "{a:1, b:2}");
        assert_ne!(a, a.with([("c", "3")]));
        assert_eq!(a.with([("a", "9")]).get("a"), Some("9"));
    }

    /// Many tags (an options object may hold any number), each key given
    /// three times in a scrambled order: one pair per key, sorted, with
    /// the value given last. Not timed; `new` sorts once (O(n log n))
    /// where it used to search the pairs so far for every pair (O(n²)).
    #[test]
    fn many_tags_keep_the_last_value_of_each_key() {
        const KEYS: usize = 20_000;
        // 7919 is prime, so i·7919 mod KEYS visits every key once per round.
        let round =
            |r: usize| (0..KEYS).map(move |i| (format!("k{:05}", i * 7919 % KEYS), format!("{r}")));
        let set = TagSet::new(round(0).chain(round(1)).chain(round(2)));
        assert_eq!(set.pairs().len(), KEYS);
        for (i, (k, v)) in set.iter().enumerate() {
            assert_eq!((k, v), (format!("k{i:05}").as_str(), "2"));
        }
        assert_eq!(set, TagSet::new(round(2)));
    }

    #[test]
    fn equal_sets_intern_to_one_copy() {
        let a = intern(TagSet::new([("k", "interned-test"), ("j", "1")]));
        let b = intern(TagSet::new([("j", "1"), ("k", "interned-test")]));
        assert!(Arc::ptr_eq(&a, &b));
        let c = intern(TagSet::new([("k", "interned-test")]));
        assert!(!Arc::ptr_eq(&a, &c) && *a != *c);
    }
}
