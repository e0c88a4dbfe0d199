//! Checks: named pass/fail assertions that do not stop the iteration,
//! counted in the `checks` metric.

use crate::bindings::wload::test::checks as wit;

/// Record the outcome `ok` of the check `name` and return it.
///
/// ```ignore
/// check("status is 200", res.status() == 200);
/// ```
pub fn check(name: &str, ok: bool) -> bool {
    wit::check(name, ok, &[])
}

/// [`check`] with extra tags on the sample.
pub fn check_tagged(name: &str, ok: bool, tags: &[(&str, &str)]) -> bool {
    wit::check(name, ok, &crate::http::owned_fields(tags))
}
