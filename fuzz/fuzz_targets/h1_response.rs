//! The HTTP/1.1 client's response path, whole: bytes from a scripted
//! server go through the real read loop (head, framing, chunked bodies
//! and trailers, 1xx, bodies until the close, keep-alive onto a second
//! exchange), split into reads of a size the input picks.
//!
//! Input: one byte of settings, then the server's replies, one per
//! request, separated by `NUL--NUL` (NUL is never valid in a head, so the
//! separator rarely cuts a response the fuzzer meant whole).

#![no_main]

use libfuzzer_sys::fuzz_target;
use wload_http::fuzzing::{Delivery, h1_exchanges};

/// Read sizes: single bytes (every boundary case), small odd sizes,
/// and larger than any input (one read).
const READ_SIZES: [usize; 8] = [1, 2, 3, 7, 16, 100, 4096, 1 << 20];
const SEPARATOR: &[u8] = b"\0--\0";
/// More replies add little: every exchange after the first is alike.
const MAX_REPLIES: usize = 4;

fuzz_target!(|data: &[u8]| {
    let Some((&settings, rest)) = data.split_first() else {
        return;
    };
    let how = Delivery {
        read_size: READ_SIZES[usize::from(settings & 7)],
        head: settings & 8 != 0,
        keep_body: settings & 16 == 0,
    };
    let mut replies = Vec::new();
    let mut at = rest;
    while replies.len() + 1 < MAX_REPLIES {
        match at.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
            Some(i) => {
                replies.push(&at[..i]);
                at = &at[i + SEPARATOR.len()..];
            }
            None => break,
        }
    }
    replies.push(at);
    let out = h1_exchanges(&replies, how);
    // What every caller relies on, beyond not panicking.
    assert!(out.responses.len() <= replies.len());
    for r in &out.responses {
        assert!((100..=999).contains(&r.status), "status {}", r.status);
        assert!(
            !(100..200).contains(&r.status) || r.status == 101,
            "an interim response was returned: {}",
            r.status
        );
        match &r.body {
            Some(body) => assert_eq!(body.len() as u64, r.body_len),
            None => assert!(!how.keep_body),
        }
        if how.head || r.status == 204 || r.status == 304 {
            assert_eq!(r.body_len, 0, "a response that has no body had one");
        }
    }
    if let Some(last) = out.responses.last()
        && last.reusable
        && out.error.is_none()
    {
        // A reusable connection stops only when replies ran out (or
        // the server's next bytes came unasked).
        assert!(out.responses.len() <= replies.len());
    }
});
