//! `--out csv=FILE`: a header, then one row per interval and series
//! (metric + tag set) that had samples in it. Cells that do not apply to
//! a metric's type are empty. The columns are in docs/guide.md.

use std::io::{BufWriter, Write};

use anyhow::Result;

use super::{IntervalView, Output, TREND_COLUMNS};
use crate::trend_stat;
use wload_metrics::Sink;

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
            // The cells after `tags`, by column name.
            let mut rest = vec![String::new(); 6 + TREND_COLUMNS.len()];
            let mut set = |column: &str, value: String| {
                let i = COLUMNS[6..]
                    .iter()
                    .chain(TREND_COLUMNS.iter())
                    .position(|c| *c == column)
                    .expect("a known column");
                rest[i] = value;
            };
            match sink {
                Sink::Counter { sum, count } => {
                    set("count", count.to_string());
                    set("sum", num(*sum));
                    let secs = view.seconds();
                    set("rate", num(if secs > 0.0 { sum / secs } else { 0.0 }));
                }
                Sink::Gauge { last, min, max, .. } => {
                    set("value", num(*last));
                    set("min", num(*min));
                    set("max", num(*max));
                }
                Sink::Rate { trues, total } => {
                    set("count", total.to_string());
                    let rate = if *total == 0 {
                        0.0
                    } else {
                        *trues as f64 / *total as f64
                    };
                    set("rate", num(rate));
                    set("passes", trues.to_string());
                    set("fails", (total - trues).to_string());
                }
                Sink::Trend(t) => {
                    set("count", t.count.to_string());
                    set("sum", num(t.sum));
                    for stat in TREND_COLUMNS {
                        set(stat, num(trend_stat(t, stat)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_with_separators_are_quoted() {
        assert_eq!(cell("plain"), "plain");
        assert_eq!(cell("a,b"), "\"a,b\"");
        assert_eq!(cell("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(cell("two\nlines"), "\"two\nlines\"");
    }
}
