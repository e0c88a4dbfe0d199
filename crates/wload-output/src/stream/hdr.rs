//! `--out hdr=FILE`: an HdrHistogram interval log (the format of the Java
//! HistogramLogWriter, readable by HdrHistogram tools): for each interval,
//! one compressed histogram per trend series, tagged with the metric, its
//! unit and its tag set (see [`super::tag`]). `wload merge` reads these
//! logs back and merges them exactly.

use std::io::{BufWriter, Write};
use std::time::{Duration, SystemTime};

use anyhow::{Result, anyhow};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use super::{IntervalView, Output, tag};
use wload_metrics::{Sink, TrendHistogram};
use wload_units::saturating_secs;

pub struct HdrOut {
    out: BufWriter<std::fs::File>,
    serializer: V2DeflateSerializer,
}

impl HdrOut {
    pub fn new(file: std::fs::File, run_start: SystemTime) -> Result<HdrOut> {
        let mut out = BufWriter::new(file);
        let mut serializer = V2DeflateSerializer::new();
        let start = run_start
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        IntervalLogWriterBuilder::new()
            .add_comment("wload interval log: one histogram per interval and trend series")
            .add_comment("tag: METRIC;UNIT;KEY=VALUE;... with UNIT ns (values in nanoseconds) or milli (values x 1000)")
            .with_start_time(SystemTime::UNIX_EPOCH + start)
            .with_base_time(SystemTime::UNIX_EPOCH + start)
            .begin_log_with(&mut out, &mut serializer)?;
        out.flush()?;
        Ok(HdrOut { out, serializer })
    }
}

impl Output for HdrOut {
    fn write(&mut self, view: &IntervalView) -> Result<()> {
        // No headers: this writer only appends intervals.
        let mut log =
            IntervalLogWriterBuilder::new().begin_log_with(&mut self.out, &mut self.serializer)?;
        // Seconds the run measured, finite; saturating all the same, as
        // a panic here would lose the run's summary.
        let start = saturating_secs(view.start);
        let length = saturating_secs(view.seconds());
        for (def, tags, sink) in view.sorted() {
            let Sink::Trend(t) = sink else { continue };
            let text = tag::encode(&def.name, t.is_time(), tags);
            let tag = Tag::new(&text)
                .ok_or_else(|| anyhow!("interval tag {text:?} has a separator left in it"))?;
            // The same log line for either width of counts: the V2
            // format writes them as varints.
            match t.histogram() {
                TrendHistogram::Narrow(h) => log.write_histogram(h, start, length, Some(tag)),
                TrendHistogram::Wide(h) => log.write_histogram(h, start, length, Some(tag)),
            }
            .map_err(|e| anyhow!("cannot write the histogram of {text}: {e}"))?;
        }
        self.out.flush()?;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
