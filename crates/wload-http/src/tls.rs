//! The rustls client configuration of a run: trusted roots, the
//! `--insecure-skip-tls-verify` verifier, client certificates and ALPN.
//!
//! Built once when the client is created, so that reading certificate
//! files and the system store never happens on the request path.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

/// TLS settings of a run.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    /// Accept any server certificate (`--insecure-skip-tls-verify`).
    pub insecure_skip_verify: bool,
    /// Extra trusted CA certificates (PEM files), on top of the system
    /// store and the webpki roots.
    pub ca_files: Vec<PathBuf>,
    /// Client certificate chain and key (PEM) for mutual TLS.
    pub client_cert: Option<(PathBuf, PathBuf)>,
}

/// ALPN protocol ids, most preferred first.
const ALPN_H2: &[u8] = b"h2";
const ALPN_H1: &[u8] = b"http/1.1";

/// Build the rustls client config; `http2` offers `h2` by ALPN.
pub fn client_config(opts: &TlsOptions, http2: bool) -> Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS: no protocol versions")?;
    let builder = if opts.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnything(provider)))
    } else {
        builder.with_root_certificates(roots(&opts.ca_files)?)
    };
    let mut config = match &opts.client_cert {
        Some((cert, key)) => builder
            .with_client_auth_cert(read_certs(cert)?, read_key(key)?)
            .with_context(|| format!("TLS client certificate {}", cert.display()))?,
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = if http2 {
        vec![ALPN_H2.to_vec(), ALPN_H1.to_vec()]
    } else {
        vec![ALPN_H1.to_vec()]
    };
    Ok(Arc::new(config))
}

/// webpki's roots, the system's, and the user's CA files. The system store
/// is best effort: a machine without one still has webpki's roots.
fn roots(ca_files: &[PathBuf]) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    let _ = store.add_parsable_certificates(native.certs);
    for file in ca_files {
        let certs = read_certs(file)?;
        for cert in certs {
            store
                .add(cert)
                .with_context(|| format!("TLS CA file {}: unusable certificate", file.display()))?;
        }
    }
    Ok(store)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("cannot read certificates from {}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("invalid PEM certificate in {}", path.display()))?;
    if certs.is_empty() {
        bail!("no PEM certificate in {}", path.display());
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path)
        .with_context(|| format!("cannot read a PEM private key from {}", path.display()))
}

/// The server name to verify and send as SNI: a DNS name, or an IP
/// address (rustls sends no SNI for those).
pub fn server_name(host: &str) -> Option<ServerName<'static>> {
    ServerName::try_from(host.to_owned()).ok()
}

/// `tls_version` tag value of a negotiated protocol, as k6 writes it.
pub fn version_tag(v: Option<rustls::ProtocolVersion>) -> Option<&'static str> {
    match v? {
        rustls::ProtocolVersion::TLSv1_3 => Some("tls1.3"),
        rustls::ProtocolVersion::TLSv1_2 => Some("tls1.2"),
        _ => Some("tls"),
    }
}

/// The verifier of `--insecure-skip-tls-verify`: any certificate passes,
/// signatures are still checked so the handshake itself is sound.
#[derive(Debug)]
struct AcceptAnything(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnything {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
