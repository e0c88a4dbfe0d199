//! Decoding compressed response bodies (`Content-Encoding` gzip, deflate,
//! br, zstd) after they were read off the wire, so that `data_received`
//! counts the compressed bytes and the test sees the plain body.

use std::io::Read;

use super::Headers;

/// Whether the response is encoded in a way this module decodes.
pub fn is_encoded(headers: &Headers) -> bool {
    headers
        .get("content-encoding")
        .and_then(|v| std::str::from_utf8(v).ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|e| !e.trim().eq_ignore_ascii_case("identity"))
        })
}

/// Why a body could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not valid in its coding, or a coding this module does not know.
    Invalid(String),
    /// It decodes to more than the limit: the decoder stopped there.
    TooLarge,
}

/// Decode `body` by its `Content-Encoding` (codings applied in order, so
/// undone in reverse) into `out`, to at most `limit` bytes at every step:
/// a small body can inflate a thousandfold (a decompression bomb), so the
/// output is bounded as it is produced, never after. Unknown codings are
/// an error. The last step writes straight into `out` (the response's own
/// buffer) and the first reads straight from `body`: only a chain of
/// codings needs a buffer in between.
pub fn decode_into(
    headers: &Headers,
    body: &[u8],
    limit: u64,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let codings: Vec<&str> = content_encoding(headers)
        .rsplit(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
        .collect();
    let Some((last, first)) = codings.split_last() else {
        out.extend_from_slice(body);
        return Ok(());
    };
    let mut between: Option<Vec<u8>> = None;
    for coding in first {
        let mut step = Vec::new();
        decode_one(coding, between.as_deref().unwrap_or(body), limit, &mut step)?;
        between = Some(step);
    }
    decode_one(last, between.as_deref().unwrap_or(body), limit, out)
}

/// The decoded length `body` claims, when its coding says it up front
/// (gzip's trailer holds the length mod 2^32): a capacity to reserve for
/// [`decode_into`]'s output, never trusted past `limit`.
pub fn decoded_size_hint(headers: &Headers, body: &[u8], limit: u64) -> Option<usize> {
    let coding = content_encoding(headers).trim();
    if !(coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip")) {
        return None;
    }
    let trailer: [u8; 4] = body.get(body.len().checked_sub(4)?..)?.try_into().ok()?;
    let claimed = u64::from(u32::from_le_bytes(trailer));
    usize::try_from(claimed.min(limit)).ok()
}

fn content_encoding(headers: &Headers) -> &str {
    headers
        .get("content-encoding")
        .and_then(|v| std::str::from_utf8(v).ok())
        .unwrap_or("")
}

/// Undo one `coding` of `data`, appending to `out`.
fn decode_one(coding: &str, data: &[u8], limit: u64, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    match coding.to_ascii_lowercase().as_str() {
        "gzip" | "x-gzip" => read_all(flate2::read::MultiGzDecoder::new(data), "gzip", limit, out),
        // "deflate" is zlib-wrapped by the spec, raw in some servers.
        "deflate" => match read_all(flate2::read::ZlibDecoder::new(data), "deflate", limit, out) {
            Err(DecodeError::Invalid(_)) => {
                out.clear();
                read_all(
                    flate2::read::DeflateDecoder::new(data),
                    "deflate",
                    limit,
                    out,
                )
            }
            other => other,
        },
        "br" => read_all(
            brotli_decompressor::Decompressor::new(data, 4096),
            "br",
            limit,
            out,
        ),
        "zstd" => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(data)
                .map_err(|e| DecodeError::Invalid(format!("cannot decode zstd body: {e}")))?;
            read_all(decoder, "zstd", limit, out)
        }
        other => Err(DecodeError::Invalid(format!(
            "unsupported content encoding {other:?}"
        ))),
    }
}

/// All of `r` appended to the empty `out`, unless it is longer than `limit`.
fn read_all(r: impl Read, name: &str, limit: u64, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    // One byte past the limit tells "exactly the limit" from "more".
    r.take(limit.saturating_add(1))
        .read_to_end(out)
        .map_err(|e| DecodeError::Invalid(format!("cannot decode {name} body: {e}")))?;
    if out.len() as u64 > limit {
        return Err(DecodeError::TooLarge);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn headers(enc: &str) -> Headers {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::CONTENT_ENCODING, enc.parse().unwrap());
        Headers::from_map(h)
    }

    fn decode(headers: &Headers, body: &[u8], limit: u64) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        decode_into(headers, body, limit, &mut out).map(|()| out)
    }

    #[test]
    fn gzip_and_deflate_round_trip_and_garbage_fails() {
        let plain = b"hello hello hello hello".repeat(10);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decode(&headers("gzip"), &gz, u64::MAX).unwrap(), plain);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&plain).unwrap();
        assert_eq!(
            decode(&headers("deflate"), &z.finish().unwrap(), u64::MAX).unwrap(),
            plain
        );
        assert!(decode(&headers("gzip"), b"not gzip", 9).is_err());
        assert!(decode(&headers("compress"), b"x", 9).is_err());
        assert!(!is_encoded(&headers("identity")));
    }

    #[test]
    fn brotli_and_zstd_decode() {
        let plain = b"brotli and zstd, brotli and zstd".repeat(8);
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            w.write_all(&plain).unwrap();
        }
        assert_eq!(decode(&headers("br"), &br, u64::MAX).unwrap(), plain);
        let zst = ruzstd::encoding::compress_to_vec(
            &plain[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(decode(&headers("zstd"), &zst, u64::MAX).unwrap(), plain);
        // Codings apply in order: gzip, then br on top.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        let mut both = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut both, 4096, 5, 22);
            w.write_all(&gz).unwrap();
        }
        assert_eq!(
            decode(&headers("gzip, br"), &both, u64::MAX).unwrap(),
            plain
        );
    }

    /// A bomb: 10 MiB of zeros gzip to ~10 KiB. The decoder stops at the
    /// limit instead of inflating all of it, and says so; exactly the
    /// limit still decodes.
    #[test]
    fn decoding_stops_at_the_limit() {
        let plain = vec![0u8; 10 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        assert!(gz.len() < 64 << 10);
        assert_eq!(
            decode(&headers("gzip"), &gz, 1 << 20),
            Err(DecodeError::TooLarge)
        );
        assert_eq!(
            decode(&headers("gzip"), &gz, 10 << 20).map(|d| d.len()),
            Ok(10 << 20)
        );
        // Every step of a chain is bounded, not only the last.
        let mut twice = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        twice.write_all(&gz).unwrap();
        let twice = twice.finish().unwrap();
        assert_eq!(
            decode(&headers("gzip, gzip"), &twice, 1 << 20),
            Err(DecodeError::TooLarge)
        );
    }

    /// gzip's trailer sizes the output, so the body is inflated into the
    /// buffer it was given without growing it: no copy on the way.
    #[test]
    fn a_gzip_body_decodes_into_its_buffer_in_place() {
        let plain = b"0123456789abcdef".repeat(4096);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        let h = headers("gzip");
        let hint = decoded_size_hint(&h, &gz, u64::MAX);
        assert_eq!(hint, Some(plain.len()));
        let mut out = Vec::with_capacity(hint.unwrap());
        let at = out.as_ptr();
        decode_into(&h, &gz, u64::MAX, &mut out).unwrap();
        assert_eq!(out, plain);
        assert_eq!(out.as_ptr(), at, "the buffer was reallocated");
        assert_eq!(out.capacity(), plain.len());
        // A claim is bounded by the limit, and other codings claim nothing.
        assert_eq!(decoded_size_hint(&h, &gz, 100), Some(100));
        assert_eq!(decoded_size_hint(&headers("br"), &gz, u64::MAX), None);
        assert_eq!(decoded_size_hint(&h, b"gz", u64::MAX), None);
    }

    #[test]
    fn raw_deflate_decodes_after_the_zlib_attempt() {
        let plain = b"raw deflate, as some servers send it".repeat(20);
        let mut d = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        d.write_all(&plain).unwrap();
        assert_eq!(
            decode(&headers("deflate"), &d.finish().unwrap(), u64::MAX).unwrap(),
            plain
        );
    }
}
