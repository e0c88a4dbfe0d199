//! The lock file (`wload.lock`, TOML): each plugin reference pulled by tag
//! with the digest it resolved to, so that the next pull, on this machine
//! or a colleague's, gets the same bytes or is refused. Like Cargo.lock or
//! package-lock.json it is written by the tool, read by the tool, and
//! meant to be committed next to the tests that use the plugins.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::PluginRef;

/// The file name `wload plugin pull` uses unless told otherwise.
pub const FILE_NAME: &str = "wload.lock";

const HEADER: &str = "\
# wload.lock: the plugins `wload plugin pull` fetched, pinned by digest.
# Written by wload; commit it. `wload plugin pull` with no reference pulls
# every plugin listed here at its pinned digest; a registry whose tag now
# names other content is refused until `wload plugin pull --update REF`.
";

const VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The reference as pulled: `oci://HOST/NAME:TAG` (or `@sha256:…`).
    pub source: String,
    /// The manifest's digest.
    pub digest: String,
    /// The component's own digest (the wasm layer's).
    pub component: String,
    /// Where the component was written, relative to the lock file.
    pub file: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Document {
    version: u32,
    #[serde(default, rename = "plugin")]
    plugins: Vec<Entry>,
}

/// A lock file, read (or empty when it does not exist yet).
#[derive(Debug)]
pub struct Lock {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
}

impl Lock {
    pub fn read(path: &Path) -> Result<Lock> {
        let entries = match std::fs::read_to_string(path) {
            Ok(text) => {
                let doc: Document = toml::from_str(&text).with_context(|| {
                    format!(
                        "{} is not a wload lock file; fix it or remove it to pin again",
                        path.display()
                    )
                })?;
                if doc.version != VERSION {
                    bail!(
                        "{} is a version {} lock file; this wload reads version {VERSION}",
                        path.display(),
                        doc.version
                    );
                }
                for e in &doc.plugins {
                    PluginRef::parse(&e.source)
                        .with_context(|| format!("{}: plugin {}", path.display(), e.source))?;
                }
                doc.plugins
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        Ok(Lock {
            path: path.to_owned(),
            entries,
        })
    }

    /// The pin of `source`, if any.
    pub fn get(&self, source: &PluginRef) -> Option<&Entry> {
        let key = source.to_string();
        self.entries.iter().find(|e| e.source == key)
    }

    /// Pin `entry`, replacing the pin of the same source.
    pub fn set(&mut self, entry: Entry) {
        self.entries.retain(|e| e.source != entry.source);
        self.entries.push(entry);
        self.entries.sort_by(|a, b| a.source.cmp(&b.source));
    }

    /// The folder that `file`s are relative to.
    pub fn dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    /// Write the file (whole, through a temporary file: a lock half
    /// written would pin nothing).
    pub fn write(&self) -> Result<()> {
        let doc = Document {
            version: VERSION,
            plugins: self.entries.clone(),
        };
        let body = toml::to_string(&doc).context("cannot encode the lock file")?;
        let tmp = self.path.with_extension("lock.tmp");
        std::fs::write(&tmp, format!("{HEADER}{body}"))
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_sorted_and_replaces_a_pin() {
        let dir = std::env::temp_dir().join(format!("wload-oci-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(FILE_NAME);
        let _ = std::fs::remove_file(&path);
        let mut lock = Lock::read(&path).expect("absent is empty");
        assert!(lock.entries.is_empty());
        let entry = |source: &str, digest: &str| Entry {
            source: source.into(),
            digest: digest.into(),
            component: "sha256:c".into(),
            file: "x.wasm".into(),
        };
        lock.set(entry("oci://h/b:1", "sha256:1"));
        lock.set(entry("oci://h/a:1", "sha256:2"));
        lock.set(entry("oci://h/b:1", "sha256:3"));
        lock.write().expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("# wload.lock"), "{text}");
        let again = Lock::read(&path).expect("read");
        let sources: Vec<_> = again.entries.iter().map(|e| e.digest.as_str()).collect();
        assert_eq!(sources, ["sha256:2", "sha256:3"]);
        let b = PluginRef::parse("oci://h/b:1").expect("ref");
        assert_eq!(again.get(&b).map(|e| e.digest.as_str()), Some("sha256:3"));

        std::fs::write(&path, "version = 9\n").expect("write");
        let e = Lock::read(&path).expect_err("version");
        assert!(e.to_string().contains("version 9"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
