//! Hostile servers (issue 14): a load tester points at servers it does not
//! control, and some of them, broken or malicious, never end a body, inflate
//! a small body into gigabytes, never answer, or trickle a head a byte at a
//! time. A runaway here once grew wload to 23 GB until the OOM killer took
//! it. Each test runs the real binary against one such server and asserts
//! what the fixes promise (/work/spec/issue14.md at the time of writing):
//! the request fails with a known error code, the run ends on time, the
//! summary is still printed, and memory stays bounded.
//!
//! Every run is watched: `/proc/<pid>/status` is polled every 50 ms and the
//! child is killed once its peak RSS passes [`RSS_LIMIT_KIB`] or it outlives
//! [`KILL_AFTER`], so that a regression fails the test instead of the
//! machine.
//!
//! The wload flags each server needs, and why:
//! - every test: `--config` with one `constant-vus` scenario (2 VUs, 3 s,
//!   `gracefulStop` 2 s, the default of 30 s would make "on time"
//!   meaningless), `--out json=FILE` (its `http_reqs` lines carry the
//!   engine's `error_code` tag, whatever the guest checks; the summary
//!   export has no per-tag numbers), `--summary-export FILE`, `--quiet`;
//! - endless bodies and the gzip bomb: nothing else, the default
//!   `maxResponseBodySize` (64 MiB) is what is tested; one run also with
//!   `--discard-response-bodies`, where the body is counted, not kept;
//! - one endless body also with `--max-response-body-size 4MiB`, to see
//!   that the limit is the flag's;
//! - slowloris head: `--http-timeout 2s` (the default is 60 s);
//! - never answering: `gracefulStop` 3 s and a 2 s schedule (the spec's
//!   example), the end of `gracefulStop` is what cuts the request.
//!
//! Not covered: a server that answers 413 and closes while a large POST
//! body is still uploading needs a guest that sends a large body, and no
//! example guest does (they POST small JSON or forms to `/echo`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::*;

/// The watchdog kills wload past this peak RSS (1 GiB): a run against
/// these servers needs a few hundred MiB at most (two VUs each holding
/// up to the 64 MiB body limit), and the machine is shared.
const RSS_LIMIT_KIB: u64 = 1 << 20;

/// The watchdog kills wload still running after this long, well past
/// every bound asserted below, so that a hang shows as a failed bound
/// rather than a stuck suite.
const KILL_AFTER: Duration = Duration::from_secs(20);

/// Wall-clock slack over schedule + `gracefulStop`: the spec allows ~1 s;
/// the rest is process start and loading the (cached) guest on a shared
/// two-core machine.
const SLACK: Duration = Duration::from_secs(3);

/// The default `maxResponseBodySize`.
const BODY_LIMIT: f64 = (64 << 20) as f64;

const MIB: f64 = (1 << 20) as f64;

// Error codes of /work/spec/issue14.md (and k6's).
const MALFORMED: u32 = 1000;
const REQUEST_TIMEOUT: u32 = 1050;
const RESPONSE_TOO_LARGE: u32 = 1060;
const INTERRUPTED: u32 = 1070;
const DECODED_TOO_LARGE: u32 = 1702;

/// A server on 127.0.0.1:0 that serves each connection on a thread of its
/// own: it reads a request head, hands the socket to `act`, and reads the
/// next head if `act` returns (keep-alive). Returns the base URL.
/// The threads end when wload closes the socket (a write or read fails);
/// the accepting thread lives as long as the test process.
fn hostile(act: fn(&mut TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                while read_head(&mut stream) {
                    act(&mut stream);
                }
            });
        }
    });
    format!("http://{addr}")
}

/// Read up to the end of a request head (the guests here send no body);
/// false once the peer is gone.
fn read_head(stream: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: nothing of the next request is consumed, and heads are
    // a few hundred bytes.
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) | Err(_) => return false,
            Ok(_) => head.push(byte[0]),
        }
    }
    true
}

/// `piece` written back to back until the peer goes away.
fn write_forever(stream: &mut TcpStream, piece: &[u8]) {
    while stream.write_all(piece).is_ok() {}
}

/// What a watched run left behind.
struct Watched {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    wall: Duration,
    /// Highest `VmHWM`/`VmRSS` seen, KiB.
    peak_kib: u64,
    /// Why the watchdog killed wload, if it did.
    killed: Option<String>,
    /// The summary export (`Null` if none was written).
    summary: Value,
    /// `http_reqs` by `error_code` tag (`"none"` without one), summed over
    /// the `--out json` lines: also readable after a kill, up to the last
    /// flushed interval.
    codes: BTreeMap<String, f64>,
}

/// Run `cmd` under the watchdog. The polling runs on the thread that owns
/// the child and reaps it (`try_wait`) only when it has exited, so the pid
/// read and killed is always our child's, never a reused one. Output is
/// drained by two threads so that a chatty run cannot block on a full
/// pipe. The summary and codes are left empty for the caller.
fn run_watched(mut cmd: Command) -> Watched {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("start wload");
    let pid = child.id();
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let mut peak_kib = 0;
    let mut killed = None;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for wload") {
            break status;
        }
        peak_kib = peak_kib.max(rss_kib(pid));
        if killed.is_none() {
            if peak_kib > RSS_LIMIT_KIB {
                killed = Some(format!(
                    "killed: peak RSS {} MiB passed {} MiB after {:.1?}",
                    peak_kib >> 10,
                    RSS_LIMIT_KIB >> 10,
                    started.elapsed()
                ));
            } else if started.elapsed() > KILL_AFTER {
                killed = Some(format!("killed: still running after {KILL_AFTER:?}"));
            }
            if killed.is_some() {
                let _ = child.kill();
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Watched {
        status,
        wall: started.elapsed(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
        peak_kib,
        killed,
        summary: Value::Null,
        codes: BTreeMap::new(),
    }
}

/// A thread reading `pipe` to its end.
fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// The larger of `VmHWM` (the kernel's own peak, which also sees spikes
/// between two polls) and `VmRSS` of `pid`, KiB; 0 once it is a zombie.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("VmHWM:") || l.starts_with("VmRSS:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
}

/// The options of every run but the `gracefulStop` one: a 3 s schedule,
/// and a `gracefulStop` short enough for "on time" to mean something yet
/// longer than any request should take once the limits work.
fn three_seconds() -> (Value, Duration) {
    let options = json!({
        "scenarios": {
            "hostile": {
                "executor": "constant-vus",
                "vus": 2,
                "duration": "3s",
                "gracefulStop": "2s",
            }
        }
    });
    (options, Duration::from_secs(3 + 2))
}

/// `wload run hello.wasm` against `base_url` with `options` (a k6 options
/// object) and `args`, watched.
fn hostile_run(name: &str, base_url: &str, options: &Value, args: &str) -> Watched {
    let dir = scratch(name);
    let (export, lines) = (dir.join("summary.json"), dir.join("out.jsonl"));
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(options_file(name, options).split_whitespace())
        .args(args.split_whitespace())
        .arg("-e")
        .arg(format!("BASE_URL={base_url}"))
        .arg("--summary-export")
        .arg(&export)
        .arg("--out")
        .arg(format!("json={}", lines.display()))
        .arg("--quiet");
    let mut run = run_watched(cmd);
    run.summary = std::fs::read_to_string(&export)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    for line in std::fs::read_to_string(&lines).unwrap_or_default().lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue; // a line cut by a kill
        };
        if line["metric"] != "http_reqs" {
            continue;
        }
        let code = line["tags"]["error_code"].as_str().unwrap_or("none");
        *run.codes.entry(code.to_owned()).or_default() +=
            line["values"]["sum"].as_f64().unwrap_or(0.0);
    }
    // For the report of a passing run too (`--nocapture`).
    eprintln!("{name}: {}", run.brief());
    run
}

impl Watched {
    /// One line for failure messages: what the run did, in numbers.
    fn brief(&self) -> String {
        format!(
            "{}exit {:?}, wall {:.1?}, peak RSS {} MiB, http_reqs by error_code {:?}, \
             data_received {:.1} MiB",
            self.killed
                .as_deref()
                .map(|k| format!("{k}; "))
                .unwrap_or_default(),
            self.status.code(),
            self.wall,
            self.peak_kib >> 10,
            self.codes,
            self.metric("data_received", "count").unwrap_or(f64::NAN) / MIB,
        )
    }

    /// Everything, for the first assertion that fails.
    fn report(&self) -> String {
        let tail = |s: &str| {
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(30)..].join("\n")
        };
        format!(
            "{}\nstdout (tail):\n{}\nstderr (tail):\n{}",
            self.brief(),
            tail(&self.stdout),
            tail(&self.stderr)
        )
    }

    fn metric(&self, metric: &str, field: &str) -> Option<f64> {
        self.summary["metrics"][metric][field].as_f64()
    }

    fn requests(&self) -> f64 {
        self.codes.values().sum()
    }

    fn with_code(&self, code: u32) -> f64 {
        self.codes.get(&code.to_string()).copied().unwrap_or(0.0)
    }

    /// The run was not killed (memory and time), exited 0 within
    /// `schedule` + [`SLACK`], and printed and exported its summary, whose
    /// `http_reqs` agrees with the `--out json` lines.
    fn assert_ended_on_time(&self, schedule: Duration) {
        let report = self.report();
        assert!(self.killed.is_none(), "{report}");
        assert!(self.peak_kib < RSS_LIMIT_KIB, "{report}");
        assert!(self.wall < schedule + SLACK, "not on time: {report}");
        assert_eq!(self.status.code(), Some(0), "{report}");
        let reqs = self
            .metric("http_reqs", "count")
            // Today's binary drops requests cut at the end of the run:
            // then no request at all is recorded.
            .unwrap_or_else(|| panic!("no http_reqs in the summary export: {report}"));
        assert_eq!(reqs, self.requests(), "{report}");
        // The printed summary: `    http_reqs......: <count> ...`.
        let printed = self.stdout.lines().any(|l| {
            l.trim_start().starts_with("http_reqs")
                && l.split_once(": ")
                    .is_some_and(|(_, v)| v.split_whitespace().next() == Some(&reqs.to_string()))
        });
        assert!(
            printed,
            "summary not printed with http_reqs {reqs}: {report}"
        );
    }

    /// At least `min` requests were sent and every one of them failed with
    /// `code`: these servers never give a usable answer, so no other
    /// outcome (a success, another code) is right.
    fn assert_all_failed_with(&self, code: u32, min: f64) {
        let report = self.report();
        assert!(
            self.requests() >= min,
            "fewer than {min} requests: {report}"
        );
        assert_eq!(
            self.with_code(code),
            self.requests(),
            "not all requests failed with {code}: {report}"
        );
        assert_eq!(
            self.metric("http_req_failed", "passes"),
            Some(self.requests()),
            "{report}"
        );
    }

    /// `data_received` per request is at most `per_request` bytes.
    fn assert_received_at_most(&self, per_request: f64) {
        let received = self.metric("data_received", "count").unwrap_or(f64::NAN);
        assert!(
            received <= per_request * self.requests(),
            "more than {:.1} MiB per request: {}",
            per_request / MIB,
            self.report()
        );
    }

    /// Each request that failed with `code` read `limit` bytes (less one
    /// MiB of slack for a read or chunk that would pass it), and no
    /// request read much more: the limit is the one asked for and
    /// `data_received` counts what was read up to it.
    fn assert_body_limit(&self, code: u32, limit: f64) {
        let received = self.metric("data_received", "count").unwrap_or(f64::NAN);
        assert!(
            received >= self.with_code(code) * (limit - MIB),
            "less than the {:.0} MiB limit per request: {}",
            limit / MIB,
            self.report()
        );
        self.assert_received_at_most(limit + MIB);
    }
}

/// 64 KiB chunks of a chunked body that never ends.
fn endless_chunked(stream: &mut TcpStream) {
    let mut chunk = format!("{:x}\r\n", 64 << 10).into_bytes();
    chunk.resize(chunk.len() + (64 << 10), b'x');
    chunk.extend_from_slice(b"\r\n");
    if stream
        .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        .is_ok()
    {
        write_forever(stream, &chunk);
    }
}

#[test]
fn an_endless_chunked_body_stops_at_the_body_limit() {
    let (options, schedule) = three_seconds();
    let run = hostile_run("hostile-chunked", &hostile(endless_chunked), &options, "");
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(RESPONSE_TOO_LARGE, 2.0);
    run.assert_body_limit(RESPONSE_TOO_LARGE, BODY_LIMIT);
}

#[test]
fn an_endless_discarded_body_is_cut_at_the_end_of_graceful_stop() {
    // Discarded bodies are counted, never held: no size limit applies
    // (big downloads stay measurable), memory stays flat, and the end of
    // gracefulStop cuts the request.
    let (options, schedule) = three_seconds();
    let run = hostile_run(
        "hostile-chunked-discard",
        &hostile(endless_chunked),
        &options,
        "--discard-response-bodies",
    );
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(INTERRUPTED, 2.0);
}

/// A body without content-length or chunking, which lasts until the
/// close, and never closes.
fn until_close(stream: &mut TcpStream) {
    if stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\r\n")
        .is_ok()
    {
        write_forever(stream, &[b'x'; 64 << 10]);
    }
}

#[test]
fn an_endless_body_without_length_stops_at_the_body_limit() {
    let (options, schedule) = three_seconds();
    let run = hostile_run("hostile-until-close", &hostile(until_close), &options, "");
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(RESPONSE_TOO_LARGE, 2.0);
    run.assert_body_limit(RESPONSE_TOO_LARGE, BODY_LIMIT);
}

#[test]
fn the_body_limit_is_the_one_asked_for() {
    // `--max-response-body-size`, here 4 MiB instead of 64: the limit
    // is the flag's, not a constant.
    let (options, schedule) = three_seconds();
    let run = hostile_run(
        "hostile-until-close-4mib",
        &hostile(until_close),
        &options,
        "--max-response-body-size 4MiB",
    );
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(RESPONSE_TOO_LARGE, 2.0);
    run.assert_body_limit(RESPONSE_TOO_LARGE, 4.0 * MIB);
}

/// Decoded size of [`gzip_bomb`]: 10 GiB of zeros.
const BOMB_INFLATED: u64 = 10 << 30;

/// A gzip body of about 10 MB that inflates to [`BOMB_INFLATED`] bytes of
/// zeros, as one well-formed gzip member (so any decoder, streaming or
/// not, single- or multi-member, sees the same thing).
///
/// Compressing 10 GiB would take a minute; instead one 1 MiB run of
/// zeros is compressed once with a sync flush, which ends it on a byte
/// boundary and leaves the deflate stream open: that block only refers
/// back to zeros, so it can be repeated as often as wanted. The CRC-32 of
/// the whole is combined from the block's, without hashing 10 GiB.
fn gzip_bomb() -> &'static [u8] {
    static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
    BOMB.get_or_init(|| {
        use flate2::{Compress, Compression, Crc, FlushCompress};
        let zeros = vec![0u8; 1 << 20];
        let mut deflate = Compress::new(Compression::best(), false);
        let mut flushed = |input: &[u8], flush| {
            let mut out = Vec::with_capacity(1 << 20);
            deflate.compress_vec(input, &mut out, flush).unwrap();
            assert_eq!(deflate.total_in() % (1 << 20), 0, "all input taken");
            out
        };
        // The first block starts the window (a literal zero); the second
        // is the repeatable one.
        let first = flushed(&zeros, FlushCompress::Sync);
        let repeated = flushed(&zeros, FlushCompress::Sync);
        let end = flushed(&[], FlushCompress::Finish);
        let blocks = BOMB_INFLATED >> 20;
        let mut block_crc = Crc::new();
        block_crc.update(&zeros);
        let mut crc = Crc::new();
        for _ in 0..blocks {
            crc.combine(&block_crc);
        }
        // RFC 1952: magic, deflate, no flags, no time, no extra flags,
        // unknown OS.
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];
        gz.extend_from_slice(&first);
        for _ in 1..blocks {
            gz.extend_from_slice(&repeated);
        }
        gz.extend_from_slice(&end);
        gz.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE: the size modulo 2^32.
        gz.extend_from_slice(&(BOMB_INFLATED as u32).to_le_bytes());
        gz
    })
}

#[test]
fn the_gzip_bomb_is_what_it_claims() {
    // Cheap checks of the construction (inflating 10 GiB would take
    // a while): the start decodes to zeros through a plain, single-member
    // streaming decoder, and the size is as small as claimed.
    let bomb = gzip_bomb();
    assert!(bomb.len() < 11_000_000, "{} bytes", bomb.len());
    let mut start = vec![1u8; 3 << 20];
    flate2::read::GzDecoder::new(bomb)
        .read_exact(&mut start)
        .unwrap();
    assert!(start.iter().all(|&b| b == 0));
}

#[test]
fn a_gzip_bomb_stops_at_the_decoded_limit() {
    let (options, schedule) = three_seconds();
    let server = hostile(|s| {
        let bomb = gzip_bomb();
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: {}\r\n\r\n",
            bomb.len()
        );
        let _ = s.write_all(head.as_bytes());
        let _ = s.write_all(bomb);
    });
    // Built before the run, so that its time does not count against wload's.
    let wire = gzip_bomb().len() as f64;
    let run = hostile_run("hostile-gzip-bomb", &server, &options, "");
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(DECODED_TOO_LARGE, 2.0);
    // The compressed bytes are counted, and nothing beyond the body.
    run.assert_received_at_most(wire + MIB);
}

#[test]
fn a_server_that_never_answers_is_cut_at_the_end_of_graceful_stop() {
    // The spec's example: 2 s of load, then 3 s for running iterations.
    let options = json!({
        "scenarios": {
            "hang": {
                "executor": "constant-vus",
                "vus": 2,
                "duration": "2s",
                "gracefulStop": "3s",
            }
        }
    });
    // Holds the connection open without a byte until wload closes it.
    let server = hostile(|s| {
        let mut buf = [0u8; 1024];
        while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
    });
    let run = hostile_run("hostile-never-answers", &server, &options, "");
    run.assert_ended_on_time(Duration::from_secs(2 + 3));
    // Not cut before the end of gracefulStop either.
    assert!(run.wall >= Duration::from_secs(5), "{}", run.report());
    // Each VU's first request never ends; the cut records it.
    assert_eq!(run.requests(), 2.0, "{}", run.report());
    run.assert_all_failed_with(INTERRUPTED, 2.0);
}

#[test]
fn a_slowloris_head_ends_at_the_request_timeout() {
    let (options, schedule) = three_seconds();
    // A status line, then one byte of a header every 200 ms, forever.
    let server = hostile(|s| {
        if s.write_all(b"HTTP/1.1 200 OK\r\nx-slow: ").is_err() {
            return;
        }
        while s.write_all(b"a").is_ok() {
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let run = hostile_run("hostile-slowloris", &server, &options, "--http-timeout 2s");
    run.assert_ended_on_time(schedule);
    // Each VU: one timeout at 2 s, the next at 4 s (within gracefulStop).
    run.assert_all_failed_with(REQUEST_TIMEOUT, 2.0);
    run.assert_received_at_most(64.0 * 1024.0);
}

#[test]
fn an_endless_head_is_malformed() {
    let (options, schedule) = three_seconds();
    // A status line, then a header line that never ends, sent fast (the
    // slow case is the slowloris above).
    let server = hostile(|s| {
        if s.write_all(b"HTTP/1.1 200 OK\r\nx-big: ").is_ok() {
            write_forever(s, &[b'a'; 64 << 10]);
        }
    });
    let run = hostile_run("hostile-endless-head", &server, &options, "");
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(MALFORMED, 2.0);
    // The head's limit is 256 KiB; a read of slack beyond.
    run.assert_received_at_most(MIB);
}

#[test]
fn a_flood_of_interim_responses_is_malformed() {
    let (options, schedule) = three_seconds();
    let server = hostile(|s| write_forever(s, &b"HTTP/1.1 100 Continue\r\n\r\n".repeat(1000)));
    let run = hostile_run("hostile-100-continue", &server, &options, "");
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(MALFORMED, 2.0);
    // Five interim responses are allowed; a little read-ahead is fine,
    // megabytes are not.
    run.assert_received_at_most(MIB);
}

#[test]
fn trailers_without_end_are_malformed() {
    let (options, schedule) = three_seconds();
    // A complete chunked body, then trailer lines that never end the
    // trailer section.
    let server = hostile(|s| {
        if s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n")
            .is_ok()
        {
            write_forever(
                s,
                &b"x-trailer: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".repeat(1000),
            );
        }
    });
    let run = hostile_run("hostile-trailers", &server, &options, "");
    run.assert_ended_on_time(schedule);
    run.assert_all_failed_with(MALFORMED, 2.0);
    // The trailer section's limit is 256 KiB; a read of slack beyond.
    run.assert_received_at_most(MIB);
}
