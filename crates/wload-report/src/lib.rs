//! wload's pages, both drawn by one script from one model
//! ([`model`]): the live dashboard of a running test (`--dashboard`,
//! [`dashboard`]: server-sent events on 127.0.0.1) and the HTML report,
//! one self-contained file (`--report FILE.html` after a run, and
//! `wload report` over saved outputs, [`inputs`]). The run feeds them
//! through an interval sink ([`collect`]) that its outputs hold beside
//! the `--out` files.

pub mod collect;
pub mod dashboard;
pub mod html;
pub mod inputs;
pub mod model;

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

pub use collect::{Collector, Timelines};
pub use dashboard::Dashboard;

/// Write the report of `model` to `path`.
pub fn write_report(path: &Path, model: &Value) -> Result<()> {
    std::fs::write(path, html::page(model))
        .with_context(|| format!("cannot write the report {}", path.display()))
}
