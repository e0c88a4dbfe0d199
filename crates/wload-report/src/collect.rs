//! The run's side of both pages: [`Collector`], an interval sink the
//! run's outputs hold, hands each interval to a thread of its own
//! (`wload-report`), which keeps the timeline of the report and, with a
//! dashboard, the run's totals so far and the frames its pages get. The
//! aggregation thread only clones the interval's aggregates (one sink
//! per series, as every `--out` file reads them) and sends them: the
//! percentiles, the JSON and the writes to browsers happen off it, so a
//! slow browser never delays the run (one that takes no frame for 5s is
//! dropped).

use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, anyhow};
use serde_json::{Map, Value, json};

use wload_metrics::threshold::{Outcome, Threshold, Verdict};
use wload_metrics::{MetricDef, Snapshot};
use wload_output::progress::ScenarioPlan;
use wload_output::stream::{IntervalView, Output, RunStart, ScenarioVus};
use wload_output::{Report, default_trend_stats};

use crate::dashboard::Clients;
use crate::model::{self, Meta, Timeline};

/// What the collector's thread knows of the run so far; shared with the
/// dashboard's server, which sends it to a page that connects.
pub(crate) struct State {
    pub meta: Meta,
    pub timeline: Timeline,
    /// The run's totals so far (kept only with a dashboard).
    pub totals: Option<Report>,
    pub thresholds: Vec<Threshold>,
    /// The figures of the last frame, for a page that connects late.
    pub figures: Map<String, Value>,
    pub running: bool,
    pub finished: bool,
}

impl State {
    /// The whole model as the pages start from it.
    pub fn model(&self) -> Value {
        let mut m = self.figures.clone();
        m.insert("title".into(), json!(self.meta.title));
        m.insert("live".into(), json!(true));
        m.insert("running".into(), json!(self.running));
        m.insert("finished".into(), json!(self.finished));
        m.insert("scenarios".into(), model::scenarios(&self.meta.scenarios));
        m.insert(
            "started".into(),
            json!(self.meta.started.map(wload_units::rfc3339)),
        );
        m.insert("timeline".into(), self.timeline.to_json());
        Value::Object(m)
    }
}

/// The shared state, which a panicking holder does not poison for good:
/// the figures are replaced whole each interval.
pub(crate) type Shared = Arc<Mutex<State>>;

pub(crate) fn lock(state: &Shared) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

enum Msg {
    Start {
        test: String,
        scenarios: Vec<ScenarioPlan>,
        thresholds: Vec<Threshold>,
        trend_stats: Vec<String>,
        started: SystemTime,
    },
    Interval {
        series: Snapshot,
        start: f64,
        end: f64,
        scenario_vus: Vec<ScenarioVus>,
        /// Only when the run's metrics changed (guests define metrics
        /// while they run).
        metrics: Option<Vec<MetricDef>>,
    },
}

/// What the CLI keeps of a collector: the timeline once the run is over.
#[derive(Clone)]
pub struct Timelines {
    state: Shared,
}

impl Timelines {
    /// The timeline and what the run told about itself.
    pub fn take(&self) -> (Timeline, Meta) {
        let s = lock(&self.state);
        (s.timeline.clone(), s.meta.clone())
    }
}

/// The interval sink of the pages.
pub struct Collector {
    tx: Option<mpsc::Sender<Msg>>,
    worker: Option<JoinHandle<()>>,
    metrics_seen: usize,
}

impl Collector {
    /// A collector for the report only (`--report`).
    pub fn new() -> Result<(Collector, Timelines)> {
        Collector::with_clients(None)
    }

    /// A collector that also sends frames to the dashboard's pages.
    pub(crate) fn with_clients(
        clients: Option<(Clients, Shared)>,
    ) -> Result<(Collector, Timelines)> {
        let (state, clients) = match clients {
            Some((c, s)) => (s, Some(c)),
            None => (new_state(), None),
        };
        let (tx, rx) = mpsc::channel();
        let worker_state = state.clone();
        let worker = std::thread::Builder::new()
            .name("wload-report".into())
            .spawn(move || work(rx, worker_state, clients))
            .context("cannot start the report's thread")?;
        Ok((
            Collector {
                tx: Some(tx),
                worker: Some(worker),
                metrics_seen: 0,
            },
            Timelines { state },
        ))
    }

    fn send(&self, msg: Msg) -> Result<()> {
        self.tx
            .as_ref()
            .and_then(|tx| tx.send(msg).ok())
            .ok_or_else(|| anyhow!("the report's thread has stopped"))
    }
}

pub(crate) fn new_state() -> Shared {
    Arc::new(Mutex::new(State {
        meta: Meta::default(),
        timeline: Timeline::default(),
        totals: None,
        thresholds: Vec::new(),
        figures: Map::new(),
        running: false,
        finished: false,
    }))
}

impl Output for Collector {
    fn start(&mut self, run: &RunStart) -> Result<()> {
        self.send(Msg::Start {
            test: run.test.to_owned(),
            scenarios: run.scenarios.to_vec(),
            thresholds: run.thresholds.to_vec(),
            trend_stats: run.trend_stats.to_vec(),
            started: run.started,
        })
    }

    fn write(&mut self, view: &IntervalView) -> Result<()> {
        let metrics = (view.metrics.len() != self.metrics_seen).then(|| view.metrics.to_vec());
        self.metrics_seen = view.metrics.len();
        self.send(Msg::Interval {
            series: view.interval.series.clone(),
            start: view.start,
            end: view.end,
            scenario_vus: view.scenario_vus.to_vec(),
            metrics,
        })
    }

    fn finish(&mut self) -> Result<()> {
        // Closing the channel ends the thread once it has drained it.
        self.tx = None;
        if let Some(worker) = self.worker.take() {
            worker
                .join()
                .map_err(|_| anyhow!("the report's thread panicked"))?;
        }
        Ok(())
    }
}

/// The collector's thread: a point per interval; with a dashboard, the
/// totals, the thresholds' state and a frame to every page.
fn work(rx: mpsc::Receiver<Msg>, state: Shared, clients: Option<Clients>) {
    let live = clients.is_some();
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Start {
                test,
                scenarios,
                thresholds,
                trend_stats,
                started,
            } => {
                let mut s = lock(&state);
                s.meta.title = test;
                s.meta.scenarios = scenarios;
                s.meta.started = Some(started);
                s.thresholds = thresholds;
                s.running = true;
                if live {
                    s.totals = Some(Report {
                        snapshot: Snapshot::default(),
                        metrics: Vec::new(),
                        elapsed: Duration::ZERO,
                        failures: (Vec::new(), 0),
                        interrupted: 0,
                        thresholds: Vec::new(),
                        trend_stats: if trend_stats.is_empty() {
                            default_trend_stats()
                        } else {
                            trend_stats
                        },
                        clock: None,
                    });
                }
                // Sent with the state held, so that a page connecting now
                // gets either this or the model it is part of, not both.
                if let Some(c) = &clients {
                    c.send("model", &s.model());
                }
            }
            Msg::Interval {
                series,
                start,
                end,
                scenario_vus,
                metrics,
            } => {
                let point = model::point(&series, start, end, &scenario_vus);
                let mut s = lock(&state);
                s.timeline.points.push(point.clone());
                let thresholds = s.thresholds.clone();
                let Some(totals) = s.totals.as_mut() else {
                    continue;
                };
                if let Some(m) = metrics {
                    totals.metrics = m;
                }
                for (key, sink) in series.series {
                    match totals.snapshot.series.get_mut(&key) {
                        Some(t) => t.merge(&sink),
                        None => {
                            totals.snapshot.series.insert(key, sink);
                        }
                    }
                }
                totals.elapsed = Duration::try_from_secs_f64(end.max(0.0)).unwrap_or_default();
                totals.thresholds = evaluate(&thresholds, totals);
                let figures = model::figures(totals);
                s.figures = figures.clone();
                if let Some(c) = &clients {
                    let mut frame = figures;
                    frame.insert("point".into(), Value::Object(point));
                    c.send("frame", &Value::Object(frame));
                }
            }
        }
    }
    let mut s = lock(&state);
    s.running = false;
    s.finished = true;
    if let Some(c) = &clients {
        c.send("end", &json!({ "finished": true }));
    }
}

/// The thresholds' state on the totals so far, as the run will judge
/// them at its end; a metric not defined yet has no value yet (the run
/// fails it only at the end, if it never appears).
fn evaluate(thresholds: &[Threshold], totals: &Report) -> Vec<Outcome> {
    thresholds
        .iter()
        .map(|t| {
            let verdict = match totals.metrics.iter().position(|d| d.name == t.metric) {
                Some(id) => t.evaluate(&totals.snapshot, id as u32, totals.elapsed),
                None => Verdict {
                    ok: true,
                    observed: None,
                },
            };
            Outcome {
                threshold: t.clone(),
                verdict,
                note: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpStream;

    use super::*;
    use crate::Dashboard;
    use wload_metrics::threshold::parse_all;
    use wload_metrics::{Builtin, Recorder, Registry, untagged};

    /// Two intervals of 3 and 2 requests, through `sink`.
    fn feed(sink: &mut Collector) {
        let rec = Recorder::new(Arc::new(Registry::new()));
        let mut errors = Vec::new();
        let thresholds = parse_all(&json!({ "http_reqs": ["count<4"] }), &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        sink.start(&RunStart {
            test: "t.wasm",
            scenarios: &[],
            thresholds: &thresholds,
            trend_stats: &[],
            started: SystemTime::now(),
        })
        .unwrap();
        let metrics = rec.registry().all();
        for (i, n) in [3, 2].into_iter().enumerate() {
            for _ in 0..n {
                rec.record(&untagged(), &[(Builtin::HttpReqs.id(), 1.0)]);
            }
            let interval = rec.drain();
            let vus = [ScenarioVus {
                name: "default".into(),
                active: 2,
            }];
            sink.write(&IntervalView {
                scenario_vus: &vus,
                interval: &interval,
                start: i as f64,
                end: i as f64 + 1.0,
                time: 0.0,
                metrics: &metrics,
            })
            .unwrap();
        }
        sink.finish().unwrap();
    }

    #[test]
    fn the_report_collector_keeps_a_point_per_interval() {
        let (mut sink, timelines) = Collector::new().unwrap();
        feed(&mut sink);
        let (timeline, meta) = timelines.take();
        assert_eq!(meta.title, "t.wasm");
        let reqs: Vec<&Value> = timeline.points.iter().map(|p| &p["reqs"]).collect();
        assert_eq!(reqs, [&json!(3.0), &json!(2.0)]);
        assert_eq!(timeline.points[1]["scenario_vus"]["default"], 2);
    }

    #[test]
    fn the_dashboard_sends_totals_and_threshold_states_per_frame() {
        let dashboard = Dashboard::start(0).unwrap();
        let mut events = TcpStream::connect(dashboard.addr()).unwrap();
        events
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            events,
            "GET /events HTTP/1.1\r\nhost: 127.0.0.1:{}\r\n\r\n",
            dashboard.addr().port()
        )
        .unwrap();
        let mut lines = BufReader::new(events.try_clone().unwrap()).lines();
        // The page is registered once its model has been sent.
        assert!(lines.any(|l| l.unwrap() == "event: model"));
        let (mut sink, _) = dashboard.collector().unwrap();
        feed(&mut sink);
        let mut frames = Vec::new();
        let mut event = String::new();
        for line in lines.map_while(Result::ok) {
            if let Some(e) = line.strip_prefix("event: ") {
                event = e.to_owned();
            } else if let Some(data) = line.strip_prefix("data: ") {
                if event == "end" {
                    break;
                }
                if event == "frame" {
                    frames.push(serde_json::from_str::<Value>(data).unwrap());
                }
            }
        }
        assert_eq!(frames.len(), 2);
        let totals: Vec<&Value> = frames
            .iter()
            .map(|f| &f["summary"]["metrics"]["http_reqs"]["count"])
            .collect();
        assert_eq!(totals, [&json!(3.0), &json!(5.0)]);
        let states: Vec<&Value> = frames.iter().map(|f| &f["thresholds"][0]["ok"]).collect();
        assert_eq!(states, [&json!(true), &json!(false)]);
        assert_eq!(frames[1]["point"]["reqs"], 2.0);
    }
}
