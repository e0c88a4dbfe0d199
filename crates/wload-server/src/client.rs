//! `wload run --server URL --token T test.wasm`: a run on a wload
//! service, shown as a local run shows it. The test is uploaded (the
//! service keeps it by content hash, so an unchanged test is not compiled
//! again), the run started with the options the flags, `WLOAD_*` and
//! `--config` give, its console (header, errors) and progress (painted
//! as a local run paints it: bars redrawn on a terminal) followed live on
//! stderr, its summary printed on stdout, and the process exits with the
//! run's own exit code (99 when a threshold failed). Ctrl-C stops the run
//! on the service (a second one at once), as it stops a local run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use wload_engine::run::{ExitError, exit};
use wload_output::progress::Painter;

use crate::job::ProgressFrame;

/// What a remote run needs from the command line.
pub struct RemoteRun {
    pub server: String,
    pub token: String,
    pub test: PathBuf,
    /// The merged k6 options (flags over `WLOAD_*` over `--config`).
    pub options: Map<String, Value>,
    pub env: BTreeMap<String, String>,
    /// A plugin's parameters, `@FILE`s read (the service cannot read the
    /// user's files); checked by the service against the plugin.
    pub params: BTreeMap<String, String>,
    pub quiet: bool,
    pub no_summary: bool,
    pub summary_export: Option<PathBuf>,
    /// `--out hdr=FILE`: the run's HdrHistogram log, downloaded.
    pub hdr_out: Option<PathBuf>,
}

/// A wload service's address and the token to use.
#[derive(Clone)]
pub struct Remote {
    scheme_tls: bool,
    host: String,
    port: u16,
    base_path: String,
    token: String,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Remote {
    pub fn new(server: &str, token: &str) -> Result<Remote> {
        let url = url::Url::parse(server)
            .with_context(|| format!("--server {server:?} is not a URL (http://HOST:PORT)"))?;
        let tls = match url.scheme() {
            "http" => false,
            "https" => true,
            other => bail!("--server {server:?}: the scheme must be http or https, not {other}"),
        };
        let host = url
            .host_str()
            .ok_or_else(|| anyhow!("--server {server:?} has no host"))?
            .trim_matches(['[', ']'])
            .to_owned();
        let port = url.port_or_known_default().unwrap_or(80);
        if token.is_empty() {
            bail!("a token is needed: --token TOKEN or WLOAD_TOKEN");
        }
        Ok(Remote {
            scheme_tls: tls,
            host,
            port,
            base_path: url.path().trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            tls: if tls {
                Some(wload_http::tls_client_config(&Default::default(), false)?)
            } else {
                None
            },
        })
    }

    /// Send one request on a new connection; the response's body streams.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Bytes)>,
    ) -> Result<http::Response<Incoming>> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .with_context(|| {
                format!(
                    "cannot connect to the wload service at {}:{}",
                    self.host, self.port
                )
            })?;
        let _ = tcp.set_nodelay(true);
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base_path))
            .header(header::HOST, format!("{}:{}", self.host, self.port))
            .header(header::AUTHORIZATION, format!("Bearer {}", self.token));
        let payload = match body {
            Some((content_type, bytes)) => {
                builder = builder.header(header::CONTENT_TYPE, content_type);
                bytes
            }
            None => Bytes::new(),
        };
        let req = builder
            .body(Full::new(payload))
            .context("cannot build the request")?;
        if self.scheme_tls {
            let config = self
                .tls
                .clone()
                .ok_or_else(|| anyhow!("no TLS configuration"))?;
            let name = rustls::pki_types::ServerName::try_from(self.host.clone())
                .with_context(|| format!("{} is not a valid TLS server name", self.host))?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .context("TLS handshake with the wload service failed")?;
            exchange(stream, req).await
        } else {
            exchange(tcp, req).await
        }
    }

    /// A request whose answer is JSON; a non-2xx answer becomes an error
    /// carrying the service's message.
    pub async fn json(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Bytes)>,
    ) -> Result<(StatusCode, Value)> {
        let resp = self.send(method, path, body).await?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .context("cannot read the answer")?
            .to_bytes();
        let value: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            json!({"error": {"code": "unreadable", "message": String::from_utf8_lossy(&bytes)}})
        });
        Ok((status, value))
    }

    /// The bytes of a stored file of a run.
    pub async fn file(&self, path: &str) -> Result<Option<Bytes>> {
        let resp = self.send(Method::GET, path, None).await?;
        if !resp.status().is_success() {
            return Ok(None);
        }
        Ok(Some(resp.into_body().collect().await?.to_bytes()))
    }
}

async fn exchange<S>(stream: S, req: Request<Full<Bytes>>) -> Result<http::Response<Incoming>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("HTTP handshake with the wload service failed")?;
    tokio::spawn(conn);
    sender
        .send_request(req)
        .await
        .context("the wload service did not answer")
}

/// The message of a service error answer.
fn service_error(status: StatusCode, v: &Value) -> String {
    let message = v["error"]["message"].as_str().unwrap_or("no message");
    format!("the service answered {status}: {message}")
}

/// Run a test on a service, as `wload run` runs one here.
pub async fn run(args: RemoteRun) -> Result<u8> {
    let remote = Remote::new(&args.server, &args.token)?;
    let test = upload(&remote, &args.test).await?;
    let mut body = json!({"test": test, "options": args.options, "env": args.env});
    if !args.params.is_empty() {
        body["params"] = json!(args.params);
    }
    let (status, run) = remote
        .json(
            Method::POST,
            "/v1/runs",
            Some(("application/json", Bytes::from(body.to_string()))),
        )
        .await?;
    if !status.is_success() {
        let message = service_error(status, &run);
        // A refused run is a configuration problem, as invalid options are.
        let code = match status {
            StatusCode::BAD_REQUEST
            | StatusCode::UNPROCESSABLE_ENTITY
            | StatusCode::TOO_MANY_REQUESTS => exit::INVALID_CONFIG,
            _ => 1,
        };
        return Err(ExitError { code, message }.into());
    }
    let id = run["id"]
        .as_str()
        .ok_or_else(|| anyhow!("the service gave no run id"))?
        .to_owned();
    if !args.quiet {
        eprintln!("wload: run {id} on {}", args.server);
    }
    let end = follow(&remote, &id, args.quiet).await?;
    let code = end["exitCode"].as_i64();
    if !args.no_summary
        && let Some(text) = remote.file(&format!("/v1/runs/{id}/summary.txt")).await?
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(&text);
        let _ = out.flush();
    }
    for (wanted, file) in [(&args.summary_export, "summary"), (&args.hdr_out, "hdr")] {
        if let Some(path) = wanted {
            let bytes = remote
                .file(&format!("/v1/runs/{id}/{file}"))
                .await?
                .ok_or_else(|| anyhow!("the service has no {file} for run {id}"))?;
            std::fs::write(path, &bytes)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    match (end["status"].as_str(), code) {
        (_, Some(c)) => Ok(u8::try_from(c).unwrap_or(1)),
        (Some("interrupted"), None) => Err(ExitError {
            code: exit::ABORTED,
            message: format!("run {id} was interrupted: the service stopped while it went"),
        }
        .into()),
        (status, None) => bail!(
            "run {id} ended {}: {}",
            status.unwrap_or("without a status"),
            end["message"].as_str().unwrap_or("no message")
        ),
    }
}

async fn upload(remote: &Remote, path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let name = path
        .file_name()
        .map_or_else(|| "test.wasm".into(), |n| n.to_string_lossy());
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("name", &name)
        .finish();
    let (status, test) = remote
        .json(
            Method::POST,
            &format!("/v1/tests?{query}"),
            Some(("application/wasm", Bytes::from(bytes))),
        )
        .await?;
    if !status.is_success() {
        bail!(
            "cannot upload {}: {}",
            path.display(),
            service_error(status, &test)
        );
    }
    test["id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("the service gave no test id"))
}

/// Print the run's console as it comes; Ctrl-C stops the run. Returns
/// the run's record as it ended.
async fn follow(remote: &Remote, id: &str, quiet: bool) -> Result<Value> {
    let resp = remote
        .send(Method::GET, &format!("/v1/runs/{id}/events"), None)
        .await?;
    if !resp.status().is_success() {
        bail!(
            "cannot follow run {id}: the service answered {}",
            resp.status()
        );
    }
    let mut body = resp.into_body();
    let mut parser = crate::sse::Parser::default();
    let mut interrupts = 0u32;
    // The run's progress drawings, painted as a local run paints its own.
    let mut painter = Painter::new();
    let mut first_frame: Option<Instant> = None;
    loop {
        tokio::select! {
            frame = body.frame() => {
                let Some(frame) = frame else { break };
                let frame = frame.context("the event stream broke")?;
                let Some(data) = frame.data_ref() else { continue };
                for (event, data) in parser.push(data) {
                    match event.as_str() {
                        "console" if !quiet => eprintln!("{data}"),
                        "progress" if !quiet => {
                            if let Ok(frame) = serde_json::from_str::<ProgressFrame>(&data) {
                                let since = *first_frame.get_or_insert_with(Instant::now);
                                painter.paint(&frame.lines, since.elapsed(), frame.last);
                            }
                        }
                        "end" => return serde_json::from_str(&data).context("invalid end event"),
                        _ => {}
                    }
                }
            }
            _ = tokio::signal::ctrl_c() => {
                interrupts += 1;
                if !quiet {
                    eprintln!(
                        "wload: stopping run {id} on the service{}",
                        if interrupts > 1 { " at once" } else { " (Ctrl-C again to stop at once)" }
                    );
                }
                let patch = Bytes::from_static(br#"{"stopped": true}"#);
                let _ = remote
                    .json(Method::PATCH, &format!("/v1/runs/{id}/status"), Some(("application/json", patch)))
                    .await;
            }
        }
    }
    bail!("the event stream of run {id} ended before the run did")
}
