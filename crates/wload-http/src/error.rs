//! Network errors with k6's error codes, so that dashboards and scripts
//! written for k6's `error_code` tag read ours.

use std::fmt;

/// k6-compatible error codes (<https://grafana.com/docs/k6/latest/javascript-api/error-codes/>).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ErrorCode {
    Generic = 1000,
    InvalidUrl = 1020,
    RequestTimeout = 1050,
    /// The response body passed the request's size limit on the wire
    /// (`maxResponseBodySize`); wload's own code, in k6's general range.
    ResponseTooLarge = 1060,
    /// The request was cut by the end of the test: its gracefulStop ran
    /// out, or the run was stopped hard (a second signal). wload's own.
    Interrupted = 1070,
    Dns = 1100,
    NoIpFound = 1101,
    /// The egress policy refused the address: `blacklistIPs`, a special
    /// range of a tenant's policy, or outside its allowlist (k6's
    /// `blackListedIPErrorCode`).
    BlacklistedIp = 1110,
    /// The egress policy refused the name before its lookup:
    /// `blockHostnames`, or outside a tenant's allowlist (k6's
    /// `blockedHostnameErrorCode`).
    BlockedHostname = 1111,
    Tcp = 1200,
    BrokenPipe = 1201,
    Dial = 1210,
    DialTimeout = 1211,
    ConnectionRefused = 1212,
    ConnectionReset = 1220,
    Tls = 1300,
    /// The certificate chain does not lead to a trusted root.
    TlsUnknownAuthority = 1310,
    /// The certificate is not valid for the host name asked for.
    TlsHostname = 1311,
    Http2 = 1600,
    Http2GoAway = 1610,
    Http2Stream = 1630,
    Http2Connection = 1650,
    /// The body could not be decompressed (k6's `responseDecompressionErrorCode`).
    Decompression = 1701,
    /// The decoded body passed the size limit (a decompression bomb);
    /// wload's own, beside k6's 1701.
    DecodedTooLarge = 1702,
}

impl ErrorCode {
    /// The code of a socket error while sending or receiving.
    pub fn of_io(err: &std::io::Error) -> ErrorCode {
        use std::io::ErrorKind::*;
        match err.kind() {
            // A peer that closes mid-response is a reset to the client.
            ConnectionReset | ConnectionAborted | UnexpectedEof => ErrorCode::ConnectionReset,
            BrokenPipe => ErrorCode::BrokenPipe,
            _ => ErrorCode::Tcp,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    pub code: ErrorCode,
    pub message: String,
}

impl HttpError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> HttpError {
        HttpError {
            code,
            message: message.into(),
        }
    }

    /// A kept response body past `limit` bytes on the wire.
    pub fn body_too_large(limit: u64) -> HttpError {
        HttpError::new(
            ErrorCode::ResponseTooLarge,
            format!(
                "response body larger than the limit of {limit} bytes \
                 (maxResponseBodySize; raise it, or discard the body)"
            ),
        )
    }

    /// Classify an error from connecting.
    pub fn from_connect(err: &std::io::Error, addr: &str) -> HttpError {
        use std::io::ErrorKind::*;
        let code = match err.kind() {
            ConnectionRefused => ErrorCode::ConnectionRefused,
            TimedOut => ErrorCode::DialTimeout,
            ConnectionReset => ErrorCode::ConnectionReset,
            _ => ErrorCode::Dial,
        };
        HttpError::new(code, format!("dial tcp {addr}: {err}"))
    }

    /// Classify a failed TLS handshake.
    pub fn from_tls(err: &std::io::Error, host: &str) -> HttpError {
        use rustls::{CertificateError, Error as TlsError};
        let inner = err.get_ref().and_then(|e| e.downcast_ref::<TlsError>());
        let code = match inner {
            Some(TlsError::InvalidCertificate(CertificateError::UnknownIssuer))
            | Some(TlsError::InvalidCertificate(CertificateError::BadSignature)) => {
                ErrorCode::TlsUnknownAuthority
            }
            Some(TlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => ErrorCode::TlsHostname,
            Some(_) => ErrorCode::Tls,
            None => match err.kind() {
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted => {
                    ErrorCode::ConnectionReset
                }
                _ => ErrorCode::Tls,
            },
        };
        HttpError::new(code, format!("TLS handshake with {host}: {err}"))
    }

    /// Classify an error from hyper while sending or receiving.
    pub fn from_hyper(err: &hyper::Error) -> HttpError {
        if let Some(h2) = find::<h2::Error>(err) {
            let code = if h2.is_go_away() {
                ErrorCode::Http2GoAway
            } else if h2.is_reset() {
                ErrorCode::Http2Stream
            } else if h2.is_io() {
                ErrorCode::ConnectionReset
            } else {
                ErrorCode::Http2Connection
            };
            return HttpError::new(code, format!("HTTP/2: {err}: {h2}"));
        }
        if let Some(io) = find::<std::io::Error>(err) {
            return HttpError::new(ErrorCode::of_io(io), format!("{err}: {io}"));
        }
        if err.is_incomplete_message() || err.is_canceled() || err.is_closed() {
            // The peer closed the connection before the response was whole.
            return HttpError::new(ErrorCode::ConnectionReset, err.to_string());
        }
        if err.is_parse() || err.is_parse_status() {
            return HttpError::new(ErrorCode::Generic, format!("malformed response: {err}"));
        }
        HttpError::new(ErrorCode::Generic, err.to_string())
    }
}

/// The first error of type `E` in `err`'s chain of sources.
fn find<'a, E: std::error::Error + 'static>(
    err: &'a (dyn std::error::Error + 'static),
) -> Option<&'a E> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if let Some(found) = e.downcast_ref::<E>() {
            return Some(found);
        }
        cur = e.source();
    }
    None
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HttpError {}
