//! Linking a test with the library plugins it imports (`wload run
//! test.wasm --with session.wasm`): the test imports an interface a
//! plugin exports (`wload:session/login@0.1.0`), and this module makes
//! one component of the two, in which the test's import is the plugin's
//! export and both import wload's own interfaces, as one test would.
//!
//! Composition happens here, before compilation, because wasmtime links
//! a component's imports to the host only: it cannot give one component
//! instance's exports to another at run time. The composed component is
//! then compiled and cached like any test (`component::Cache`, keyed by
//! the test, the plugins and the wload version), and every VU gets one
//! instance of it: its own test and its own plugin.
//!
//! Every import of the test that wload does not provide itself must be
//! exported by exactly one given plugin, at a semver-compatible version
//! and with a type the test's import accepts; anything else is refused
//! before any request, naming the test's import and the plugin's export.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use wac_graph::types::{ItemKind, Package, SubtypeChecker, are_semver_compatible};
use wac_graph::{CompositionGraph, EncodeOptions, PackageId};

use crate::component::one_line;

/// A library plugin given with `--with`: its file, and its bytes (a
/// component).
#[derive(Debug, Clone)]
pub struct Library {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

impl Library {
    pub fn read(path: &std::path::Path) -> Result<Library> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read the plugin {}", path.display()))?;
        Ok(Library {
            path: path.to_owned(),
            bytes,
        })
    }

    fn name(&self) -> String {
        self.path.display().to_string()
    }
}

/// The `with` of an options file, taken out of `options` (the rest are
/// run options): a plugin's path or a list of them, relative to the
/// options file's folder.
pub fn take_from_options(
    options: &mut serde_json::Map<String, serde_json::Value>,
    file: &Path,
) -> Result<Vec<PathBuf>, String> {
    use serde_json::Value;
    let folder = file.parent().unwrap_or(Path::new("."));
    let refuse = || {
        format!(
            "with in {} must be a plugin's path or a list of them, like [\"session.wasm\"]",
            file.display()
        )
    };
    match options.remove("with") {
        None => Ok(Vec::new()),
        Some(Value::String(p)) => Ok(vec![folder.join(p)]),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| v.as_str().map(|p| folder.join(p)).ok_or_else(refuse))
            .collect(),
        Some(_) => Err(refuse()),
    }
}

/// Whether wload's host provides the import `name` itself: its own
/// interfaces (a scenario plugin imports `wload:scenario/types`, whose
/// types its exports use) and WASI's. Everything else must come from a
/// plugin.
pub fn host_provides(name: &str) -> bool {
    ["wload:test/", "wload:scenario/", "wload:js/", "wasi:"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// `ns:pkg/iface` and the version of an interface name
/// (`wload:session/login@0.1.0`).
fn split_version(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((base, version)) => (base, Some(version)),
        None => (name, None),
    }
}

/// One component: `test` (a component's bytes, from the file
/// `test_name`) with each of its plugin imports given by the export of
/// one of `libraries`, and every import the host provides left to the
/// host. Refuses, naming both sides, a plugin export at an incompatible
/// version or of another type than the test imports, an import no
/// plugin exports, and a plugin the test does not use.
pub fn compose(test_name: &str, test: &[u8], libraries: &[Library]) -> Result<Vec<u8>> {
    let mut graph = CompositionGraph::new();
    let test_pkg = Package::from_bytes("wload:test-of-run", None, test.to_vec(), graph.types_mut())
        .with_context(|| format!("{test_name} is not a WebAssembly component"))?;
    let test_id = graph.register_package(test_pkg)?;
    let mut libs = Vec::with_capacity(libraries.len());
    for (i, lib) in libraries.iter().enumerate() {
        let pkg = Package::from_bytes(
            &format!("wload:plugin-{i}"),
            None,
            lib.bytes.clone(),
            graph.types_mut(),
        )
        .with_context(|| {
            format!(
                "the plugin {} is not a WebAssembly component (build it for wasm32-wasip2)",
                lib.name()
            )
        })?;
        let id = graph.register_package(pkg)?;
        refuse_foreign_imports(&graph, id, lib)?;
        libs.push(id);
    }

    let links = links(&graph, test_id, test_name, libraries, &libs)?;
    // A JavaScript test calls its plugins through the host (wload:js/
    // plugins), which finds their functions among the composition's
    // exports: every interface of every plugin is exported for it.
    let dynamic = graph.types()[graph[test_id].ty()]
        .imports
        .keys()
        .any(|name| name == crate::host::js_plugins::INTERFACE);
    for (i, lib) in libraries.iter().enumerate() {
        if !dynamic && !links.iter().any(|l| l.library == i) {
            bail!(
                "{test_name} imports nothing the plugin {} exports ({}); leave it out of --with",
                lib.name(),
                interface_exports(&graph, libs[i]).join(", ")
            );
        }
    }

    let test_instance = graph.instantiate(test_id);
    let mut instances = vec![None; libs.len()];
    for link in &links {
        let instance =
            *instances[link.library].get_or_insert_with(|| graph.instantiate(libs[link.library]));
        let export = graph.alias_instance_export(instance, &link.export)?;
        graph
            .set_instantiation_argument(test_instance, &link.import, export)
            .with_context(|| {
                format!(
                    "cannot give {test_name}'s import {} the export {} of {}",
                    link.import,
                    link.export,
                    libraries[link.library].name()
                )
            })?;
    }
    let exports: Vec<String> = graph.types()[graph[test_id].ty()]
        .exports
        .keys()
        .cloned()
        .collect();
    for name in &exports {
        let export = graph.alias_instance_export(test_instance, name)?;
        graph.export(export, name)?;
    }
    if dynamic {
        let mut exported: Vec<(String, usize)> = Vec::new();
        for (i, &lib) in libs.iter().enumerate() {
            for name in interface_exports(&graph, lib) {
                if let Some((_, other)) = exported.iter().find(|(n, _)| *n == name) {
                    bail!(
                        "both {} and {} export {name}; give only one of them with --with",
                        libraries[*other].name(),
                        libraries[i].name()
                    );
                }
                let instance = *instances[i].get_or_insert_with(|| graph.instantiate(lib));
                let export = graph.alias_instance_export(instance, &name)?;
                graph.export(export, &name)?;
                exported.push((name, i));
            }
        }
    }
    graph
        .encode(EncodeOptions {
            define_components: true,
            validate: true,
            processor: None,
        })
        .map_err(|e| anyhow!("{e:#}"))
        .with_context(|| {
            format!(
                "cannot link {test_name} with {}",
                libraries
                    .iter()
                    .map(Library::name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// The test's import `import` given by `export` of `libraries[library]`.
struct Link {
    import: String,
    export: String,
    library: usize,
}

/// Which plugin export gives each of the test's imports that the host
/// does not provide.
fn links(
    graph: &CompositionGraph,
    test: PackageId,
    test_name: &str,
    libraries: &[Library],
    libs: &[PackageId],
) -> Result<Vec<Link>> {
    let types = graph.types();
    let mut cache = HashSet::new();
    let mut links = Vec::new();
    for (import, import_ty) in &types[graph[test].ty()].imports {
        // Types a world `use`s are imports too, of the interfaces that
        // define them (also imported), not things to link.
        if host_provides(import) || matches!(import_ty, ItemKind::Type(_)) {
            continue;
        }
        let (base, version) = split_version(import);
        // Every plugin export of the same interface, at any version.
        let candidates: Vec<(usize, &String, _)> = libs
            .iter()
            .enumerate()
            .flat_map(|(i, &lib)| {
                types[graph[lib].ty()]
                    .exports
                    .iter()
                    .filter(move |(name, _)| split_version(name).0 == base)
                    .map(move |(name, ty)| (i, name, *ty))
            })
            .collect();
        if candidates.is_empty() {
            bail!("{}", missing(graph, test_name, import, libraries, libs));
        }
        let compatible: Vec<_> = candidates
            .iter()
            .filter(|(_, name, _)| are_semver_compatible(name, import))
            .collect();
        let Some(&&(library, export, export_ty)) = compatible
            .iter()
            .find(|(_, name, _)| *name == import)
            .or_else(|| compatible.first())
        else {
            let (library, export, _) = candidates[0];
            bail!(
                "version mismatch: {test_name} imports {import}, but the plugin {} exports {export}; \
                 {} (0.x versions must agree on their minor number)",
                libraries[library].name(),
                match version {
                    Some(_) => format!(
                        "rebuild the test against the plugin's WIT, or give the plugin built for {import}"
                    ),
                    None => "version the test's import as the plugin's export is".to_owned(),
                }
            );
        };
        if let [(a, x, _), (b, y, _), ..] = compatible.as_slice() {
            bail!(
                "{test_name} imports {import}, which both {} ({x}) and {} ({y}) export; give only one of them with --with",
                libraries[*a].name(),
                libraries[*b].name()
            );
        }
        SubtypeChecker::new(&mut cache)
            .is_subtype(export_ty, types, *import_ty, types)
            .map_err(|e| {
                anyhow!(
                    "interface mismatch: {test_name} imports {import}, but the export {export} of the plugin {} \
                     is not what the test expects ({}); rebuild the test against the plugin's WIT",
                    libraries[library].name(),
                    one_line(&format!("{e:#}"))
                )
            })?;
        links.push(Link {
            import: import.clone(),
            export: export.clone(),
            library,
        });
    }
    Ok(links)
}

/// Why nothing gives the import `import`, and what the plugins given do
/// export.
fn missing(
    graph: &CompositionGraph,
    test_name: &str,
    import: &str,
    libraries: &[Library],
    libs: &[PackageId],
) -> String {
    if libraries.is_empty() {
        return format!(
            "{test_name} imports {import}, which wload does not provide: a plugin must export it; \
             give that plugin with --with PLUGIN.wasm"
        );
    }
    let given: Vec<String> = libraries
        .iter()
        .zip(libs)
        .map(|(lib, &id)| {
            let exports = interface_exports(graph, id);
            format!(
                "{} exports {}",
                lib.name(),
                if exports.is_empty() {
                    "no interface".to_owned()
                } else {
                    exports.join(", ")
                }
            )
        })
        .collect();
    format!(
        "{test_name} imports {import}, which no plugin given with --with exports ({}); \
         give the plugin that exports it",
        given.join("; ")
    )
}

/// The interfaces a plugin exports (its functions, such as a scenario
/// plugin's `describe`, are not for tests to import).
fn interface_exports(graph: &CompositionGraph, lib: PackageId) -> Vec<String> {
    graph.types()[graph[lib].ty()]
        .exports
        .keys()
        .filter(|name| name.contains('/'))
        .cloned()
        .collect()
}

/// The interfaces the library plugin `library` exports
/// (`wload:session/login@0.1.0`), or `None` when it is no library plugin:
/// a component whose exports are all interfaces, at least one. Refused
/// as it would be at `--with`: a plugin importing what the host does not
/// provide. For what ships a library plugin (`wload plugin push`) before
/// any test is linked with it.
pub fn library_exports(library: &Library) -> Result<Option<Vec<String>>> {
    let (graph, id) = alone(library)?;
    let exports = &graph.types()[graph[id].ty()].exports;
    let interfaces = interface_exports(&graph, id);
    if interfaces.is_empty() || interfaces.len() != exports.len() {
        return Ok(None);
    }
    refuse_foreign_imports(&graph, id, library)?;
    Ok(Some(interfaces))
}

/// For a JavaScript test's build: the interface of `library` that gives
/// the test's import `import` (`wload:session/login@0.1.0`, or a
/// semver-compatible version of it), as the plugin names it, with its
/// functions' names (kebab-case, as in the WIT); `None` when the plugin
/// exports no such interface.
pub fn interface_functions(
    library: &Library,
    import: &str,
) -> Result<Option<(String, Vec<String>)>> {
    let (graph, id) = alone(library)?;
    let types = graph.types();
    let base = split_version(import).0;
    let found = types[graph[id].ty()].exports.iter().find(|(name, _)| {
        split_version(name).0 == base
            && (name.as_str() == import || are_semver_compatible(name, import))
    });
    let Some((name, ItemKind::Instance(interface))) = found else {
        return Ok(None);
    };
    let functions = types[*interface]
        .exports
        .iter()
        .filter(|(_, kind)| matches!(kind, ItemKind::Func(_)))
        .map(|(name, _)| name.clone())
        .collect();
    Ok(Some((name.clone(), functions)))
}

/// A graph of `library` alone, to read its types.
fn alone(library: &Library) -> Result<(CompositionGraph, PackageId)> {
    let mut graph = CompositionGraph::new();
    let pkg = Package::from_bytes(
        "wload:plugin-0",
        None,
        library.bytes.clone(),
        graph.types_mut(),
    )
    .with_context(|| format!("{} is not a WebAssembly component", library.name()))?;
    let id = graph.register_package(pkg)?;
    Ok((graph, id))
}

/// A plugin may import only what the host provides: plugins are not
/// linked to each other.
fn refuse_foreign_imports(
    graph: &CompositionGraph,
    lib: PackageId,
    library: &Library,
) -> Result<()> {
    match graph.types()[graph[lib].ty()]
        .imports
        .iter()
        .find(|(name, kind)| !host_provides(name) && !matches!(kind, ItemKind::Type(_)))
        .map(|(name, _)| name)
    {
        Some(name) => bail!(
            "the plugin {} imports {name}, which wload does not provide (a plugin may import \
             wload's interfaces and WASI 0.2; plugins are not linked to each other)",
            library.name()
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_files_with_is_relative_to_its_folder() {
        let mut options = serde_json::json!({"vus": 2, "with": "session.wasm"})
            .as_object()
            .cloned()
            .expect("an object");
        let with = take_from_options(&mut options, Path::new("conf/o.json")).expect("with");
        assert_eq!(with, vec![PathBuf::from("conf/session.wasm")]);
        assert!(!options.contains_key("with"));
        let mut options = serde_json::json!({"with": ["a.wasm", "b/c.wasm"]})
            .as_object()
            .cloned()
            .expect("an object");
        let with = take_from_options(&mut options, Path::new("o.json")).expect("with");
        assert_eq!(
            with,
            vec![PathBuf::from("a.wasm"), PathBuf::from("b/c.wasm")]
        );
        let mut options = serde_json::json!({"with": 3})
            .as_object()
            .cloned()
            .expect("an object");
        let err = take_from_options(&mut options, Path::new("o.json")).expect_err("a number");
        assert!(err.contains("must be a plugin's path"), "{err}");
    }

    #[test]
    fn versions_are_split_off_interface_names() {
        assert_eq!(
            split_version("wload:session/login@0.1.0"),
            ("wload:session/login", Some("0.1.0"))
        );
        assert_eq!(split_version("a:b/c"), ("a:b/c", None));
    }

    #[test]
    fn the_host_provides_wloads_interfaces_and_wasi_only() {
        assert!(host_provides("wload:test/http@0.1.0"));
        assert!(host_provides("wasi:io/streams@0.2.6"));
        assert!(host_provides("wload:scenario/types@0.1.0"));
        assert!(!host_provides("wload:session/login@0.1.0"));
        assert!(!host_provides("wload:testing/x@0.1.0"));
    }

    #[test]
    fn a_file_that_is_not_a_component_is_refused_naming_it() {
        let err = compose("t.wasm", b"\0asm\x01\0\0\0", &[]).expect_err("a core module");
        assert!(
            format!("{err:#}").contains("t.wasm is not a WebAssembly component"),
            "{err:#}"
        );
    }
}
