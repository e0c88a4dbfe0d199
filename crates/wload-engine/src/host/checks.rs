//! `wload:test/checks`: each outcome is a sample of the `checks` rate,
//! tagged with the check's name (and its group's path inside a group).

use std::sync::Arc;

use super::VuState;
use super::wload::test::checks::Host;
use wload_metrics::Builtin;

impl Host for VuState {
    fn check(
        &mut self,
        name: String,
        ok: bool,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<bool> {
        let sample = [(Builtin::Checks.id(), if ok { 1.0 } else { 0.0 })];
        if tags.is_empty() {
            let set = self.groups.check_tags(&name);
            self.shared.recorder.record(&set, &sample);
        } else {
            let set = Arc::new(
                self.tags()
                    .with(tags.into_iter().chain([("check".to_owned(), name)])),
            );
            self.shared.recorder.record(&set, &sample);
        }
        Ok(ok)
    }
}
