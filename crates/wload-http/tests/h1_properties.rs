//! Property tests of the HTTP/1.1 client's response path, the suite's
//! counterpart of the `h1_response` fuzz target (fuzz/, docs/fuzzing.md):
//! responses generated from a model — status, header fields, interim 1xx
//! responses, bodies framed by `content-length`, by chunks cut at random
//! points (extensions, trailers) or by the close — come out of the real
//! read loop as the model says, however the reads split them; and
//! arbitrary bytes never panic it.

use proptest::prelude::*;
use wload_http::fuzzing::{Delivery, Outcome, h1_exchanges};

/// How a modelled response delimits its body.
#[derive(Debug, Clone)]
enum Framing {
    Length,
    /// Chunk boundaries (cut points into the body), an extension on each
    /// size line, and trailer fields.
    Chunked {
        cuts: Vec<usize>,
        extension: bool,
        trailers: Vec<(String, String)>,
    },
    /// HTTP/1.0, no length: the body runs to the close.
    UntilClose,
}

#[derive(Debug, Clone)]
struct Model {
    status: u16,
    /// Interim responses first (each with a field).
    interim: Vec<u16>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    framing: Framing,
}

impl Model {
    /// Whether the response may carry a body at all (RFC 9112, 6.3).
    fn bodyless(&self, head: bool) -> bool {
        head || self.status == 204 || self.status == 304
    }

    /// The bytes a server sends, and the fields the client must report.
    fn encode(&self, head: bool) -> (Vec<u8>, Vec<(String, String)>) {
        let mut out = Vec::new();
        for code in &self.interim {
            out.extend_from_slice(
                format!("HTTP/1.1 {code} Interim\r\nx-hint: {code}\r\n\r\n").as_bytes(),
            );
        }
        let version = match self.framing {
            Framing::UntilClose => "1.0",
            _ => "1.1",
        };
        out.extend_from_slice(format!("HTTP/{version} {} Whatever\r\n", self.status).as_bytes());
        let mut fields = self.headers.clone();
        match &self.framing {
            Framing::Length => fields.push(("content-length".into(), self.body.len().to_string())),
            Framing::Chunked { .. } => fields.push(("transfer-encoding".into(), "chunked".into())),
            Framing::UntilClose => {}
        }
        for (name, value) in &fields {
            out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        if self.bodyless(head) {
            return (out, fields);
        }
        match &self.framing {
            Framing::Length | Framing::UntilClose => out.extend_from_slice(&self.body),
            Framing::Chunked {
                cuts,
                extension,
                trailers,
            } => {
                let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (self.body.len() + 1)).collect();
                cuts.push(self.body.len());
                cuts.sort_unstable();
                cuts.dedup();
                let mut at = 0;
                for cut in cuts.into_iter().filter(|&c| c > 0) {
                    let ext = if *extension { ";name=\"v\"" } else { "" };
                    out.extend_from_slice(format!("{:X}{ext}\r\n", cut - at).as_bytes());
                    out.extend_from_slice(&self.body[at..cut]);
                    out.extend_from_slice(b"\r\n");
                    at = cut;
                }
                out.extend_from_slice(b"0\r\n");
                for (name, value) in trailers {
                    out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
                }
                out.extend_from_slice(b"\r\n");
            }
        }
        (out, fields)
    }
}

/// Field names the framing rules do not read (those are the model's).
fn field_name() -> impl Strategy<Value = String> {
    "x-[a-z0-9-]{0,12}"
}

/// Visible ASCII with inner spaces: what arrives byte for byte.
fn field_value() -> impl Strategy<Value = String> {
    "[!-~]([ -~]{0,20}[!-~])?"
}

fn model() -> impl Strategy<Value = Model> {
    let framing = prop_oneof![
        Just(Framing::Length),
        (
            prop::collection::vec(any::<usize>(), 0..6),
            any::<bool>(),
            prop::collection::vec((field_name(), field_value()), 0..3),
        )
            .prop_map(|(cuts, extension, trailers)| Framing::Chunked {
                cuts,
                extension,
                trailers
            }),
        Just(Framing::UntilClose),
    ];
    (
        prop_oneof![200..=299u16, 300..=599u16, Just(204u16), Just(304u16)],
        prop::collection::vec(prop_oneof![Just(100u16), Just(102), Just(103)], 0..3),
        prop::collection::vec((field_name(), field_value()), 0..6),
        prop::collection::vec(any::<u8>(), 0..600),
        framing,
    )
        .prop_map(|(status, interim, headers, body, framing)| Model {
            status,
            interim,
            headers,
            body,
            framing,
        })
}

fn delivery() -> impl Strategy<Value = Delivery> {
    (
        prop_oneof![1..=16usize, 17..=600usize, Just(1 << 16)],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(read_size, head, keep_body)| Delivery {
            read_size,
            head,
            keep_body,
        })
}

/// Check one response of `outcome` against the model that made it.
fn check(
    outcome: &Outcome,
    i: usize,
    m: &Model,
    fields: &[(String, String)],
    how: Delivery,
) -> Result<(), TestCaseError> {
    let r = outcome
        .responses
        .get(i)
        .ok_or_else(|| TestCaseError::fail(format!("response {i} missing: {:?}", outcome.error)))?;
    prop_assert_eq!(r.status, m.status);
    prop_assert_eq!(r.http10, matches!(m.framing, Framing::UntilClose));
    prop_assert_eq!(&r.headers, &fields.to_vec());
    let body: &[u8] = if m.bodyless(how.head) { &[] } else { &m.body };
    prop_assert_eq!(r.body_len, body.len() as u64);
    if how.keep_body {
        prop_assert_eq!(r.body.as_deref(), Some(body));
    } else {
        prop_assert!(r.body.is_none());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn modelled_responses_parse_to_the_model(
        models in prop::collection::vec(model(), 1..4),
        how in delivery(),
    ) {
        let encoded: Vec<_> = models.iter().map(|m| m.encode(how.head)).collect();
        let replies: Vec<&[u8]> = encoded.iter().map(|(bytes, _)| bytes.as_slice()).collect();
        let outcome = h1_exchanges(&replies, how);
        // Responses follow each other on the connection until one ends
        // only with the close (HTTP/1.0 without keep-alive).
        for (i, m) in models.iter().enumerate() {
            check(&outcome, i, m, &encoded[i].1, how)?;
            let last = matches!(m.framing, Framing::UntilClose) || i + 1 == models.len();
            if last {
                prop_assert_eq!(outcome.responses.len(), i + 1);
                prop_assert_eq!(&outcome.error, &None);
                break;
            }
            prop_assert!(outcome.responses[i].reusable, "response {} left the connection unusable", i);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        replies in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 1..3),
        how in delivery(),
    ) {
        let replies: Vec<&[u8]> = replies.iter().map(Vec::as_slice).collect();
        let _ = h1_exchanges(&replies, how);
    }

    #[test]
    fn mangled_responses_never_panic(
        m in model(),
        how in delivery(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        // Near-valid input reaches further into the read loop than noise.
        let (mut bytes, _) = m.encode(how.head);
        for (at, byte) in edits {
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
        }
        let _ = h1_exchanges(&[&bytes], how);
    }
}
