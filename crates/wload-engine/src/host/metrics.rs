//! `wload:test/metrics`: custom metrics defined in the run's registry and
//! recorded like built-in ones.

use std::sync::Arc;

use super::VuState;
use super::wload::test::metrics::{Host, MetricKind as WitKind};
use wload_metrics::MetricKind;

impl Host for VuState {
    fn define(
        &mut self,
        name: String,
        kind: WitKind,
        is_time: bool,
    ) -> wasmtime::Result<Result<u32, String>> {
        let kind = match kind {
            WitKind::Counter => MetricKind::Counter,
            WitKind::Gauge => MetricKind::Gauge,
            WitKind::Rate => MetricKind::Rate,
            WitKind::Trend => MetricKind::Trend,
        };
        Ok(self.shared.recorder.registry().define(&name, kind, is_time))
    }

    fn add(
        &mut self,
        metric: u32,
        value: f64,
        tags: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        // Ids index the registry's definitions, which only grow: once an
        // id is known, every smaller one is too, and the registry's lock
        // (shared by every VU) is not taken again for them.
        if metric >= self.metrics_known {
            if self.shared.recorder.registry().kind(metric).is_none() {
                return Err(wasmtime::Error::msg(format!(
                    "metrics.add: {metric} is not a metric id returned by metrics.define"
                )));
            }
            self.metrics_known = metric + 1;
        }
        let set = if tags.is_empty() {
            self.tags().clone()
        } else {
            Arc::new(self.tags().with(tags))
        };
        self.shared.recorder.record(&set, &[(metric, value)]);
        Ok(())
    }
}
