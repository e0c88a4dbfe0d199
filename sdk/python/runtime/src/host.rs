//! The host functions behind the native module `_wload` (c/mod/wload/
//! modwload.c): `_wload.call(op, *args)` lands in [`wl_host_call`], which
//! reads MicroPython values with the C helpers (`wlc_*`, none of which
//! raise), calls the import of `wload:test@0.2.0` and builds the answer.
//! Responses stay in the engine; Python holds their index in a table here.
//! The numbers of the ops are py/wload/_host.py's.

use std::cell::RefCell;
use std::ffi::c_void;

use crate::wload::test::{checks, http, metrics, vu};

/// A MicroPython object (`mp_obj_t`); null is `MP_OBJ_NULL`.
type Obj = *mut c_void;

unsafe extern "C" {
    fn wlc_none() -> Obj;
    fn wlc_bool(b: i32) -> Obj;
    fn wlc_uint(v: u64) -> Obj;
    fn wlc_float(v: f64) -> Obj;
    fn wlc_str(p: *const u8, n: usize) -> Obj;
    fn wlc_bytes(p: *const u8, n: usize) -> Obj;
    fn wlc_tuple(n: usize, items: *const Obj) -> Obj;
    fn wlc_list(n: usize, items: *const Obj) -> Obj;
    fn wlc_is_none(o: Obj) -> i32;
    fn wlc_truthy(o: Obj) -> i32;
    fn wlc_str_data(o: Obj, p: *mut *const u8, n: *mut usize) -> i32;
    fn wlc_num(o: Obj, out: *mut f64) -> i32;
    fn wlc_seq(o: Obj, n: *mut usize, items: *mut *const Obj) -> i32;
}

/// Why the last call failed, and the exception's type (1 ValueError, 2
/// TypeError, else RuntimeError).
struct Failure(String, i32);

thread_local! {
    static ERROR: RefCell<(String, i32)> = const { RefCell::new((String::new(), 0)) };
    static RESPONSES: RefCell<Table> = const { RefCell::new(Table { slots: Vec::new(), free: Vec::new() }) };
}

type R<T> = Result<T, Failure>;

fn type_error(what: &str) -> Failure {
    Failure(what.to_owned(), 2)
}

/// Open responses; a Python handle is an index, freed slots are reused.
struct Table {
    slots: Vec<Option<http::Response>>,
    free: Vec<u32>,
}

fn keep(response: http::Response) -> u32 {
    RESPONSES.with(|t| {
        let mut t = t.borrow_mut();
        match t.free.pop() {
            Some(i) => {
                t.slots[i as usize] = Some(response);
                i
            }
            None => {
                t.slots.push(Some(response));
                (t.slots.len() - 1) as u32
            }
        }
    })
}

fn with_response<T>(handle: Obj, f: impl FnOnce(&http::Response) -> T) -> R<T> {
    let h = num(handle)? as usize;
    RESPONSES.with(|t| match t.borrow().slots.get(h).and_then(|s| s.as_ref()) {
        Some(r) => Ok(f(r)),
        None => Err(Failure("this response was already released".to_owned(), 3)),
    })
}

fn release(handle: Obj) -> R<()> {
    let h = num(handle)? as u32;
    RESPONSES.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(slot) = t.slots.get_mut(h as usize)
            && slot.take().is_some()
        {
            t.free.push(h);
        }
    });
    Ok(())
}

// ---- values ----

fn none() -> Obj {
    unsafe { wlc_none() }
}

fn is_none(o: Obj) -> bool {
    unsafe { wlc_is_none(o) != 0 }
}

fn string(s: &str) -> Obj {
    unsafe { wlc_str(s.as_ptr(), s.len()) }
}

fn opt_string(s: Option<String>) -> Obj {
    s.map_or_else(none, |s| string(&s))
}

fn uint(v: u64) -> Obj {
    unsafe { wlc_uint(v) }
}

fn tuple(items: &[Obj]) -> Obj {
    unsafe { wlc_tuple(items.len(), items.as_ptr()) }
}

fn list(items: &[Obj]) -> Obj {
    unsafe { wlc_list(items.len(), items.as_ptr()) }
}

fn bytes_of<'a>(o: Obj) -> Option<&'a [u8]> {
    let mut p: *const u8 = std::ptr::null();
    let mut n = 0;
    // SAFETY: the object's bytes live while Python holds it, which is
    // the whole call.
    (unsafe { wlc_str_data(o, &mut p, &mut n) } != 0)
        .then(|| unsafe { std::slice::from_raw_parts(p, n) })
}

fn text(o: Obj) -> R<String> {
    bytes_of(o)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| type_error("expected a str"))
}

fn opt_text(o: Obj) -> R<Option<String>> {
    if is_none(o) {
        Ok(None)
    } else {
        text(o).map(Some)
    }
}

fn num(o: Obj) -> R<f64> {
    let mut v = 0.0;
    if unsafe { wlc_num(o, &mut v) } != 0 {
        Ok(v)
    } else {
        Err(type_error("expected a number"))
    }
}

fn opt_num(o: Obj) -> R<Option<f64>> {
    if is_none(o) {
        Ok(None)
    } else {
        num(o).map(Some)
    }
}

fn seq<'a>(o: Obj) -> R<&'a [Obj]> {
    let mut n = 0;
    let mut items: *const Obj = std::ptr::null();
    if unsafe { wlc_seq(o, &mut n, &mut items) } == 0 {
        return Err(type_error("expected a list or a tuple"));
    }
    // SAFETY: the sequence's items while Python holds it (the call).
    Ok(if n == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(items, n) }
    })
}

/// `[(name, value), ...]` as WIT fields.
fn fields(o: Obj) -> R<Vec<(String, String)>> {
    if is_none(o) {
        return Ok(Vec::new());
    }
    seq(o)?
        .iter()
        .map(|pair| {
            let kv = seq(*pair)?;
            match kv {
                [k, v] => Ok((text(*k)?, text(*v)?)),
                _ => Err(type_error("expected (name, value) pairs")),
            }
        })
        .collect()
}

fn fields_to_py(fields: Vec<(String, String)>) -> Obj {
    let items: Vec<Obj> = fields
        .iter()
        .map(|(k, v)| tuple(&[string(k), string(v)]))
        .collect();
    list(&items)
}

// ---- http ----

/// py/wload/http.py's `Request._wire()`: (method, url, headers, body,
/// tags, name, timeout_ns, max_redirects, expected, body_mode, max_body).
fn request(o: Obj) -> R<(http::Request, http::RequestOptions)> {
    let [
        method,
        url,
        headers,
        body,
        tags,
        name,
        timeout,
        redirects,
        expected,
        mode,
        max_body,
    ] = seq(o)?
    else {
        return Err(type_error("a request is an 11-tuple (wload.http)"));
    };
    let body = if is_none(*body) {
        None
    } else {
        Some(
            bytes_of(*body)
                .ok_or_else(|| type_error("a request body is str or bytes"))?
                .to_vec(),
        )
    };
    let req = http::Request {
        method: text(*method)?,
        url: text(*url)?,
        headers: fields(*headers)?,
        body,
        tags: fields(*tags)?,
        name: opt_text(*name)?,
    };
    let expected_statuses = if is_none(*expected) {
        None
    } else {
        Some(
            seq(*expected)?
                .iter()
                .map(|r| match seq(*r)? {
                    [lo, hi] => Ok(http::StatusRange {
                        min: num(*lo)? as u16,
                        max: num(*hi)? as u16,
                    }),
                    _ => Err(type_error("expected (min, max) status ranges")),
                })
                .collect::<R<Vec<_>>>()?,
        )
    };
    let body_mode = match opt_num(*mode)? {
        None => None,
        Some(0.0) => Some(http::BodyMode::Keep),
        Some(_) => Some(http::BodyMode::Discard),
    };
    let opts = http::RequestOptions {
        timeout: opt_num(*timeout)?.map(|t| t.max(0.0) as u64),
        max_redirects: opt_num(*redirects)?.map(|r| r.max(0.0) as u32),
        expected_statuses,
        body_mode,
        max_body_size: opt_num(*max_body)?.map(|m| m.max(0.0) as u64),
    };
    Ok((req, opts))
}

/// k6's `error_code` of each kind (wit/test-0.2/test.wit says which).
fn code(kind: http::ErrorKind) -> u64 {
    use http::ErrorKind as K;
    match kind {
        K::Generic => 1000,
        K::InvalidUrl => 1020,
        K::Timeout => 1050,
        K::BodyTooLarge => 1060,
        K::Interrupted => 1070,
        K::Dns => 1100,
        K::NoIp => 1101,
        K::BlockedIp => 1110,
        K::BlockedHostname => 1111,
        K::Tcp => 1200,
        K::BrokenPipe => 1201,
        K::Dial => 1210,
        K::DialTimeout => 1211,
        K::ConnectionRefused => 1212,
        K::ConnectionReset => 1220,
        K::Tls => 1300,
        K::TlsUnknownAuthority => 1310,
        K::TlsHostname => 1311,
        K::Http2 => 1600,
        K::Http2Goaway => 1610,
        K::Http2Stream => 1630,
        K::Http2Connection => 1650,
        K::Decompression => 1701,
        K::DecodedTooLarge => 1702,
    }
}

/// `(status, error_code or 0, message or None, body_len, handle)`.
fn sent(s: http::Sent) -> Obj {
    let (c, message) = match s.error {
        Some(e) => (code(e.kind), string(&e.message)),
        None => (0, none()),
    };
    let handle = keep(s.response);
    tuple(&[
        uint(u64::from(s.status)),
        uint(c),
        message,
        uint(s.body_len),
        uint(u64::from(handle)),
    ])
}

fn ms(ns: u64) -> Obj {
    unsafe { wlc_float(ns as f64 / 1e6) }
}

fn call(op: i32, args: &[Obj]) -> R<Obj> {
    let arg = |i: usize| {
        args.get(i)
            .copied()
            .ok_or_else(|| type_error("a host function got too few arguments"))
    };
    Ok(match op {
        0 => {
            let (req, opts) = request(arg(0)?)?;
            sent(http::send(&req, &opts))
        }
        1 => {
            let reqs = seq(arg(0)?)?
                .iter()
                .map(|r| request(*r))
                .collect::<R<Vec<_>>>()?;
            let out: Vec<Obj> = http::batch(&reqs).into_iter().map(sent).collect();
            list(&out)
        }
        2 => fields_to_py(with_response(arg(0)?, |r| r.headers())?),
        3 => {
            let name = text(arg(1)?)?;
            opt_string(with_response(arg(0)?, |r| r.header(&name))?)
        }
        4 => {
            let t = with_response(arg(0)?, |r| r.timings())?;
            tuple(&[
                ms(t.blocked),
                ms(t.connecting),
                ms(t.tls_handshaking),
                ms(t.sending),
                ms(t.waiting),
                ms(t.receiving),
                ms(t.duration),
            ])
        }
        5 => {
            let body = with_response(arg(0)?, |r| r.body())?;
            unsafe { wlc_bytes(body.as_ptr(), body.len()) }
        }
        6 => string(&with_response(arg(0)?, |r| r.text())?),
        7 => string(&with_response(arg(0)?, |r| r.url())?),
        8 => string(&with_response(arg(0)?, |r| r.proto())?),
        9 => string(&with_response(arg(0)?, |r| r.tls_version())?),
        10 => uint(u64::from(with_response(arg(0)?, |r| r.redirects())?)),
        11 => {
            release(arg(0)?)?;
            none()
        }
        12 => fields_to_py(http::cookies(&text(arg(0)?)?)),
        13 => {
            http::set_cookie(&text(arg(0)?)?, &text(arg(1)?)?).map_err(|e| Failure(e, 1))?;
            none()
        }
        14 => {
            http::clear_cookies();
            none()
        }
        15 => {
            let ok = unsafe { wlc_truthy(arg(1)?) } != 0;
            let r = checks::check(&text(arg(0)?)?, ok, &fields(arg(2)?)?);
            unsafe { wlc_bool(i32::from(r)) }
        }
        16 => {
            let kind = match num(arg(1)?)? as u32 {
                0 => metrics::MetricKind::Counter,
                1 => metrics::MetricKind::Gauge,
                2 => metrics::MetricKind::Rate,
                _ => metrics::MetricKind::Trend,
            };
            let is_time = unsafe { wlc_truthy(arg(2)?) } != 0;
            let id = metrics::define(&text(arg(0)?)?, kind, is_time).map_err(|e| Failure(e, 1))?;
            uint(u64::from(id))
        }
        17 => {
            metrics::add(num(arg(0)?)? as u32, num(arg(1)?)?, &fields(arg(2)?)?);
            none()
        }
        18 => uint(u64::from(vu::id())),
        19 => uint(vu::iteration()),
        20 => string(&vu::scenario()),
        21 => {
            let ns = num(arg(0)?)?.max(0.0).round();
            vu::sleep(if ns.is_finite() { ns as u64 } else { u64::MAX });
            none()
        }
        22 => opt_string(vu::env(&text(arg(0)?)?)),
        23 => opt_string(vu::setup_data()),
        24 => {
            let level = match num(arg(0)?)? as u32 {
                0 => vu::LogLevel::Debug,
                2 => vu::LogLevel::Warn,
                3 => vu::LogLevel::Error,
                _ => vu::LogLevel::Info,
            };
            vu::log(level, &text(arg(1)?)?);
            none()
        }
        25 => {
            vu::report_panic(&text(arg(0)?)?);
            none()
        }
        26 => {
            vu::group_enter(&text(arg(0)?)?);
            none()
        }
        27 => {
            vu::group_exit();
            none()
        }
        _ => return Err(type_error("no such host function")),
    })
}

/// For modwload.c: the op's answer, or null with the reason kept for
/// [`wl_host_error`].
///
/// # Safety
/// `args` points at `n` MicroPython objects.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wl_host_call(op: i32, n: usize, args: *const Obj) -> Obj {
    // SAFETY: MicroPython passes its `n` arguments.
    let args = if n == 0 {
        &[][..]
    } else {
        unsafe { std::slice::from_raw_parts(args, n) }
    };
    match call(op, args) {
        Ok(o) => o,
        Err(Failure(message, kind)) => {
            ERROR.with(|e| *e.borrow_mut() = (message, kind));
            std::ptr::null_mut()
        }
    }
}

/// For modwload.c: the reason of the last failure (valid until the next).
///
/// # Safety
/// The three pointers are writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn wl_host_error(p: *mut *const u8, n: *mut usize, kind: *mut i32) {
    ERROR.with(|e| {
        let e = e.borrow();
        // SAFETY: the caller's out-pointers; the text lives in ERROR.
        unsafe {
            *p = e.0.as_ptr();
            *n = e.0.len();
            *kind = e.1;
        }
    })
}
