//! `wload:test/http@0.2.0`: one `send` and one `batch`, served by the
//! request path of 0.1 (`host/http.rs`), and the response's accessors.
//!
//! A 0.2 request is a 0.1 request with its options in one record; it is
//! split into the three records the shared path takes by moving fields,
//! so a 0.2 request costs what a 0.1 `send-with-limits` costs. The answer
//! carries the status, the error and the body length read from the
//! response in the table, sparing the guest a host call for each.

use wasmtime::component::Resource;

use super::super::wload::test::http as v1;
use super::wload::test::http::{self as v2, Host, HostResponse};
use crate::host::VuState;
use wload_http::{ErrorCode, HttpResponse};

/// The 0.1 records of a 0.2 request: the request, its options and its
/// limits.
type Split = (
    v1::Request,
    Option<v1::RequestOptions>,
    Option<v1::RequestLimits>,
);

fn split(req: v2::Request, options: v2::RequestOptions) -> Split {
    let v2::RequestOptions {
        timeout,
        max_redirects,
        expected_statuses,
        body_mode,
        max_body_size,
    } = options;
    let request = v1::Request {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: req.body,
        tags: req.tags,
        name: req.name,
        timeout,
        // 0.1's `keep` leaves the choice to the run, as 0.2's `none` does;
        // the choice itself travels in the options.
        body_mode: v1::BodyMode::Keep,
    };
    let options = v1::RequestOptions {
        max_redirects,
        expected_statuses: expected_statuses.map(|ranges| {
            ranges
                .into_iter()
                .map(|r| v1::StatusRange {
                    min: r.min,
                    max: r.max,
                })
                .collect()
        }),
        body_mode: body_mode.map(|mode| match mode {
            v2::BodyMode::Keep => v1::BodyMode::Keep,
            v2::BodyMode::Discard => v1::BodyMode::Discard,
        }),
    };
    let limits = v1::RequestLimits { max_body_size };
    (request, Some(options), Some(limits))
}

/// The kind of a client error, as 0.2 types it.
fn error_kind(code: ErrorCode) -> v2::ErrorKind {
    use v2::ErrorKind as K;
    match code {
        ErrorCode::Generic => K::Generic,
        ErrorCode::InvalidUrl => K::InvalidUrl,
        ErrorCode::RequestTimeout => K::Timeout,
        ErrorCode::ResponseTooLarge => K::BodyTooLarge,
        ErrorCode::Interrupted => K::Interrupted,
        ErrorCode::Dns => K::Dns,
        ErrorCode::NoIpFound => K::NoIp,
        ErrorCode::BlacklistedIp => K::BlockedIp,
        ErrorCode::BlockedHostname => K::BlockedHostname,
        ErrorCode::Tcp => K::Tcp,
        ErrorCode::BrokenPipe => K::BrokenPipe,
        ErrorCode::Dial => K::Dial,
        ErrorCode::DialTimeout => K::DialTimeout,
        ErrorCode::ConnectionRefused => K::ConnectionRefused,
        ErrorCode::ConnectionReset => K::ConnectionReset,
        ErrorCode::Tls => K::Tls,
        ErrorCode::TlsUnknownAuthority => K::TlsUnknownAuthority,
        ErrorCode::TlsHostname => K::TlsHostname,
        ErrorCode::Http2 => K::Http2,
        ErrorCode::Http2GoAway => K::Http2Goaway,
        ErrorCode::Http2Stream => K::Http2Stream,
        ErrorCode::Http2Connection => K::Http2Connection,
        ErrorCode::Decompression => K::Decompression,
        ErrorCode::DecodedTooLarge => K::DecodedTooLarge,
    }
}

impl VuState {
    /// What `send` answers for `response`, read from the table.
    fn sent(&self, response: Resource<HttpResponse>) -> wasmtime::Result<v2::Sent> {
        let r = self.table.get(&response)?;
        Ok(v2::Sent {
            status: r.status,
            error: r.error.as_ref().map(|e| v2::HttpError {
                kind: error_kind(e.code),
                message: e.message.clone(),
            }),
            body_len: r.body_len,
            response,
        })
    }
}

impl Host for VuState {
    async fn send(
        &mut self,
        req: v2::Request,
        options: v2::RequestOptions,
    ) -> wasmtime::Result<v2::Sent> {
        let (req, options, limits) = split(req, options);
        let response = if self.shared.rps.is_some() {
            self.send_paced(req, options, limits).await?
        } else {
            self.send_one(req, options, limits).await?
        };
        self.sent(response)
    }

    async fn batch(
        &mut self,
        reqs: Vec<(v2::Request, v2::RequestOptions)>,
    ) -> wasmtime::Result<Vec<v2::Sent>> {
        let reqs: Vec<Split> = reqs.into_iter().map(|(r, o)| split(r, o)).collect();
        let responses = if self.shared.rps.is_some() {
            self.send_many_paced(reqs).await?
        } else {
            self.send_many(reqs).await?
        };
        responses.into_iter().map(|r| self.sent(r)).collect()
    }

    fn cookies(&mut self, url: String) -> wasmtime::Result<Vec<(String, String)>> {
        v1::Host::cookies(self, url)
    }

    fn set_cookie(&mut self, url: String, cookie: String) -> wasmtime::Result<Result<(), String>> {
        v1::Host::set_cookie(self, url, cookie)
    }

    fn clear_cookies(&mut self) -> wasmtime::Result<()> {
        v1::Host::clear_cookies(self)
    }
}

impl HostResponse for VuState {
    fn headers(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Vec<(String, String)>> {
        v1::HostResponse::headers(self, r)
    }

    fn header(
        &mut self,
        r: Resource<HttpResponse>,
        name: String,
    ) -> wasmtime::Result<Option<String>> {
        v1::HostResponse::header(self, r, name)
    }

    fn timings(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<v2::Timings> {
        let t = self.table.get(&r)?.timings;
        Ok(v2::Timings {
            blocked: t.blocked,
            connecting: t.connecting,
            tls_handshaking: t.tls_handshaking,
            sending: t.sending,
            waiting: t.waiting,
            receiving: t.receiving,
            duration: t.duration,
        })
    }

    fn body(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Vec<u8>> {
        v1::HostResponse::body(self, r)
    }

    fn text(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        v1::HostResponse::text(self, r)
    }

    fn url(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        v1::HostResponse::url(self, r)
    }

    fn proto(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        v1::HostResponse::proto(self, r)
    }

    fn tls_version(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        v1::HostResponse::tls_version(self, r)
    }

    fn redirects(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u32> {
        v1::HostResponse::redirects(self, r)
    }

    fn drop(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<()> {
        v1::HostResponse::drop(self, r)
    }
}
