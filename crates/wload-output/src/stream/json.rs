//! `--out json=FILE`: one JSON object per line for each interval and
//! series (metric + tag set) that had samples in it. The schema is in
//! docs/guide.md ("Streaming outputs").

use std::io::{BufWriter, Write};

use anyhow::Result;
use serde_json::{Map, Value, json};

use super::{IntervalView, Output, TREND_COLUMNS};
use crate::trend_stat;
use wload_metrics::Sink;

pub struct JsonOut {
    out: BufWriter<std::fs::File>,
}

impl JsonOut {
    pub fn new(file: std::fs::File) -> JsonOut {
        JsonOut {
            out: BufWriter::new(file),
        }
    }
}

/// The `values` object of one series in one interval.
pub fn values(sink: &Sink, seconds: f64) -> Value {
    match sink {
        Sink::Counter { sum, count } => json!({
            "count": count,
            "sum": sum,
            "rate": if seconds > 0.0 { sum / seconds } else { 0.0 },
        }),
        Sink::Gauge { last, min, max, .. } => json!({
            "value": last,
            "min": min,
            "max": max,
        }),
        Sink::Rate { trues, total } => json!({
            "passes": trues,
            "fails": total - trues,
            "rate": if *total == 0 { 0.0 } else { *trues as f64 / *total as f64 },
        }),
        Sink::Trend(t) => {
            let mut m = Map::new();
            m.insert("count".into(), json!(t.count));
            m.insert("sum".into(), json!(t.sum));
            for stat in TREND_COLUMNS {
                m.insert(stat.into(), json!(trend_stat(t, stat)));
            }
            Value::Object(m)
        }
    }
}

impl Output for JsonOut {
    fn write(&mut self, view: &IntervalView) -> Result<()> {
        for (def, tags, sink) in view.sorted() {
            let tags: Map<String, Value> = tags.iter().map(|(k, v)| (k.into(), json!(v))).collect();
            let line = json!({
                "time": view.time,
                "start": view.start,
                "end": view.end,
                "metric": def.name,
                "type": def.kind.as_str(),
                "tags": tags,
                "values": values(sink, view.seconds()),
            });
            serde_json::to_writer(&mut self.out, &line)?;
            self.out.write_all(b"\n")?;
        }
        // One flush per interval: the file is readable while the run goes.
        self.out.flush()?;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
