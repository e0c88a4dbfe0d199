//! The on-disk cache of compiled components.
//!
//! Keyed by a SHA-256 of the component bytes (a composed test's: the
//! test's and each plugin's, `composed-` entries), the wload version and the
//! engine's compatibility hash (wasmtime version and every setting that
//! changes generated code), so a stale entry is never loaded. Writes go
//! to a temporary file renamed into place, so concurrent runs never see
//! half an entry.

use std::hash::{Hash, Hasher};
use std::path::PathBuf;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::WasmtimeResult;

/// Where compiled tests are kept; `None` compiles every time.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: Option<PathBuf>,
}

impl Cache {
    /// `$WLOAD_CACHE_DIR`, else `$XDG_CACHE_HOME/wload`, else
    /// `~/.cache/wload`.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("WLOAD_CACHE_DIR") {
            return Some(d.into());
        }
        if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
            return Some(PathBuf::from(d).join("wload"));
        }
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("wload"))
    }

    pub fn new(dir: Option<PathBuf>) -> Cache {
        Cache { dir }
    }

    pub fn disabled() -> Cache {
        Cache { dir: None }
    }

    /// The entry's name: a SHA-256 of the wload version, the engine's
    /// compatibility hash and `parts`, each length-prefixed so that no
    /// two lists of parts hash alike.
    fn key(engine: &Engine, parts: &[&[u8]]) -> String {
        let mut engine_hash = std::collections::hash_map::DefaultHasher::new();
        engine
            .precompile_compatibility_hash()
            .hash(&mut engine_hash);
        let mut h = Sha256::new();
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(engine_hash.finish().to_le_bytes());
        for part in parts {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The compiled form of `bytes`, from the cache or freshly compiled
    /// (and then stored; a cache that cannot be written is skipped).
    pub fn get_or_compile(&self, engine: &Engine, bytes: &[u8]) -> Result<Vec<u8>> {
        self.get_or_make(engine, "", &[bytes], || compile(engine, bytes))
    }

    /// The compiled composition of a test with its library plugins
    /// (`inputs`: the test's file and each plugin's, in order), from the
    /// cache or made by `compose` (the composed component's bytes) and
    /// compiled. A hit skips the composition as well as the compilation.
    pub fn get_or_compose(
        &self,
        engine: &Engine,
        inputs: &[&[u8]],
        compose: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        self.get_or_make(engine, "composed-", inputs, || compile(engine, &compose()?))
    }

    /// The entry `prefix` + the key of `parts`, or `make`'s result, stored.
    fn get_or_make(
        &self,
        engine: &Engine,
        prefix: &str,
        parts: &[&[u8]],
        make: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let Some(dir) = &self.dir else {
            return make();
        };
        let path = dir.join(format!("{prefix}{}.cwasm", Self::key(engine, parts)));
        if let Ok(cached) = std::fs::read(&path) {
            return Ok(cached);
        }
        let compiled = make()?;
        let tmp = dir.join(format!(".{}.{}.tmp", std::process::id(), rand_suffix()));
        let stored = std::fs::create_dir_all(dir)
            .and_then(|_| std::fs::write(&tmp, &compiled))
            .and_then(|_| std::fs::rename(&tmp, &path));
        if stored.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        Ok(compiled)
    }
}

fn compile(engine: &Engine, bytes: &[u8]) -> Result<Vec<u8>> {
    engine
        .precompile_component(bytes)
        .anyhow()
        .context("the component does not validate")
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}
