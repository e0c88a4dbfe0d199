//! Groups, as k6's `group`: everything inside carries the tag
//! `group=::outer::inner`, and each run of a group is timed in
//! `group_duration`. The summary lists checks under their group.

use crate::bindings::wload::test::vu as wit;

/// Run `f` inside the group `name` and return what it returns. Groups
/// nest; a name may not contain `::`.
///
/// ```ignore
/// group("login", || -> Result<()> {
///     let res = Request::post(url).json(&creds)?.send();
///     check("logged in", res.status() == 200);
///     Ok(())
/// })?;
/// ```
pub fn group<T>(name: &str, f: impl FnOnce() -> T) -> T {
    wit::group_enter(name);
    let out = f();
    wit::group_exit();
    out
}
