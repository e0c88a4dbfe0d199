//! `wload plugin push` and `wload plugin pull`: a plugin's trip through an
//! OCI registry, and the lock file that pins what was pulled. The registry
//! protocol, the artifact layout and the lock file's format are the
//! wload-oci crate's; this module is the files and messages around them.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use wload_engine::plugin::compose::{self, Library};
use wload_oci::lock::{Entry, Lock};
use wload_oci::{Annotations, PluginRef, Registry};

/// The first 8 bytes of every component (a core module has version 1).
const COMPONENT_HEADER: [u8; 8] = *b"\0asm\x0d\0\x01\0";

fn registry(reference: &PluginRef, insecure: bool) -> Result<Registry> {
    Ok(Registry {
        insecure,
        credentials: wload_oci::auth::for_registry(&reference.registry)?,
    })
}

pub(super) async fn push(path: &Path, target: &str, insecure: bool) -> Result<u8> {
    let target = PluginRef::parse(target)?;
    let wasm = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !wasm.starts_with(&COMPONENT_HEADER) {
        bail!(
            "{} is not a WebAssembly component: push the plugin's .wasm (a .cwasm from \
             `wload compile` is for one machine's wload only)",
            path.display()
        );
    }
    let (kind, notes) = match library(path, &wasm)? {
        Some(notes) => ("library plugin", notes),
        None => {
            // Describing it checks that it is a scenario plugin (a test is
            // refused) and gives the manifest its name, version and summary.
            let description = super::describe_file(path).await?.description;
            let notes = Annotations {
                title: description.name,
                version: description.version,
                description: description.summary,
            };
            ("plugin", notes)
        }
    };
    let registry = registry(&target, insecure)?;
    let digest = wload_oci::push(&registry, &target, &wasm, &notes).await?;
    eprintln!(
        "pushed the {kind} {} {} ({} bytes) to {target}",
        notes.title,
        notes.version,
        wasm.len()
    );
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", target.with_digest(&digest));
    let _ = out.flush();
    Ok(0)
}

/// The manifest's annotations of a library plugin (one a test imports
/// from, `wload run TEST.wasm --with PLUGIN.wasm`), `None` for any other
/// component. A library has no description: it is named by the package
/// of its exports (`wload:session`), versioned by their version when
/// they share one, and summarised by the interfaces it exports.
pub(super) fn library(path: &Path, wasm: &[u8]) -> Result<Option<Annotations>> {
    let lib = Library {
        path: path.to_owned(),
        bytes: wasm.to_vec(),
    };
    if !wasm.starts_with(&COMPONENT_HEADER) {
        return Ok(None);
    }
    let Some(exports) = compose::library_exports(&lib)? else {
        return Ok(None);
    };
    let split = |name: &str| -> (String, String) {
        let (base, version) = name.split_once('@').unwrap_or((name, ""));
        let package = base.split_once('/').map_or(base, |(p, _)| p);
        (package.to_owned(), version.to_owned())
    };
    let parts: Vec<(String, String)> = exports.iter().map(|e| split(e)).collect();
    let shared = |pick: fn(&(String, String)) -> &String| {
        let first = pick(&parts[0]);
        if parts.iter().all(|p| pick(p) == first) {
            first.clone()
        } else {
            String::new()
        }
    };
    Ok(Some(Annotations {
        title: shared(|p| &p.0),
        version: shared(|p| &p.1),
        description: format!(
            "a wload library plugin exporting {}: a test importing it runs with --with PLUGIN.wasm",
            exports.join(", ")
        ),
    }))
}

pub(super) async fn pull(
    source: Option<&str>,
    output: Option<&Path>,
    lock_path: &Path,
    update: bool,
    insecure: bool,
) -> Result<u8> {
    let mut lock = Lock::read(lock_path)?;
    let Some(source) = source else {
        if output.is_some() || update {
            bail!(
                "-o and --update need a reference: `wload plugin pull oci://HOST/NAME:TAG -o FILE`"
            );
        }
        return restore(&lock, insecure).await;
    };
    let source = PluginRef::parse(source)?;
    let pin = match (update, lock.get(&source)) {
        (false, Some(entry)) => Some(entry.digest.clone()),
        _ => None,
    };
    let registry = registry(&source, insecure)?;
    let pulled = wload_oci::pull(&registry, &source, pin.as_deref()).await?;
    check_component(&source, &pulled.wasm)?;
    let file = match output {
        Some(o) if o.is_dir() => o.join(format!("{}.wasm", source.short_name())),
        Some(o) => o.to_owned(),
        None => lock.dir().join(format!("{}.wasm", source.short_name())),
    };
    write_atomically(&file, &pulled.wasm)?;
    let entry = Entry {
        source: source.to_string(),
        digest: pulled.digest.clone(),
        component: pulled.layer.clone(),
        file: relative_to(&file, lock.dir()),
    };
    let was = lock.get(&source).map(|e| e.digest.clone());
    lock.set(entry);
    lock.write()?;
    let pinned = match was {
        Some(old) if old == pulled.digest => "as pinned in",
        Some(_) => "re-pinned in",
        None => "pinned in",
    };
    eprintln!(
        "pulled {source} ({}, {} bytes) to {}, {pinned} {}",
        pulled.digest,
        pulled.wasm.len(),
        file.display(),
        lock.path.display()
    );
    Ok(0)
}

/// Every plugin of the lock file, at its pinned digest, to its file.
async fn restore(lock: &Lock, insecure: bool) -> Result<u8> {
    if lock.entries.is_empty() {
        bail!(
            "{} pins no plugins: pull one with `wload plugin pull oci://HOST/NAME:TAG`",
            lock.path.display()
        );
    }
    for entry in &lock.entries {
        let source = PluginRef::parse(&entry.source)?;
        let pinned = source.with_digest(&entry.digest);
        let registry = registry(&source, insecure)?;
        let pulled = wload_oci::pull(&registry, &pinned, None).await?;
        if pulled.layer != entry.component {
            bail!(
                "{pinned} holds the component {}, but {} pins {}: refusing it",
                pulled.layer,
                lock.path.display(),
                entry.component
            );
        }
        check_component(&source, &pulled.wasm)?;
        let file = lock.dir().join(&entry.file);
        write_atomically(&file, &pulled.wasm)?;
        eprintln!(
            "pulled {} ({}) to {}",
            entry.source,
            entry.digest,
            file.display()
        );
    }
    Ok(0)
}

fn check_component(source: &PluginRef, wasm: &[u8]) -> Result<()> {
    if wasm.starts_with(&COMPONENT_HEADER) {
        Ok(())
    } else {
        bail!("{source} is not a WebAssembly component (its layer does not start like one)")
    }
}

fn write_atomically(file: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".part");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, file).with_context(|| format!("cannot write {}", file.display()))
}

/// `file` as the lock file writes it: relative to the lock's folder when
/// it is inside it, else absolute.
fn relative_to(file: &Path, dir: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let (file, dir) = (abs(file), abs(dir));
    match file.strip_prefix(&dir) {
        Ok(rel) => rel.display().to_string(),
        Err(_) => file.display().to_string(),
    }
}
