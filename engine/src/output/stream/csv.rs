//! `--out csv=FILE`: a header, then one row per interval and series
//! (metric + tag set) that had samples in it. Cells that do not apply to
//! a metric's type are empty. The columns are in docs/guide.md.

use std::io::{BufWriter, Write};

use anyhow::Result;

use super::{IntervalView, Output, TREND_COLUMNS};
use crate::metrics::Sink;
use crate::output::trend_stat;

pub struct CsvOut {
    out: BufWriter<std::fs::File>,
}

/// The columns before the trend statistics.
const COLUMNS: [&str; 12] = [
    "time", "start", "end", "metric", "type", "tags", "count", "sum", "rate", "value", "passes",
    "fails",
];

impl CsvOut {
    pub fn new(file: std::fs::File) -> Result<CsvOut> {
        let mut out = BufWriter::new(file);
        let header: Vec<&str> = COLUMNS
            .iter()
            .chain(TREND_COLUMNS.iter())
            .copied()
            .collect();
        writeln!(out, "{}", header.join(","))?;
        out.flush()?;
        Ok(CsvOut { out })
    }
}

/// Quote a cell if it holds a separator, a quote or a line break.
fn cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn num(v: f64) -> String {
    format!("{v}")
}

impl Output for CsvOut {
    fn write(&mut self, view: &IntervalView) -> Result<()> {
        for (def, tags, sink) in view.sorted() {
            // `key=value` pairs joined by `&`, as in a query string.
            let tags: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let mut row = vec![
                num(view.time),
                num(view.start),
                num(view.end),
                cell(&def.name),
                def.kind.as_str().to_owned(),
                cell(&tags.join("&")),
            ];
            // count, sum, rate, value, passes, fails, then the trend stats.
            let mut rest = vec![String::new(); 6 + TREND_COLUMNS.len()];
            match sink {
                Sink::Counter { sum, count } => {
                    rest[0] = count.to_string();
                    rest[1] = num(*sum);
                    let secs = view.seconds();
                    rest[2] = num(if secs > 0.0 { sum / secs } else { 0.0 });
                }
                Sink::Gauge { last, min, max, .. } => {
                    rest[3] = num(*last);
                    rest[6 + 1] = num(*min);
                    rest[6 + 3] = num(*max);
                }
                Sink::Rate { trues, total } => {
                    rest[0] = total.to_string();
                    rest[2] = num(if *total == 0 {
                        0.0
                    } else {
                        *trues as f64 / *total as f64
                    });
                    rest[4] = trues.to_string();
                    rest[5] = (total - trues).to_string();
                }
                Sink::Trend(t) => {
                    rest[0] = t.count.to_string();
                    rest[1] = num(t.sum);
                    for (i, stat) in TREND_COLUMNS.iter().enumerate() {
                        rest[6 + i] = num(trend_stat(t, stat));
                    }
                }
            }
            row.extend(rest);
            writeln!(self.out, "{}", row.join(","))?;
        }
        self.out.flush()?;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.out.flush()?;
        Ok(())
    }
}
