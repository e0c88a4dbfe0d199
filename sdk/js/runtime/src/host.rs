//! The native module `wload:host`: the imports of `wload:test@0.2.0` as
//! plain JS functions for the SDK's host.js, which gives them k6's shapes.
//! Responses stay in the engine; JS holds their index in a table here.

use std::cell::RefCell;

use rquickjs::module::{Declarations, Exports, ModuleDef};
use rquickjs::{
    Array, ArrayBuffer, Ctx, Exception, FromJs, Function, IntoJs, Module, Object, Result,
    TypedArray, Value,
};

use crate::wload::test::{checks, http, metrics, vu};

/// Open responses; a JS handle is an index, freed slots are reused.
struct Table {
    slots: Vec<Option<http::Response>>,
    free: Vec<u32>,
}

thread_local! {
    static RESPONSES: RefCell<Table> = const { RefCell::new(Table { slots: Vec::new(), free: Vec::new() }) };
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

fn with_response<'js, T>(
    ctx: &Ctx<'js>,
    handle: u32,
    f: impl FnOnce(&http::Response) -> T,
) -> Result<T> {
    RESPONSES.with(|t| {
        let t = t.borrow();
        match t.slots.get(handle as usize).and_then(|s| s.as_ref()) {
            Some(r) => Ok(f(r)),
            None => Err(Exception::throw_message(
                ctx,
                "this response was already released",
            )),
        }
    })
}

fn release(handle: u32) {
    RESPONSES.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(slot) = t.slots.get_mut(handle as usize)
            && slot.take().is_some()
        {
            t.free.push(handle);
        }
    })
}

pub struct Host;

/// Every export of the module, with its function.
const NAMES: &[&str] = &[
    "loadMain",
    "send",
    "batch",
    "respHeaders",
    "respHeader",
    "respTimings",
    "respBody",
    "respText",
    "respUrl",
    "respProto",
    "respTlsVersion",
    "respRedirects",
    "respRelease",
    "cookies",
    "setCookie",
    "clearCookies",
    "check",
    "define",
    "add",
    "vuId",
    "vuIteration",
    "scenario",
    "sleep",
    "env",
    "setupData",
    "log",
    "reportPanic",
    "groupEnter",
    "groupExit",
    "pluginCall",
];

impl ModuleDef for Host {
    fn declare(decl: &Declarations) -> Result<()> {
        for name in NAMES {
            decl.declare(*name)?;
        }
        Ok(())
    }

    fn evaluate<'js>(ctx: &Ctx<'js>, exports: &Exports<'js>) -> Result<()> {
        let c = ctx.clone();
        exports.export("loadMain", Function::new(c.clone(), load_main)?)?;
        exports.export("send", Function::new(c.clone(), send)?)?;
        exports.export("batch", Function::new(c.clone(), batch)?)?;
        exports.export(
            "respHeaders",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                with_response(&ctx, h, |r| r.headers()).and_then(|f| fields_to_js(&ctx, f))
            })?,
        )?;
        exports.export(
            "respHeader",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32, name: String| {
                with_response(&ctx, h, |r| r.header(&name))
            })?,
        )?;
        exports.export(
            "respTimings",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                let t = with_response(&ctx, h, |r| r.timings())?;
                let o = Object::new(ctx)?;
                let ms = |ns: u64| ns as f64 / 1e6;
                o.set("blocked", ms(t.blocked))?;
                o.set("connecting", ms(t.connecting))?;
                o.set("tls_handshaking", ms(t.tls_handshaking))?;
                o.set("sending", ms(t.sending))?;
                o.set("waiting", ms(t.waiting))?;
                o.set("receiving", ms(t.receiving))?;
                o.set("duration", ms(t.duration))?;
                Ok::<_, rquickjs::Error>(o)
            })?,
        )?;
        exports.export(
            "respBody",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                let body = with_response(&ctx, h, |r| r.body())?;
                ArrayBuffer::new::<u8>(ctx, body)
            })?,
        )?;
        exports.export(
            "respText",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                with_response(&ctx, h, |r| r.text())
            })?,
        )?;
        exports.export(
            "respUrl",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                with_response(&ctx, h, |r| r.url())
            })?,
        )?;
        exports.export(
            "respProto",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                with_response(&ctx, h, |r| r.proto())
            })?,
        )?;
        exports.export(
            "respTlsVersion",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                with_response(&ctx, h, |r| r.tls_version())
            })?,
        )?;
        exports.export(
            "respRedirects",
            Function::new(c.clone(), |ctx: Ctx<'js>, h: u32| {
                with_response(&ctx, h, |r| r.redirects())
            })?,
        )?;
        exports.export("respRelease", Function::new(c.clone(), release)?)?;
        exports.export("pluginCall", Function::new(c.clone(), plugin_call)?)?;
        exports.export(
            "cookies",
            Function::new(c.clone(), |ctx: Ctx<'js>, url: String| {
                fields_to_js(&ctx, http::cookies(&url))
            })?,
        )?;
        exports.export(
            "setCookie",
            Function::new(c.clone(), |ctx: Ctx<'js>, url: String, cookie: String| {
                http::set_cookie(&url, &cookie).map_err(|e| Exception::throw_message(&ctx, &e))
            })?,
        )?;
        exports.export(
            "clearCookies",
            Function::new(c.clone(), http::clear_cookies)?,
        )?;
        exports.export(
            "check",
            Function::new(c.clone(), |name: String, ok: bool, tags: Value<'js>| {
                Ok::<_, rquickjs::Error>(checks::check(&name, ok, &fields(tags)?))
            })?,
        )?;
        exports.export(
            "define",
            Function::new(
                c.clone(),
                |ctx: Ctx<'js>, name: String, kind: String, is_time: bool| {
                    let kind = match kind.as_str() {
                        "counter" => metrics::MetricKind::Counter,
                        "gauge" => metrics::MetricKind::Gauge,
                        "rate" => metrics::MetricKind::Rate,
                        "trend" => metrics::MetricKind::Trend,
                        other => {
                            return Err(Exception::throw_message(
                                &ctx,
                                &format!("no metric kind {other:?}"),
                            ));
                        }
                    };
                    metrics::define(&name, kind, is_time)
                        .map_err(|e| Exception::throw_message(&ctx, &e))
                },
            )?,
        )?;
        exports.export(
            "add",
            Function::new(c.clone(), |id: u32, value: f64, tags: Value<'js>| {
                metrics::add(id, value, &fields(tags)?);
                Ok::<_, rquickjs::Error>(())
            })?,
        )?;
        exports.export("vuId", Function::new(c.clone(), vu::id)?)?;
        exports.export(
            "vuIteration",
            Function::new(c.clone(), || vu::iteration() as f64)?,
        )?;
        exports.export("scenario", Function::new(c.clone(), vu::scenario)?)?;
        exports.export(
            "sleep",
            Function::new(c.clone(), |seconds: f64| {
                let ns = (seconds.max(0.0) * 1e9).round();
                vu::sleep(if ns.is_finite() { ns as u64 } else { u64::MAX });
            })?,
        )?;
        exports.export(
            "env",
            Function::new(c.clone(), |key: String| vu::env(&key))?,
        )?;
        exports.export("setupData", Function::new(c.clone(), vu::setup_data)?)?;
        exports.export(
            "log",
            Function::new(c.clone(), |level: String, message: String| {
                let level = match level.as_str() {
                    "debug" => vu::LogLevel::Debug,
                    "warn" => vu::LogLevel::Warn,
                    "error" => vu::LogLevel::Error,
                    _ => vu::LogLevel::Info,
                };
                vu::log(level, &message);
            })?,
        )?;
        exports.export(
            "reportPanic",
            Function::new(c.clone(), |message: String| vu::report_panic(&message))?,
        )?;
        exports.export(
            "groupEnter",
            Function::new(c.clone(), |name: String| vu::group_enter(&name))?,
        )?;
        exports.export("groupExit", Function::new(c, vu::group_exit)?)?;
        Ok(())
    }
}

/// Evaluate the script (compiled in the snapshot) and give its namespace.
fn load_main<'js>(ctx: Ctx<'js>) -> Result<Object<'js>> {
    let name = crate::modules::main_name();
    Module::import(&ctx, name)?.finish::<Object>()
}

/// A library plugin's function (wit/js/plugins.wit), for the modules the
/// builder writes of its interfaces: `args` is the JSON array of the
/// arguments; the result is parsed, an `err` result thrown as an Error
/// whose `payload` is the error value (its message the value, when that
/// is a string), as componentize-js did.
fn plugin_call<'js>(
    ctx: Ctx<'js>,
    interface: String,
    function: String,
    args: String,
) -> Result<Value<'js>> {
    use crate::wload::js::plugins::{CallError, call};
    match call(&interface, &function, &args) {
        Ok(json) => ctx.json_parse(json),
        Err(CallError::Thrown(payload)) => {
            let value = ctx.json_parse(payload.clone())?;
            let text = match value.as_string() {
                Some(s) => s.to_string()?,
                None => payload,
            };
            let error = Exception::from_message(ctx.clone(), &format!("{function}: {text}"))?;
            error.as_object().set("payload", value)?;
            Err(ctx.throw(error.into_value()))
        }
        Err(CallError::Failed(message)) => Err(Exception::throw_message(&ctx, &message)),
    }
}

/// `[[name, value], ...]` (or null/undefined) as WIT fields.
fn fields(v: Value<'_>) -> Result<Vec<(String, String)>> {
    if v.is_undefined() || v.is_null() {
        return Ok(Vec::new());
    }
    let ctx = v.ctx().clone();
    let list = Array::from_js(&ctx, v)?;
    let mut out = Vec::with_capacity(list.len());
    for pair in list.iter::<Array>() {
        let pair = pair?;
        out.push((pair.get(0)?, pair.get(1)?));
    }
    Ok(out)
}

fn fields_to_js<'js>(ctx: &Ctx<'js>, fields: Vec<(String, String)>) -> Result<Array<'js>> {
    let out = Array::new(ctx.clone())?;
    for (i, (k, v)) in fields.into_iter().enumerate() {
        let pair = Array::new(ctx.clone())?;
        pair.set(0, k)?;
        pair.set(1, v)?;
        out.set(i, pair)?;
    }
    Ok(out)
}

/// A request body: a string (UTF-8), an ArrayBuffer or a Uint8Array.
fn body(v: Value<'_>) -> Result<Option<Vec<u8>>> {
    if v.is_undefined() || v.is_null() {
        return Ok(None);
    }
    if let Some(s) = v.as_string() {
        return Ok(Some(s.to_string()?.into_bytes()));
    }
    if let Some(buf) = ArrayBuffer::from_value(v.clone()) {
        return Ok(Some(buf.as_bytes().unwrap_or_default().to_vec()));
    }
    if let Ok(arr) = TypedArray::<u8>::from_value(v.clone()) {
        let bytes: &[u8] = arr.as_bytes().unwrap_or_default();
        return Ok(Some(bytes.to_vec()));
    }
    Err(Exception::throw_type(
        v.ctx(),
        "a request body must be a string, an ArrayBuffer or a Uint8Array",
    ))
}

fn request(o: &Object<'_>) -> Result<http::Request> {
    Ok(http::Request {
        method: o.get("method")?,
        url: o.get("url")?,
        headers: fields(o.get("headers")?)?,
        body: body(o.get("body")?)?,
        tags: fields(o.get("tags")?)?,
        name: o.get("name")?,
    })
}

fn options(v: Value<'_>) -> Result<http::RequestOptions> {
    let mut out = http::RequestOptions {
        timeout: None,
        max_redirects: None,
        expected_statuses: None,
        body_mode: None,
        max_body_size: None,
    };
    let Some(o) = v.as_object() else {
        return Ok(out);
    };
    let timeout: Option<f64> = o.get("timeoutNs")?;
    out.timeout = timeout.map(|t| t.max(0.0) as u64);
    out.max_redirects = o.get("maxRedirects")?;
    let expected: Option<Vec<Object>> = o.get("expectedStatuses")?;
    out.expected_statuses = match expected {
        None => None,
        Some(list) => Some(
            list.iter()
                .map(|r| {
                    Ok(http::StatusRange {
                        min: r.get("min")?,
                        max: r.get("max")?,
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        ),
    };
    let mode: Option<String> = o.get("bodyMode")?;
    out.body_mode = match mode.as_deref() {
        Some("discard") => Some(http::BodyMode::Discard),
        Some("keep") => Some(http::BodyMode::Keep),
        _ => None,
    };
    let max: Option<f64> = o.get("maxBodySize")?;
    out.max_body_size = max.map(|m| m.max(0.0) as u64);
    Ok(out)
}

/// k6's `error_code` of each kind (wit/test-0.2/test.wit says which).
fn code(kind: http::ErrorKind) -> u32 {
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

/// `{status, bodyLen, handle, error?: {code, message}}`.
fn sent_to_js<'js>(ctx: &Ctx<'js>, sent: http::Sent) -> Result<Value<'js>> {
    let o = Object::new(ctx.clone())?;
    o.set("status", sent.status)?;
    o.set("bodyLen", sent.body_len as f64)?;
    if let Some(e) = sent.error {
        let err = Object::new(ctx.clone())?;
        err.set("code", code(e.kind))?;
        err.set("message", e.message)?;
        o.set("error", err)?;
    }
    o.set("handle", keep(sent.response))?;
    o.into_js(ctx)
}

fn send<'js>(ctx: Ctx<'js>, req: Object<'js>, opts: Value<'js>) -> Result<Value<'js>> {
    let req = request(&req)?;
    let opts = options(opts)?;
    sent_to_js(&ctx, http::send(&req, &opts))
}

/// `batch([[req, opts], ...])`.
fn batch<'js>(ctx: Ctx<'js>, list: Vec<Array<'js>>) -> Result<Array<'js>> {
    let mut reqs = Vec::with_capacity(list.len());
    for pair in &list {
        let req: Object = pair.get(0)?;
        reqs.push((request(&req)?, options(pair.get(1)?)?));
    }
    let out = Array::new(ctx.clone())?;
    for (i, sent) in http::batch(&reqs).into_iter().enumerate() {
        out.set(i, sent_to_js(&ctx, sent)?)?;
    }
    Ok(out)
}
