//! `wload:test/http`: requests go to the shared [`crate::http::Client`] on
//! this VU's connections; responses become resources in the VU's table,
//! their bodies still in pooled host buffers.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Resource;

use super::VuState;
use super::wload::test::http::{self as wit, Host, HostResponse};
use crate::http::{BodyMode, HttpResponse, RequestSpec, record_request};
use crate::metrics::{TagSet, Tags};

/// A guest request split into what the client needs and what the
/// metrics need.
fn split(req: wit::Request) -> (RequestSpec, Option<String>, Vec<(String, String)>) {
    let spec = RequestSpec {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: req.body,
        timeout: req.timeout.map(Duration::from_nanos),
        body_mode: match req.body_mode {
            wit::BodyMode::Keep => BodyMode::Keep,
            wit::BodyMode::Discard => BodyMode::Discard,
        },
    };
    (spec, req.name, req.tags)
}

impl VuState {
    fn tags_with(&self, extra: Vec<(String, String)>) -> Tags {
        if extra.is_empty() {
            self.base_tags.clone()
        } else {
            Arc::new(self.base_tags.with(extra))
        }
    }

    fn finish(
        &mut self,
        resp: HttpResponse,
        name: Option<String>,
        tags: &TagSet,
    ) -> wasmtime::Result<Resource<HttpResponse>> {
        let lateness = self.lateness.map(|l| l.as_nanos() as u64);
        record_request(
            &self.shared.recorder,
            tags,
            name.as_deref(),
            &resp,
            lateness,
        );
        Ok(self.table.push(resp)?)
    }
}

impl Host for VuState {
    async fn send(&mut self, req: wit::Request) -> wasmtime::Result<Resource<HttpResponse>> {
        let (spec, name, tags) = split(req);
        let tags = self.tags_with(tags);
        let client = self.shared.client.clone();
        let resp = client.send(&mut self.conns, spec).await;
        self.resume_guest();
        self.finish(resp, name, &tags)
    }

    async fn batch(
        &mut self,
        reqs: Vec<wit::Request>,
    ) -> wasmtime::Result<Vec<Resource<HttpResponse>>> {
        let mut specs = Vec::with_capacity(reqs.len());
        let mut meta = Vec::with_capacity(reqs.len());
        for req in reqs {
            let (spec, name, tags) = split(req);
            specs.push(spec);
            meta.push((name, self.tags_with(tags)));
        }
        let client = self.shared.client.clone();
        let resps = client.batch(&mut self.conns, specs).await;
        self.resume_guest();
        resps
            .into_iter()
            .zip(meta)
            .map(|(resp, (name, tags))| self.finish(resp, name, &tags))
            .collect()
    }
}

impl HostResponse for VuState {
    fn status(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u16> {
        Ok(self.table.get(&r)?.status)
    }

    fn headers(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self
            .table
            .get(&r)?
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect())
    }

    fn header(
        &mut self,
        r: Resource<HttpResponse>,
        name: String,
    ) -> wasmtime::Result<Option<String>> {
        let resp = self.table.get(&r)?;
        // HeaderMap lookups are case-insensitive for valid names.
        Ok(resp
            .headers
            .get(name.as_str())
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()))
    }

    fn timings(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<wit::Timings> {
        let t = self.table.get(&r)?.timings;
        Ok(wit::Timings {
            blocked: t.blocked,
            connecting: t.connecting,
            tls_handshaking: t.tls_handshaking,
            sending: t.sending,
            waiting: t.waiting,
            receiving: t.receiving,
            duration: t.duration,
        })
    }

    fn error(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Option<String>> {
        Ok(self
            .table
            .get(&r)?
            .error
            .as_ref()
            .map(|e| e.message.clone()))
    }

    fn error_code(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u32> {
        Ok(self.table.get(&r)?.error_code())
    }

    fn body_len(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&r)?.body_len)
    }

    fn body(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Vec<u8>> {
        Ok(self.table.get(&r)?.body_bytes().to_vec())
    }

    fn text(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        Ok(String::from_utf8_lossy(self.table.get(&r)?.body_bytes()).into_owned())
    }

    fn url(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        Ok(self.table.get(&r)?.url.clone())
    }

    fn drop(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<()> {
        // Dropping the response returns its body buffer to the pool.
        self.table.delete(r)?;
        Ok(())
    }
}
