//! Groups (k6's `group`): the open groups of one VU and the tag sets they
//! put on samples.
//!
//! Inside a group every sample of the VU carries `group=::outer::inner`
//! (k6's path form) and leaving a group records its `group_duration`. The
//! `vu` interface enters and leaves; `checks`, `http` and `metrics` read
//! the current scope's tags from here. Tag sets are built once per group
//! path and check name, so a group entered every iteration costs one small
//! path string per entry and no tag-set allocation.

use rustc_hash::FxHashMap;
use std::sync::Arc;
use std::time::Instant;

use wload_metrics::GROUP_PATH_SEPARATOR;
use wload_metrics::{Tags, intern};

/// Group paths (and check names per path) a VU keeps tag sets for; past
/// this, tag sets are built per use, so a test generating names cannot
/// grow a VU's memory without bound.
const CACHE_LIMIT: usize = 1024;

struct Open {
    path: Arc<str>,
    started: Instant,
    /// The tags inside this group.
    tags: Tags,
}

/// One VU's groups: the stack of open ones and the cached tag sets.
pub struct Groups {
    /// Tags outside any group (the scenario's).
    root: Tags,
    open: Vec<Open>,
    /// Tags inside a group, by its path. (Fx hashing: these maps are per
    /// VU and bounded by `CACHE_LIMIT`, so forced collisions would only
    /// slow the guest that forced them.)
    scopes: FxHashMap<Arc<str>, Tags>,
    /// Tags of a check, by the path of its group ("" at the top) and name.
    checks: FxHashMap<Arc<str>, FxHashMap<String, Tags>>,
}

impl Groups {
    pub fn new(root: Tags) -> Groups {
        Groups {
            root,
            open: Vec::new(),
            scopes: FxHashMap::default(),
            checks: FxHashMap::default(),
        }
    }

    /// Tags of samples in the current scope.
    pub fn tags(&self) -> &Tags {
        self.open.last().map_or(&self.root, |g| &g.tags)
    }

    /// Path of the innermost open group, "" outside any group.
    pub fn path(&self) -> &str {
        self.open.last().map_or("", |g| &g.path)
    }

    /// Enter the group `name` inside the current one.
    pub fn enter(&mut self, name: &str) -> Result<(), String> {
        if name.contains(GROUP_PATH_SEPARATOR) {
            return Err(format!(
                "group names may not contain '{GROUP_PATH_SEPARATOR}' (it separates nested groups \
                 in the group tag): {name:?}"
            ));
        }
        let path = format!("{}{GROUP_PATH_SEPARATOR}{name}", self.path());
        let (path, tags) = match self.scopes.get_key_value(path.as_str()) {
            Some((path, tags)) => (path.clone(), tags.clone()),
            None => {
                let tags = intern(self.root.with([("group", path.as_str())]));
                let path: Arc<str> = path.into();
                if self.scopes.len() < CACHE_LIMIT {
                    self.scopes.insert(path.clone(), tags.clone());
                }
                (path, tags)
            }
        };
        self.open.push(Open {
            path,
            started: Instant::now(),
            tags,
        });
        Ok(())
    }

    /// Leave the innermost group: its tags and when it was entered, for
    /// `group_duration`. `None` outside any group.
    pub fn exit(&mut self) -> Option<(Tags, Instant)> {
        self.open.pop().map(|g| (g.tags, g.started))
    }

    /// Back to the top level, as at the start of an iteration: groups an
    /// iteration left open (it failed inside one) end without a duration.
    pub fn reset(&mut self) {
        self.open.clear();
    }

    /// The tags of check `name` in the current scope.
    pub fn check_tags(&mut self, name: &str) -> Tags {
        if let Some(tags) = self.checks.get(self.path()).and_then(|m| m.get(name)) {
            return tags.clone();
        }
        let tags = intern(self.tags().with([("check", name)]));
        if self.checks.len() < CACHE_LIMIT {
            let path = self
                .open
                .last()
                .map_or_else(|| "".into(), |g| g.path.clone());
            let names = self.checks.entry(path).or_default();
            if names.len() < CACHE_LIMIT {
                names.insert(name.to_owned(), tags.clone());
            }
        }
        tags
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wload_metrics::TagSet;

    fn groups() -> Groups {
        Groups::new(Arc::new(TagSet::new([("scenario", "default")])))
    }

    #[test]
    fn nested_groups_tag_with_their_path_and_restore_on_exit() {
        let mut g = groups();
        assert_eq!(g.tags().get("group"), None);
        g.enter("outer").unwrap();
        assert_eq!(g.tags().get("group"), Some("::outer"));
        g.enter("inner").unwrap();
        assert_eq!(g.tags().get("group"), Some("::outer::inner"));
        assert_eq!(g.tags().get("scenario"), Some("default"));
        let (tags, _) = g.exit().unwrap();
        assert_eq!(tags.get("group"), Some("::outer::inner"));
        assert_eq!(g.tags().get("group"), Some("::outer"));
        g.exit().unwrap();
        assert_eq!(g.tags().get("group"), None);
        assert!(g.exit().is_none());
    }

    #[test]
    fn checks_are_tagged_with_their_group_and_cached_per_group() {
        let mut g = groups();
        let top = g.check_tags("ok");
        assert_eq!(top.get("group"), None);
        g.enter("login").unwrap();
        let inside = g.check_tags("ok");
        assert_eq!(inside.get("group"), Some("::login"));
        assert_eq!(inside.get("check"), Some("ok"));
        assert!(Arc::ptr_eq(&inside, &g.check_tags("ok")));
        g.reset();
        assert!(Arc::ptr_eq(&top, &g.check_tags("ok")));
    }

    #[test]
    fn separator_in_a_name_is_refused() {
        let mut g = groups();
        let err = g.enter("a::b").unwrap_err();
        assert!(err.contains("may not contain '::'"), "{err}");
        assert_eq!(g.path(), "");
    }
}
