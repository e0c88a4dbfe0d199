//! The rest-crud plugin of `plugins/`, written in Python with the Python
//! SDK's plugin support (`wload-py build --plugin`), run directly against
//! the target server's `/items` resource: every step of the cycle reaches
//! the server and is checked, parameters come from `-p`, and wrong ones
//! are refused with the plugin's docs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::languages::{lang_dir, must, python_with_componentize};
use crate::support::{Finished, plugin_info, repo_root, run_exporting, scratch, server, wload};

const LIMIT: Duration = Duration::from_secs(240);

/// `plugins/rest-crud/rest_crud.py` built into a component, once per test
/// process.
pub(crate) fn rest_crud() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let out = lang_dir().join("plugin-rest-crud.wasm");
        let mut cmd = Command::new(python_with_componentize());
        cmd.arg(repo_root().join("sdk/python/wload_build.py"))
            .args(["build", "--plugin"])
            .arg(repo_root().join("plugins/rest-crud/rest_crud.py"))
            .arg("-o")
            .arg(&out);
        must(
            cmd,
            "wload-py build --plugin plugins/rest-crud/rest_crud.py",
        );
        out
    })
}

fn crud(name: &str, args: &[&str]) -> Finished {
    let dir = scratch(name);
    let export = dir.join("summary.json");
    let mut cmd = wload();
    cmd.arg("run").arg(rest_crud()).args(args).arg("--quiet");
    run_exporting(cmd, &export, LIMIT)
}

/// Three iterations on two VUs: three objects created, each read twice,
/// updated and deleted (the store ends empty), a 404 after each delete,
/// every check passing, no request counted as failed (the 404 after the
/// delete is expected).
#[test]
fn rest_crud_runs_the_cycle_against_the_items_resource() {
    let server = server();
    let base = server.base_url();
    let run = crud(
        "rest-crud-cycle",
        &[
            "-p",
            &format!("base-url={base}"),
            "-p",
            r#"item={"name": "pen", "colour": "blue"}"#,
            "-p",
            r#"update={"colour": "red"}"#,
            "--vus",
            "2",
            "--iterations",
            "3",
        ],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(server.stats.items.counts(), (3, 6, 3, 3));
    assert!(server.stats.items.is_empty(), "an item was left behind");
    assert_eq!(server.stats.requests(), 3 * 6);
    for check in [
        "create answers 201 or 200",
        "created object has its id",
        "read answers 200",
        "read returns the created fields",
        "update answers 200",
        "read returns the updated fields",
        "delete answers 204 or 200",
        "read after delete answers 404",
    ] {
        assert_eq!(run.check(check), (3, 0), "{check}");
    }
    assert_eq!(run.metric("http_reqs", "count"), 18.0);
    assert_eq!(run.metric("http_req_failed", "passes"), 0.0);
}

/// `wload plugin info` shows the Python plugin's own description; wrong
/// parameters are refused before any request, with the docs of the one
/// at fault: a missing base URL, an item that is not an object (the
/// plugin's own check), a JSON parameter that does not parse (the
/// engine's).
#[test]
fn rest_crud_describes_itself_and_refuses_wrong_parameters() {
    let text = plugin_info(rest_crud(), &[], LIMIT);
    assert!(
        text.starts_with("rest-crud 0.1.0: Creates, reads"),
        "{text}"
    );
    // The Python SDK builds plugins against 0.2's world.
    assert!(
        text.lines()
            .any(|l| l == "world: wload:scenario/plugin@0.2.0"),
        "{text}"
    );
    for line in [
        "    base-url (text, required)",
        "    resource (text, default \"/items\")",
        "    item (json, default \"{\\\"name\\\": \\\"wload\\\", \\\"qty\\\": 1}\")",
        "    id-field (text, default \"id\")",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in:\n{text}"
        );
    }

    let server = server();
    let base = format!("base-url={}", server.base_url());
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &[],
            &[
                "parameter base-url is required",
                "    base-url (text, required)",
            ],
        ),
        (
            &["-p", &base, "-p", "item=[1, 2]"],
            &[
                "item: [1, 2] is not a JSON object",
                "    item (json, default",
            ],
        ),
        (
            &["-p", &base, "-p", "update={oops"],
            &["-p update:", "    update (json, default"],
        ),
    ];
    for (args, expected) in cases {
        let run = crud("rest-crud-refusals", args);
        assert_eq!(run.code(), Some(104), "{args:?}: stderr: {}", run.stderr());
        for e in expected {
            assert!(
                run.stderr().contains(e),
                "{args:?}: no {e:?} in: {}",
                run.stderr()
            );
        }
    }
    assert_eq!(server.stats.requests(), 0, "a refused run sent requests");
}
