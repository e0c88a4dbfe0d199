//! The checks of a run arranged in its groups, as k6 shows them: a tree
//! from the top level (path "") down through `::outer::inner`, each node
//! with its own checks' pass/fail totals. The summary prints it and the
//! export writes it as `root_group`.

use std::collections::BTreeMap;

use super::{CheckTotals, Report};
use wload_metrics::GROUP_PATH_SEPARATOR as SEP;
use wload_metrics::{Builtin, Sink};

/// One group (or the top level) and what ran in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupTotals {
    /// The group's own name; "" for the top level.
    pub name: String,
    /// k6's path: "" for the top level, `::outer::inner` below it.
    pub path: String,
    /// Checks made directly in this group, by name.
    pub checks: Vec<CheckTotals>,
    /// Groups entered directly in this one, by name.
    pub groups: Vec<GroupTotals>,
}

impl GroupTotals {
    fn new(name: &str, path: String) -> GroupTotals {
        GroupTotals {
            name: name.to_owned(),
            path,
            checks: Vec::new(),
            groups: Vec::new(),
        }
    }

    /// Passes and fails of every check in this group and below it.
    pub fn totals(&self) -> (u64, u64) {
        let own = self
            .checks
            .iter()
            .fold((0, 0), |(p, f), c| (p + c.passes, f + c.fails));
        self.groups.iter().fold(own, |(p, f), g| {
            let (gp, gf) = g.totals();
            (p + gp, f + gf)
        })
    }

    /// The node at `path` below this one, created with its parents.
    fn node(&mut self, path: &str) -> &mut GroupTotals {
        let mut node = self;
        let mut at = String::new();
        for name in path.split(SEP).skip(1) {
            at.push_str(SEP);
            at.push_str(name);
            let i = match node.groups.iter().position(|g| g.name == name) {
                Some(i) => i,
                None => {
                    node.groups.push(GroupTotals::new(name, at.clone()));
                    node.groups.len() - 1
                }
            };
            node = &mut node.groups[i];
        }
        node
    }

    fn sort(&mut self) {
        self.groups.sort_by(|a, b| a.name.cmp(&b.name));
        for g in &mut self.groups {
            g.sort();
        }
    }
}

impl Report {
    /// The group tree with each group's checks. A group appears once it has
    /// been left at least once (`group_duration`) or holds a check.
    pub fn groups(&self) -> GroupTotals {
        let mut checks: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
        for (tags, sink) in self.snapshot.series_of(Builtin::Checks.id()) {
            let (Some(name), Sink::Rate { trues, total }) = (tags.get("check"), sink) else {
                continue;
            };
            let group = tags.get("group").unwrap_or("").to_owned();
            let e = checks.entry((group, name.to_owned())).or_default();
            e.0 += trues;
            e.1 += total - trues;
        }
        let mut root = GroupTotals::new("", String::new());
        for (tags, _) in self.snapshot.series_of(Builtin::GroupDuration.id()) {
            if let Some(path) = tags.get("group") {
                root.node(path);
            }
        }
        for ((group, name), (passes, fails)) in checks {
            root.node(&group).checks.push(CheckTotals {
                name,
                passes,
                fails,
            });
        }
        root.sort();
        root
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_make_a_tree_with_totals() {
        let mut root = GroupTotals::new("", String::new());
        root.node("::cart::add").checks.push(CheckTotals {
            name: "added".into(),
            passes: 3,
            fails: 1,
        });
        root.node("::cart").checks.push(CheckTotals {
            name: "cart ok".into(),
            passes: 2,
            fails: 0,
        });
        root.node("::home");
        root.node("").checks.push(CheckTotals {
            name: "top".into(),
            passes: 5,
            fails: 0,
        });
        root.sort();
        assert_eq!(root.totals(), (10, 1));
        let names: Vec<_> = root.groups.iter().map(|g| g.path.as_str()).collect();
        assert_eq!(names, ["::cart", "::home"]);
        let cart = &root.groups[0];
        assert_eq!(cart.groups[0].path, "::cart::add");
        assert_eq!(cart.groups[0].name, "add");
        assert_eq!(cart.totals(), (5, 1));
        assert_eq!(root.checks[0].name, "top");
    }
}
