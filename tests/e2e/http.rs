//! The HTTP client against real servers on loopback: TLS with a
//! self-signed certificate (rcgen), HTTP/2 by ALPN and h2c, batch limits
//! observed at the server, redirects, cookies, compression, expected
//! statuses, connection reuse, and misbehaving servers, each failure with
//! its k6 error code. The guest is examples/rust/http_features.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wload_target::{ServeOptions, TargetServer};

use crate::support::*;

const LIMIT: Duration = Duration::from_secs(120);

/// A self-signed certificate for `localhost`, written as PEM into the
/// test's scratch folder, and a rustls server config offering `alpn`.
pub fn tls_server(name: &str, alpn: &[&[u8]]) -> (TargetServer, PathBuf) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()])
        .expect("generate a certificate");
    let dir = scratch(&format!("{name}_cert"));
    let pem = dir.join("cert.pem");
    std::fs::write(&pem, certified.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certified.cert.der().clone()], key)
    .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    (serve_tls(config), pem)
}

/// The target server on a free loopback port, speaking TLS with `config`.
fn serve_tls(config: rustls::ServerConfig) -> TargetServer {
    let opts = ServeOptions {
        tls: Some(Arc::new(config)),
        h2c: false,
    };
    runtime()
        .block_on(TargetServer::start_with(([127, 0, 0, 1], 0).into(), opts))
        .unwrap()
}

fn features(name: &str, base: &str, args: &str) -> Finished {
    let run = run_test(name, "http_features", base, args, LIMIT);
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    run
}

/// Every check of the run passed at least once and never failed.
fn all_pass(run: &Finished) {
    let checks = run.summary["root_group"]["checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    for c in checks {
        assert_eq!(c["fails"], 0, "check failed: {c}\nstderr: {}", run.stderr());
        assert!(c["passes"].as_u64().unwrap() > 0, "{c}");
    }
}

#[test]
fn https_negotiates_http2_by_alpn_and_multiplexes_on_few_connections() {
    let (server, ca) = tls_server("tls_h2", &[b"h2", b"http/1.1"]);
    let base = format!("https://localhost:{}", server.addr.port());
    let ca = ca.display();
    let run = features(
        "tls_h2",
        &base,
        &format!(
            "--vus 2 --iterations 20 -e MODE=proto -e EXPECT_PROTO=HTTP/2.0 -e EXPECT_TLS=tls1.3 --tls-ca {ca}"
        ),
    );
    all_pass(&run);
    assert_eq!(run.metric("http_reqs", "count"), 20.0);
    assert!(run.metric("http_req_tls_handshaking", "max") > 0.0);
    // One connection per VU, reused by all of its requests.
    assert_eq!(server.stats.connections(), 2);

    // Offering only HTTP/1.1 gets HTTP/1.1 over TLS 1.3.
    let run = features(
        "tls_h1",
        &base,
        &format!(
            "--vus 1 --iterations 5 -e MODE=proto -e EXPECT_PROTO=HTTP/1.1 -e EXPECT_TLS=tls1.3 --tls-ca {ca} --no-http2"
        ),
    );
    all_pass(&run);
}

#[test]
fn batches_share_one_http2_connection() {
    let (server, ca) = tls_server("tls_batch", &[b"h2", b"http/1.1"]);
    let base = format!("https://localhost:{}", server.addr.port());
    let run = features(
        "tls_batch",
        &base,
        &format!(
            "--vus 1 --iterations 3 -e MODE=batch -e BATCH_N=8 --tls-ca {}",
            ca.display()
        ),
    );
    all_pass(&run);
    assert_eq!(run.metric("http_reqs", "count"), 48.0);
    assert_eq!(
        server.stats.connections(),
        1,
        "streams were not multiplexed"
    );
}

#[test]
fn tls_failures_carry_their_codes_and_insecure_skips_verification() {
    let (server, ca) = tls_server("tls_fail", &[b"http/1.1"]);
    let port = server.addr.port();
    // Self-signed and not trusted: unknown authority.
    let run = features(
        "tls_unknown",
        "http://unused",
        &format!(
            "--iterations 2 -e MODE=error -e TARGET=https://localhost:{port}/ -e EXPECT_CODE=1310"
        ),
    );
    all_pass(&run);
    assert_eq!(run.metric("http_req_failed", "passes"), 2.0);
    // Trusted, but the certificate names localhost, not 127.0.0.1.
    let run = features(
        "tls_hostname",
        "http://unused",
        &format!(
            "--iterations 2 -e MODE=error -e TARGET=https://127.0.0.1:{port}/ -e EXPECT_CODE=1311 --tls-ca {}",
            ca.display()
        ),
    );
    all_pass(&run);
    // Plain HTTP spoken to a TLS port: the server's alert is not HTTP.
    let run = features(
        "tls_plain",
        "http://unused",
        &format!(
            "--iterations 1 -e MODE=error -e TARGET=http://127.0.0.1:{port}/ -e EXPECT_CODE=1000"
        ),
    );
    all_pass(&run);
    let run = features(
        "tls_insecure",
        &format!("https://127.0.0.1:{port}"),
        "--iterations 3 -e MODE=proto -e EXPECT_PROTO=HTTP/1.1 -e EXPECT_TLS=tls1.3 --insecure-skip-tls-verify",
    );
    all_pass(&run);
}

#[test]
fn h2c_with_prior_knowledge() {
    let server = runtime()
        .block_on(TargetServer::start_with(
            ([127, 0, 0, 1], 0).into(),
            ServeOptions {
                tls: None,
                h2c: true,
            },
        ))
        .unwrap();
    let run = features(
        "h2c",
        &server.base_url(),
        "--vus 2 --iterations 10 -e MODE=proto -e EXPECT_PROTO=HTTP/2.0 --h2c",
    );
    all_pass(&run);
    assert_eq!(server.stats.connections(), 2);
}

#[test]
fn batch_per_host_bounds_concurrency_at_the_server() {
    let server = server();
    let run = features(
        "batch_limit",
        &server.base_url(),
        "--vus 1 --iterations 2 -e MODE=batch -e BATCH_N=10 --batch-per-host 3",
    );
    all_pass(&run);
    assert_eq!(run.metric("http_reqs", "count"), 40.0);
    assert_eq!(server.stats.max_in_flight(), 3);
    // HTTP/1.1: one connection per request in flight, reused.
    assert_eq!(server.stats.connections(), 3);

    let server = self::server();
    let run = features(
        "batch_default",
        &server.base_url(),
        "--vus 1 --iterations 1 -e MODE=batch -e BATCH_N=10",
    );
    all_pass(&run);
    assert_eq!(server.stats.max_in_flight(), 6);
}

#[test]
fn redirects_are_followed_measured_and_limited() {
    let (server, run) = run_ok(
        "redirects",
        "http_features",
        "--vus 1 --iterations 3 -e MODE=redirect",
    );
    all_pass(&run);
    // Per iteration: 4 hops + the final response, then 1 hop + the 302.
    assert_eq!(run.metric("http_reqs", "count"), 21.0);
    assert_eq!(server.stats.requests(), 21);
    assert_eq!(run.metric("http_req_failed", "passes"), 0.0);
}

#[test]
fn cookies_persist_per_vu_across_iterations() {
    let (_server, run) = run_ok(
        "cookies",
        "http_features",
        "--vus 2 --iterations 8 -e MODE=cookies",
    );
    all_pass(&run);
}

#[test]
fn compressed_bodies_are_decoded_and_counted_on_the_wire() {
    let (_server, run) = run_ok(
        "compress",
        "http_features",
        "--vus 1 --iterations 4 -e MODE=compress",
    );
    all_pass(&run);
    // Decoded bodies would be 3 x 143 bytes per iteration; the wire
    // carried compressed ones plus headers.
    let plain = wload_target::COMPRESSIBLE.len() as f64;
    assert!(run.metric("data_received", "count") < 12.0 * (plain + 60.0));
}

#[test]
fn expected_statuses_per_request_and_per_run() {
    let (_server, run) = run_ok("expect", "http_features", "--iterations 4 -e MODE=expect");
    all_pass(&run);
    // 404 expected by the request, 418 not.
    assert_eq!(run.metric("http_req_failed", "passes"), 4.0);
    assert_eq!(run.metric("http_req_failed", "fails"), 4.0);
    let (_server, run) = run_ok(
        "expect_run",
        "http_features",
        "--iterations 4 -e MODE=expect --expected-statuses 200-299,418",
    );
    assert_eq!(run.metric("http_req_failed", "passes"), 0.0);
}

#[test]
fn sdk_helpers_build_bodies_and_discard_mode_is_run_wide() {
    let (_server, run) = run_ok("sdk", "http_features", "--iterations 2 -e MODE=sdk");
    all_pass(&run);
    let (_server, run) = run_ok(
        "keep",
        "http_features",
        "--iterations 2 -e MODE=keep --discard-response-bodies",
    );
    all_pass(&run);
}

#[test]
fn connection_reuse_can_be_turned_off() {
    // 3 iterations x 7 requests (redirect mode) on one connection.
    let (server, _run) = run_ok("reuse", "http_features", "--iterations 3 -e MODE=redirect");
    assert_eq!(server.stats.connections(), 1);
    let (server, _run) = run_ok(
        "no_vu_reuse",
        "http_features",
        "--iterations 3 -e MODE=redirect --no-vu-connection-reuse",
    );
    assert_eq!(server.stats.connections(), 3);
    let (server, _run) = run_ok(
        "no_reuse",
        "http_features",
        "--iterations 3 -e MODE=redirect --no-connection-reuse",
    );
    assert_eq!(server.stats.connections(), 21);
}

#[test]
fn local_ips_are_given_out_to_vus_in_turn() {
    let (addr, peers) = wload_target::counting::start_seeing_peers(
        [127, 0, 0, 1].into(),
        wload_target::counting::ok(),
    )
    .expect("bind a loopback port");
    // Each of 4 VUs keeps one connection: VU n connects from the list's
    // n-th address, the 4th from the first again.
    let options = options_file(
        "local_ips",
        &serde_json::json!({"scenarios": {"each": {
            "executor": "per-vu-iterations", "vus": 4, "iterations": 2}}}),
    );
    let run = run_test(
        "local_ips",
        "hello",
        &format!("http://{addr}"),
        &format!("{options} --local-ips 127.0.0.2-127.0.0.3,127.0.0.7"),
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(run.check("status is 200"), (8, 0));
    let mut seen: Vec<String> = peers
        .lock()
        .unwrap()
        .iter()
        .map(|ip| ip.to_string())
        .collect();
    seen.sort();
    assert_eq!(seen, ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.7"]);

    // An address this host lacks (TEST-NET-1) is refused at the start:
    // only a bind is tried, nothing is sent.
    let run = run_test(
        "local_ips_missing",
        "hello",
        &format!("http://{addr}"),
        "--iterations 1 --local-ips 127.0.0.2,192.0.2.1",
        LIMIT,
    );
    assert_ne!(run.code(), Some(0));
    assert!(
        run.stderr().contains("cannot connect from 192.0.2.1"),
        "{}",
        run.stderr()
    );
    let run = run_test(
        "local_ips_bad",
        "hello",
        &format!("http://{addr}"),
        "--local-ips 10.0.0.9-10.0.0.1",
        LIMIT,
    );
    assert_eq!(run.code(), Some(2), "{}", run.stderr());
    assert!(
        run.stderr().contains("ends before it starts"),
        "{}",
        run.stderr()
    );
    assert_eq!(peers.lock().unwrap().len(), 4, "the refused runs connected");
}

/// A raw TCP server that reads one request head and then misbehaves.
fn misbehaving(act: fn(TcpStream)) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                act(stream);
            });
        }
    });
    addr
}

fn expect_code(name: &str, target: &str, code: u32, extra: &str) -> Finished {
    let run = features(
        name,
        "http://unused",
        &format!(
            "--vus 2 --iterations 4 -e MODE=error -e TARGET={target} -e EXPECT_CODE={code} {extra}"
        ),
    );
    all_pass(&run);
    assert_eq!(run.metric("http_req_failed", "passes"), 4.0);
    assert_eq!(run.metric("iterations", "count"), 4.0);
    run
}

#[test]
fn misbehaving_servers_are_counted_with_error_codes() {
    // Refused: a port nobody listens on any more.
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    expect_code("refused", &format!("http://{closed}/"), 1212, "");

    // Reset in the middle of the body.
    let reset = misbehaving(|mut s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\npartial");
        let _ = s.flush();
        std::thread::sleep(Duration::from_millis(50));
        // SO_LINGER 0: close with RST instead of FIN.
        let _ = socket_linger_zero(&s);
        drop(s);
    });
    expect_code("reset", &format!("http://{reset}/"), 1220, "");

    // Never answers: the request's timeout.
    let hang = misbehaving(|s| {
        std::thread::sleep(Duration::from_secs(3));
        drop(s);
    });
    let run = expect_code(
        "hang",
        &format!("http://{hang}/"),
        1050,
        "-e TIMEOUT_MS=300",
    );
    assert!(run.metric("http_req_duration", "max") >= 290.0);

    // Garbage instead of HTTP.
    let garbage = misbehaving(|mut s| {
        let _ = s.write_all(b"this is not HTTP at all\r\n\r\n");
    });
    expect_code("garbage", &format!("http://{garbage}/"), 1000, "");

    // A URL that is not one.
    expect_code("bad_url", "ftp://127.0.0.1/", 1020, "");
}

fn socket_linger_zero(s: &TcpStream) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket and a correctly sized option value.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A server that asks for a client certificate signed by its own CA.
/// Returns the server, its certificate (to trust) and the client's
/// certificate and key files.
fn mtls_server(name: &str) -> (TargetServer, PathBuf, PathBuf, PathBuf) {
    let dir = scratch(&format!("{name}_pki"));
    // The CA that signs client certificates.
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    // The client's certificate.
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client_cert = rcgen::CertificateParams::new(vec!["wload-client".to_owned()])
        .unwrap()
        .signed_by(&client_key, &ca)
        .unwrap();
    let (cert_pem, key_pem) = (dir.join("client.pem"), dir.join("client.key"));
    std::fs::write(&cert_pem, client_cert.pem()).unwrap();
    std::fs::write(&key_pem, client_key.serialize_pem()).unwrap();
    // The server's own certificate, self-signed for localhost.
    let server = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let server_pem = dir.join("server.pem");
    std::fs::write(&server_pem, server.cert.pem()).unwrap();

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server.signing_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![server.cert.der().clone()], key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (serve_tls(config), server_pem, cert_pem, key_pem)
}

#[test]
fn client_certificates_open_mutual_tls() {
    let (server, trust, cert, key) = mtls_server("mtls");
    let base = format!("https://localhost:{}", server.addr.port());
    let run = features(
        "mtls_ok",
        &base,
        &format!(
            "--iterations 3 -e MODE=proto -e EXPECT_PROTO=HTTP/1.1 -e EXPECT_TLS=tls1.3 --tls-ca {} --tls-client-cert {} --tls-client-key {}",
            trust.display(),
            cert.display(),
            key.display()
        ),
    );
    all_pass(&run);
    assert_eq!(server.stats.requests(), 3);
    // Without the certificate the server refuses every handshake: the
    // requests fail, are counted, and the run goes on.
    let run = run_test(
        "mtls_refused",
        "http_features",
        &base,
        &format!("--iterations 3 -e MODE=proto --tls-ca {}", trust.display()),
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr());
    assert_eq!(run.metric("http_req_failed", "passes"), 3.0);
    assert_eq!(server.stats.requests(), 3);
}

#[test]
fn a_get_on_a_connection_closed_under_it_goes_out_again_on_a_new_one() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Answers the first request of each connection and keeps it alive;
    // at the second it closes without a word, as a server whose
    // keep-alive timeout fires just as a request arrives.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (accepted, requests) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (a, r) = (accepted.clone(), requests.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            a.fetch_add(1, Ordering::SeqCst);
            let r = r.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                for answered in [true, false] {
                    let mut head = Vec::new();
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf) {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    r.fetch_add(1, Ordering::SeqCst);
                    if answered {
                        let _ =
                            stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
                    }
                }
            });
        }
    });
    let run = run_test(
        "closed_under_a_get",
        "hello",
        &format!("http://{addr}"),
        "--vus 1 --iterations 6",
        LIMIT,
    );
    all_pass(&run);
    assert_eq!(run.metric("http_reqs", "count"), 6.0);
    assert_eq!(run.metric("http_req_failed", "passes"), 0.0);
    // Iterations 2-6 each met a closed connection, then a new one.
    assert_eq!(accepted.load(Ordering::SeqCst), 6);
    assert_eq!(requests.load(Ordering::SeqCst), 11);
}
