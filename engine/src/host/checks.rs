//! `wload:test/checks`: each outcome is a sample of the `checks` rate,
//! tagged with the check's name.

use std::sync::Arc;

use super::VuState;
use super::wload::test::checks::Host;
use crate::metrics::Builtin;

/// Distinct check names whose tag sets a VU keeps ready.
const CHECK_TAG_CACHE: usize = 1024;

impl Host for VuState {
    fn check(
        &mut self,
        name: String,
        ok: bool,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<bool> {
        let sample = [(Builtin::Checks.id(), if ok { 1.0 } else { 0.0 })];
        if tags.is_empty() {
            if let Some(set) = self.check_tags.get(&name) {
                self.shared.recorder.record(set, &sample);
                return Ok(ok);
            }
            let set = Arc::new(self.base_tags.with([("check", name.as_str())]));
            self.shared.recorder.record(&set, &sample);
            if self.check_tags.len() < CHECK_TAG_CACHE {
                self.check_tags.insert(name, set);
            }
        } else {
            let set = Arc::new(
                self.base_tags
                    .with(tags.into_iter().chain([("check".to_owned(), name)])),
            );
            self.shared.recorder.record(&set, &sample);
        }
        Ok(ok)
    }
}
