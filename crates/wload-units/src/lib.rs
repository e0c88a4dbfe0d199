//! The leaf of wload's crate graph: how durations, sizes and instants are read and how numbers,
//! durations and byte counts are shown, the same way in every layer (flags,
//! options, thresholds, executors' descriptions, summaries, progress).
//! It knows nothing of HTTP, wasm or metrics, so any crate may use it.

mod duration;
pub mod format;
mod instant;
mod size;

pub use duration::{MAX_DURATION, duration_value, parse_duration, saturating_secs};
pub use instant::{parse_instant, rfc3339};
pub use size::{parse_size, size_value};
