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

/// Decode `body` by its `Content-Encoding` (codings applied in order, so
/// undone in reverse). Unknown codings are an error.
pub fn decode(headers: &Headers, body: &[u8]) -> Result<Vec<u8>, String> {
    let value = headers
        .get("content-encoding")
        .and_then(|v| std::str::from_utf8(v).ok())
        .unwrap_or("");
    let mut data = body.to_vec();
    for coding in value.rsplit(',') {
        let coding = coding.trim().to_ascii_lowercase();
        data = match coding.as_str() {
            "" | "identity" => continue,
            "gzip" | "x-gzip" => read_all(flate2::read::MultiGzDecoder::new(&data[..]), "gzip")?,
            // "deflate" is zlib-wrapped by the spec, raw in some servers.
            "deflate" => read_all(flate2::read::ZlibDecoder::new(&data[..]), "deflate")
                .or_else(|_| read_all(flate2::read::DeflateDecoder::new(&data[..]), "deflate"))?,
            "br" => read_all(
                brotli_decompressor::Decompressor::new(&data[..], 4096),
                "br",
            )?,
            "zstd" => {
                let decoder = ruzstd::decoding::StreamingDecoder::new(&data[..])
                    .map_err(|e| format!("cannot decode zstd body: {e}"))?;
                read_all(decoder, "zstd")?
            }
            other => return Err(format!("unsupported content encoding {other:?}")),
        };
    }
    Ok(data)
}

fn read_all(mut r: impl Read, name: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    r.read_to_end(&mut out)
        .map_err(|e| format!("cannot decode {name} body: {e}"))?;
    Ok(out)
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

    #[test]
    fn gzip_and_deflate_round_trip_and_garbage_fails() {
        let plain = b"hello hello hello hello".repeat(10);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(decode(&headers("gzip"), &gz).unwrap(), plain);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&plain).unwrap();
        assert_eq!(
            decode(&headers("deflate"), &z.finish().unwrap()).unwrap(),
            plain
        );
        assert!(decode(&headers("gzip"), b"not gzip").is_err());
        assert!(decode(&headers("compress"), b"x").is_err());
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
        assert_eq!(decode(&headers("br"), &br).unwrap(), plain);
        let zst = ruzstd::encoding::compress_to_vec(
            &plain[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(decode(&headers("zstd"), &zst).unwrap(), plain);
        // Codings apply in order: gzip, then br on top.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let gz = gz.finish().unwrap();
        let mut both = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut both, 4096, 5, 22);
            w.write_all(&gz).unwrap();
        }
        assert_eq!(decode(&headers("gzip, br"), &both).unwrap(), plain);
    }
}
