//! Custom metrics of every kind, with values a test can predict: iteration
//! `n` (0-based, counted over the whole run by one VU) adds `n + 1` to the
//! counter `items` (tagged `size=big` from 6 up), sets the gauge `queue` to
//! `n + 1`, adds `n % 3 == 0` to the rate `lucky`, `0.5 × (n + 1)` to the
//! plain trend `score` and `1.5 × n` ms to the time trend `think`. No
//! requests: with `--vus 1 --iterations 10` every figure of the summary
//! is known in advance (the end-to-end tests compare them exactly).
//!
//! ```sh
//! wload run metrics.wasm --vus 1 --iterations 10
//! ```

use wload_sdk::prelude::*;

struct Metrics {
    items: Counter,
    queue: Gauge,
    lucky: Rate,
    score: Trend,
    think: Trend,
}

impl Test for Metrics {
    fn new() -> Self {
        Metrics {
            items: Counter::new("items"),
            queue: Gauge::new("queue"),
            lucky: Rate::new("lucky"),
            score: Trend::new("score"),
            think: Trend::time("think"),
        }
    }

    fn iteration(&mut self) -> Result<()> {
        let n = vu::iteration();
        let size = if n >= 6 { "big" } else { "small" };
        self.items.add_tagged((n + 1) as f64, &[("size", size)]);
        self.queue.set((n + 1) as f64);
        self.lucky.add(n.is_multiple_of(3));
        self.score.add(0.5 * (n + 1) as f64);
        self.think.add_duration(Duration::from_micros(1500 * n));
        Ok(())
    }
}

wload_sdk::export_test!(Metrics);
