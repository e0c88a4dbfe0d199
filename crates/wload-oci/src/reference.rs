//! `oci://HOST[:PORT]/NAME[:TAG|@sha256:HEX]`, as the CLI and the lock
//! file write a plugin's place in a registry. The registry host is always
//! spelled out: there is no default registry for plugins (Docker Hub's
//! `library/` is for images), so a name never silently goes to one.

use std::fmt;

use anyhow::{Result, bail};
use oci_client::Reference;

/// A plugin's address in a registry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PluginRef {
    /// `HOST` or `HOST:PORT`.
    pub registry: String,
    /// `NAME`, which may have `/` in it (`team/har-replay`).
    pub repository: String,
    /// The tag (`latest` when none is written and there is no digest).
    pub tag: Option<String>,
    /// `sha256:…`.
    pub digest: Option<String>,
}

impl PluginRef {
    pub fn parse(text: &str) -> Result<PluginRef> {
        let form = "oci://HOST[:PORT]/NAME[:TAG] or oci://HOST[:PORT]/NAME@sha256:DIGEST";
        let Some(rest) = text.strip_prefix("oci://") else {
            bail!("{text:?} is not a registry reference: write {form}");
        };
        let Some((registry, path)) = rest.split_once('/') else {
            bail!("{text:?} has no NAME after the registry: write {form}");
        };
        if registry.is_empty() || registry.contains('@') {
            bail!("{text:?} has no registry host: write {form}");
        }
        let (path, digest) = match path.split_once('@') {
            Some((path, digest)) => {
                let hex = digest.strip_prefix("sha256:").unwrap_or("");
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    bail!(
                        "{text:?}: the digest {digest:?} is not sha256: and 64 hexadecimal digits"
                    );
                }
                (path, Some(digest.to_ascii_lowercase()))
            }
            None => (path, None),
        };
        // A tag follows the last `:` of the last path segment.
        let last = path.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match path[last..].rfind(':') {
            Some(i) => (&path[..last + i], Some(path[last + i + 1..].to_owned())),
            None => (path, None),
        };
        let ok_name = !repository.is_empty()
            && repository.split('/').all(|part| {
                !part.is_empty()
                    && part.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)
                    })
            });
        if !ok_name {
            bail!(
                "{text:?}: the name {repository:?} must be lower case letters, digits, '.', '_', \
                 '-' and '/' between parts"
            );
        }
        if let Some(tag) = &tag {
            let ok = !tag.is_empty()
                && tag.len() <= 128
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
            if !ok {
                bail!(
                    "{text:?}: the tag {tag:?} must be up to 128 letters, digits, '.', '_' and '-'"
                );
            }
        }
        let tag = match (tag, &digest) {
            (None, None) => Some("latest".to_owned()),
            (tag, _) => tag,
        };
        Ok(PluginRef {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag,
            digest,
        })
    }

    /// The same plugin at `digest` (the tag kept, for messages only: a
    /// digest reference is resolved by its digest).
    pub fn with_digest(&self, digest: &str) -> PluginRef {
        PluginRef {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }

    /// The plugin's last name part: `har-replay` for `…/team/har-replay:1`.
    pub fn short_name(&self) -> &str {
        self.repository
            .rsplit('/')
            .next()
            .unwrap_or(&self.repository)
    }

    pub fn registry_text(&self) -> String {
        format!("oci://{}", self.registry)
    }

    pub(crate) fn oci(&self) -> Reference {
        match &self.digest {
            Some(d) => {
                Reference::with_digest(self.registry.clone(), self.repository.clone(), d.clone())
            }
            None => Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                self.tag.clone().unwrap_or_else(|| "latest".to_owned()),
            ),
        }
    }
}

impl fmt::Display for PluginRef {
    /// `oci://HOST/NAME@DIGEST` when there is a digest, else
    /// `oci://HOST/NAME:TAG`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        match (&self.digest, &self.tag) {
            (Some(d), _) => write!(f, "@{d}"),
            (None, Some(t)) => write!(f, ":{t}"),
            (None, None) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_ports_paths_and_digests() {
        let r = PluginRef::parse("oci://127.0.0.1:5000/team/har-replay:0.1.0").expect("parse");
        assert_eq!(r.registry, "127.0.0.1:5000");
        assert_eq!(r.repository, "team/har-replay");
        assert_eq!(r.tag.as_deref(), Some("0.1.0"));
        assert_eq!(r.short_name(), "har-replay");
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/team/har-replay:0.1.0");

        let r = PluginRef::parse("oci://localhost/ping").expect("parse");
        assert_eq!(r.tag.as_deref(), Some("latest"));

        let hex = "ab".repeat(32);
        let r = PluginRef::parse(&format!("oci://h:1/ping@sha256:{hex}")).expect("parse");
        assert_eq!(r.digest.as_deref(), Some(format!("sha256:{hex}").as_str()));
        assert_eq!(r.tag, None);
        assert_eq!(r.to_string(), format!("oci://h:1/ping@sha256:{hex}"));
    }

    #[test]
    fn refuses_what_is_not_a_reference_saying_the_form() {
        for (text, says) in [
            ("127.0.0.1:5000/ping:1", "write oci://HOST"),
            ("oci://127.0.0.1:5000", "no NAME"),
            ("oci:///ping", "no registry host"),
            ("oci://h/Ping", "lower case"),
            ("oci://h/ping:", "the tag"),
            ("oci://h/ping@sha256:12", "64 hexadecimal"),
            ("oci://h/ping@md5:12", "64 hexadecimal"),
        ] {
            let e = PluginRef::parse(text).expect_err(text).to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
