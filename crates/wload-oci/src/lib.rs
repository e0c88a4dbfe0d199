//! Shipping wload plugins through OCI registries: `wload plugin push` and
//! `wload plugin pull oci://HOST[:PORT]/NAME[:TAG|@DIGEST]`.
//!
//! A plugin is one `.wasm` component, so it travels as the CNCF "wasm OCI
//! artifact" layout that wasm tooling (wkg, wash, oras) already reads: a
//! manifest with one config blob of media type
//! `application/vnd.wasm.config.v0+json` and one layer of type
//! `application/wasm`, the component's bytes unchanged. Nothing in it is
//! time-dependent, so pushing the same file twice gives the same digest.
//!
//! Pulls are pinned: [`lock`] keeps `oci://…:TAG → sha256:…` in a lock
//! file, and a registry whose tag now points elsewhere is refused, as is
//! any blob whose bytes do not hash to the digest that named it.

pub mod auth;
pub mod lock;
mod reference;

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use oci_client::Client;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use sha2::{Digest as _, Sha256};

pub use reference::PluginRef;

/// The manifest's config blob type (CNCF wasm OCI artifact, version 0).
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer holding the component.
pub const WASM_MEDIA_TYPE: &str = "application/wasm";

/// How to reach a registry.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    /// Plain HTTP instead of HTTPS (a loopback or in-cluster registry
    /// without TLS). Credentials are then sent in the clear.
    pub insecure: bool,
    /// Basic credentials, or none (anonymous).
    pub credentials: Option<auth::Credentials>,
}

impl Registry {
    fn client(&self) -> Client {
        // reqwest's rustls is built without a crypto provider so that the
        // workspace keeps one (ring); install it once per process.
        let _ = rustls::crypto::ring::default_provider().install_default();
        Client::new(ClientConfig {
            protocol: if self.insecure {
                ClientProtocol::Http
            } else {
                ClientProtocol::Https
            },
            ..ClientConfig::default()
        })
    }

    fn auth(&self) -> RegistryAuth {
        match &self.credentials {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        }
    }
}

/// What the pusher says about the plugin, kept in the manifest's
/// annotations (`org.opencontainers.image.*`) so that a registry's UI
/// and `oras manifest fetch` show it.
#[derive(Debug, Clone, Default)]
pub struct Annotations {
    pub title: String,
    pub version: String,
    pub description: String,
}

/// The `sha256:…` digest of `bytes`, as OCI names content.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The manifest and config of `wasm` as the artifact layout wants them:
/// `(manifest bytes, config bytes)`.
fn artifact(wasm: &[u8], notes: &Annotations) -> Result<(Vec<u8>, Vec<u8>)> {
    let layer_digest = digest(wasm);
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
    }))
    .context("cannot encode the artifact's config")?;
    let mut annotations = BTreeMap::new();
    for (key, value) in [
        ("org.opencontainers.image.title", &notes.title),
        ("org.opencontainers.image.version", &notes.version),
        ("org.opencontainers.image.description", &notes.description),
    ] {
        if !value.is_empty() {
            annotations.insert(key.to_owned(), value.clone());
        }
    }
    let manifest = OciImageManifest {
        schema_version: 2,
        media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
        config: OciDescriptor {
            media_type: CONFIG_MEDIA_TYPE.to_owned(),
            digest: digest(&config),
            size: config.len() as i64,
            ..OciDescriptor::default()
        },
        layers: vec![OciDescriptor {
            media_type: WASM_MEDIA_TYPE.to_owned(),
            digest: layer_digest,
            size: wasm.len() as i64,
            ..OciDescriptor::default()
        }],
        artifact_type: None,
        annotations: (!annotations.is_empty()).then_some(annotations),
        subject: None,
    };
    let manifest = serde_json::to_vec(&manifest).context("cannot encode the manifest")?;
    Ok((manifest, config))
}

/// Push `wasm` (a component's bytes) as `target`, which names a tag (a
/// digest is what the push yields, it cannot be chosen). Returns the
/// manifest's digest: `target` pulled by that digest gives these bytes.
pub async fn push(
    registry: &Registry,
    target: &PluginRef,
    wasm: &[u8],
    notes: &Annotations,
) -> Result<String> {
    if target.digest.is_some() {
        bail!(
            "{target}: push to a tag (oci://HOST/NAME:TAG); a digest is what a push prints, not what it takes"
        );
    }
    let client = registry.client();
    let reference = target.oci();
    let auth = registry.auth();
    let (manifest, config) = artifact(wasm, notes)?;
    client
        .store_auth_if_needed(reference.resolve_registry(), &auth)
        .await;
    client
        .push_blob(&reference, wasm.to_vec(), &digest(wasm))
        .await
        .with_context(|| format!("cannot upload the component to {}", target.registry_text()))?;
    client
        .push_blob(&reference, config.clone(), &digest(&config))
        .await
        .with_context(|| format!("cannot upload the config to {}", target.registry_text()))?;
    let manifest_digest = digest(&manifest);
    client
        .push_manifest_raw(
            &reference,
            manifest,
            OCI_IMAGE_MEDIA_TYPE
                .parse()
                .context("the manifest media type is a header value")?,
        )
        .await
        .with_context(|| format!("cannot push the manifest of {target}"))?;
    Ok(manifest_digest)
}

/// The largest component a pull takes: far above any plugin (an
/// interpreter with its snapshot is tens of MB), low enough that a
/// hostile registry cannot fill the memory.
pub const MAX_COMPONENT_BYTES: usize = 512 << 20;

/// A blob's destination that refuses bytes past the size its manifest
/// declared, so that a registry sending more costs an error, not memory.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
}

impl tokio::io::AsyncWrite for Capped {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.bytes.len() + buf.len() > self.limit {
            return std::task::Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes the manifest declares",
                self.limit
            ))));
        }
        self.bytes.extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// A pulled plugin: the component's bytes and the digests that name them.
#[derive(Debug, Clone)]
pub struct Pulled {
    /// The manifest's digest (what a lock file pins, what `@sha256:…`
    /// names).
    pub digest: String,
    /// The wasm layer's digest (the component's own sha256).
    pub layer: String,
    pub wasm: Vec<u8>,
}

/// Pull `source`. When `expect` is given (a lock file's pin), the
/// manifest must have that digest, whatever the tag points at now; a pull
/// by digest must match its own. Every byte is checked against the digest
/// that named it before it is returned.
pub async fn pull(registry: &Registry, source: &PluginRef, expect: Option<&str>) -> Result<Pulled> {
    let client = registry.client();
    // Pinned: fetch the pinned manifest itself, so that a moved tag is
    // seen as such (the tag is resolved below only to say so).
    let wanted = match (expect, &source.digest) {
        (Some(pin), Some(own)) if pin != own => bail!(
            "{source} is pinned to {pin} in the lock file, not {own}: pull {} or update the lock",
            source.with_digest(pin)
        ),
        (Some(pin), _) => Some(pin.to_owned()),
        (None, own) => own.clone(),
    };
    let auth = registry.auth();
    let by_tag = source.oci();
    if let (Some(pin), None) = (expect, &source.digest) {
        let (_, now) = client
            .pull_manifest_raw(&by_tag, &auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .with_context(|| format!("cannot fetch the manifest of {source}"))?;
        if now != pin {
            bail!(
                "{source} now points at {now}, but the lock file pins {pin}: the tag was moved or \
                 the registry's content changed. Pull the pinned version with {} or, if the new \
                 one is trusted, re-pin it with `wload plugin pull --update {source}`",
                source.with_digest(pin)
            );
        }
    }
    let reference = match &wanted {
        Some(d) => source.with_digest(d).oci(),
        None => by_tag,
    };
    let (raw, manifest_digest) = client
        .pull_manifest_raw(&reference, &auth, &[OCI_IMAGE_MEDIA_TYPE])
        .await
        .with_context(|| format!("cannot fetch the manifest of {source}"))?;
    let actual = digest(&raw);
    if actual != manifest_digest || wanted.as_ref().is_some_and(|w| *w != actual) {
        bail!(
            "the manifest of {source} hashes to {actual}, not {}: refusing it",
            wanted.unwrap_or(manifest_digest)
        );
    }
    let manifest: OciImageManifest = serde_json::from_slice(&raw)
        .with_context(|| format!("the manifest of {source} is not an OCI image manifest"))?;
    let layer = match manifest.layers.as_slice() {
        [one] if one.media_type == WASM_MEDIA_TYPE => one.clone(),
        layers => bail!(
            "{source} is not a wasm component artifact: it has {} layer(s) of type(s) [{}], \
             where a plugin has one layer of type {WASM_MEDIA_TYPE}",
            layers.len(),
            layers
                .iter()
                .map(|l| l.media_type.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let size = usize::try_from(layer.size)
        .ok()
        .filter(|s| *s <= MAX_COMPONENT_BYTES)
        .with_context(|| {
            format!(
                "{source}: the component's size in its manifest, {} bytes, is not between 0 and \
                 {MAX_COMPONENT_BYTES}",
                layer.size
            )
        })?;
    let mut wasm = Capped {
        bytes: Vec::new(),
        limit: size,
    };
    client
        .pull_blob(&reference, &layer, &mut wasm)
        .await
        .with_context(|| format!("cannot download the component of {source}"))?;
    let wasm = wasm.bytes;
    // pull_blob checks the digest as it streams; checked again here so that
    // the guarantee does not rest on a dependency's internals.
    let got = digest(&wasm);
    if got != layer.digest {
        bail!(
            "the component of {source} hashes to {got}, not {} as its manifest says: refusing it",
            layer.digest
        );
    }
    Ok(Pulled {
        digest: actual,
        layer: layer.digest,
        wasm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_artifact_is_the_wasm_layout_and_reproducible() {
        let notes = Annotations {
            title: "ping".into(),
            version: "0.1.0".into(),
            description: String::new(),
        };
        let (manifest, config) = artifact(b"\0asm\x0d\0\x01\0", &notes).expect("artifact");
        let again = artifact(b"\0asm\x0d\0\x01\0", &notes).expect("artifact");
        assert_eq!((manifest.clone(), config.clone()), again);
        let m: serde_json::Value = serde_json::from_slice(&manifest).expect("JSON");
        assert_eq!(m["config"]["mediaType"], CONFIG_MEDIA_TYPE);
        assert_eq!(m["config"]["digest"], digest(&config));
        assert_eq!(m["layers"][0]["mediaType"], WASM_MEDIA_TYPE);
        assert_eq!(m["layers"][0]["size"], 8);
        assert_eq!(m["annotations"]["org.opencontainers.image.title"], "ping");
        assert!(m["annotations"]["org.opencontainers.image.description"].is_null());
        let c: serde_json::Value = serde_json::from_slice(&config).expect("JSON");
        assert_eq!(c["layerDigests"][0], m["layers"][0]["digest"]);
    }

    #[test]
    fn digests_are_sha256_hex() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
