//! `GET /v1/runs/{id}/events`: a run as server-sent events, from its
//! start (a late subscriber gets what it missed): `run` (the record, at
//! the start), `console` (each line of the run's console: header and
//! errors), `progress` (each drawing of its progress display: lines, and
//! whether it is the last), `interval` (each line of the interval
//! metrics, the `--out json` layout), `status` (k6's `/v1/status` after
//! each change)
//! and, last, `end` (the record as the run ended). The stream ends after
//! `end`; a finished run's stream replays its files and ends at once.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::Service;
use super::reply::{self, Reply, sse};
use crate::job::RunFiles;
use crate::store::RunRecord;

/// How often the files are looked at for new lines.
const POLL: Duration = Duration::from_millis(200);

pub fn stream(service: &Arc<Service>, tenant: &str, record: RunRecord) -> Reply {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let files = RunFiles::new(&service.runner.run_dir(&record.id));
    let live = service.runner.live(&record.id);
    let service = service.clone();
    let tenant = tenant.to_owned();
    tokio::spawn(async move {
        let first = serde_json::to_string(&record).unwrap_or_default();
        if tx.send(sse("run", &first)).await.is_err() {
            return;
        }
        let mut intervals = Tail::new(files.intervals());
        let mut console = Tail::new(files.console());
        let mut progress = Tail::new(files.progress());
        let mut status = live.map(|l| l.status.clone());
        loop {
            for (name, tail) in [
                ("console", &mut console),
                ("progress", &mut progress),
                ("interval", &mut intervals),
            ] {
                for line in tail.new_lines() {
                    if tx.send(sse(name, &line)).await.is_err() {
                        return;
                    }
                }
            }
            let Some(watch) = status.as_mut() else { break };
            tokio::select! {
                changed = watch.changed() => {
                    let now = watch.borrow_and_update().clone();
                    match (changed, now) {
                        (Ok(()), Some(s)) => {
                            if tx.send(sse("status", &s.to_string())).await.is_err() {
                                return;
                            }
                        }
                        // Ended: one more look at the files, then `end`.
                        _ => status = None,
                    }
                }
                _ = tokio::time::sleep(POLL) => {}
                _ = tx.closed() => return,
            }
        }
        let end = match service.store.run(&tenant, &record.id) {
            Ok(Some(r)) => serde_json::to_string(&r).unwrap_or_default(),
            _ => first,
        };
        let _ = tx.send(sse("end", &end)).await;
    });
    reply::event_stream(rx)
}

/// New complete lines of a file that grows.
struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
        }
    }

    fn new_lines(&mut self) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.path) else {
            return Vec::new();
        };
        if f.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut buf = Vec::new();
        let Ok(n) = f.read_to_end(&mut buf) else {
            return Vec::new();
        };
        self.offset += n as u64;
        self.partial.extend_from_slice(&buf);
        let mut lines = Vec::new();
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            lines.push(text.trim_end_matches('\r').to_owned());
        }
        lines
    }
}
