//! The [`Test`] trait and the glue that exports a type implementing it as
//! the world's exports (`options`, `setup`, `functions`, `iteration`,
//! `teardown`).
//!
//! The engine instantiates the component once per VU, so the state built by
//! [`Test::new`] is per VU, like k6's init context. It lives in a
//! thread-local: a component instance is single-threaded.

use std::cell::RefCell;
use std::sync::Once;

use serde_json::Value;

use crate::{Result, vu};

/// A load test. Implement `new` and `iteration`; the rest have defaults.
pub trait Test: Sized + 'static {
    /// Build this VU's state. Runs once per VU instance, before its first
    /// iteration (and again if the instance is replaced after a trap).
    fn new() -> Self;

    /// Default options, as a k6 options object: `json!({"vus": 10,
    /// "duration": "30s"})`. Command-line flags override them.
    fn options() -> Value {
        Value::Null
    }

    /// Runs once before the VUs start. What it returns is available to
    /// every VU through [`vu::setup_data`].
    fn setup() -> Result<Option<Value>> {
        Ok(None)
    }

    /// One iteration of the default entry point.
    fn iteration(&mut self) -> Result<()>;

    /// Entry points besides `default` that scenarios may choose with
    /// `exec`. Dispatch them in [`Test::exec`].
    fn functions() -> &'static [&'static str] {
        &[]
    }

    /// Run the entry point `name`. The default runs [`Test::iteration`]
    /// for "default" and refuses anything else.
    fn exec(&mut self, name: &str) -> Result<()> {
        match name {
            "default" => self.iteration(),
            other => Err(format!("this test has no entry point named {other:?}").into()),
        }
    }

    /// Runs once after all VUs stop, with the setup data.
    fn teardown(_data: Option<Value>) -> Result<()> {
        Ok(())
    }
}

thread_local! {
    static STATE: RefCell<Option<Box<dyn std::any::Any>>> = const { RefCell::new(None) };
}

static PANIC_HOOK: Once = Once::new();

/// Report panics to the engine before the instance traps, so that the
/// summary shows the message rather than "unreachable executed".
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            vu::report_panic(&info.to_string());
        }));
    });
}

fn error_text(err: crate::Error) -> String {
    err.to_string()
}

pub fn options<T: Test>() -> String {
    match T::options() {
        Value::Null => String::new(),
        v => v.to_string(),
    }
}

pub fn setup<T: Test>() -> Result<Option<String>, String> {
    install_panic_hook();
    T::setup()
        .map(|data| data.map(|v| v.to_string()))
        .map_err(error_text)
}

/// The entry points in the order `functions()` gives them: `default`
/// first.
fn entries<T: Test>() -> impl Iterator<Item = &'static str> {
    std::iter::once("default").chain(T::functions().iter().copied().filter(|f| *f != "default"))
}

pub fn functions<T: Test>() -> Vec<String> {
    entries::<T>().map(str::to_owned).collect()
}

/// One iteration of the entry point `functions()[entry]`.
pub fn iteration<T: Test>(entry: u32) -> Result<(), String> {
    install_panic_hook();
    let Some(name) = usize::try_from(entry)
        .ok()
        .and_then(|i| entries::<T>().nth(i))
    else {
        return Err(format!(
            "this test has no entry point number {entry}; it exports {}",
            functions::<T>().join(", ")
        ));
    };
    STATE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let state = slot.get_or_insert_with(|| Box::new(T::new()));
        let test = state
            .downcast_mut::<T>()
            .expect("one test type per component");
        test.exec(name).map_err(error_text)
    })
}

pub fn teardown<T: Test>() -> Result<(), String> {
    install_panic_hook();
    T::teardown(vu::setup_data_value()).map_err(error_text)
}

/// Export a [`Test`] implementation as this component's test.
///
/// ```ignore
/// wload_sdk::export_test!(MyTest);
/// ```
#[macro_export]
macro_rules! export_test {
    ($test:ty) => {
        #[doc(hidden)]
        struct __WloadExport;

        impl $crate::__private::Guest for __WloadExport {
            fn options() -> ::std::string::String {
                $crate::__private::options::<$test>()
            }
            fn setup() -> ::std::result::Result<
                ::std::option::Option<::std::string::String>,
                ::std::string::String,
            > {
                $crate::__private::setup::<$test>()
            }
            fn functions() -> ::std::vec::Vec<::std::string::String> {
                $crate::__private::functions::<$test>()
            }
            fn iteration(entry: u32) -> ::std::result::Result<(), ::std::string::String> {
                $crate::__private::iteration::<$test>(entry)
            }
            fn teardown() -> ::std::result::Result<(), ::std::string::String> {
                $crate::__private::teardown::<$test>()
            }
        }

        $crate::bindings::__export_world!(__WloadExport with_types_in $crate::bindings);
    };
}
