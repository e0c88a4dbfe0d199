//! `wload:js/plugins` (wit/js/plugins.wit): how a JavaScript test calls a
//! library plugin.
//!
//! The QuickJS runtime is one precompiled module, so it cannot import the
//! interfaces of every plugin a script may use; it imports this one
//! function instead, with the plugin's interface and function named and
//! the arguments as JSON. The plugin is linked into the same component
//! as the test ([`crate::plugin::compose`] exports its interfaces beside
//! the test's entry points), so this host function finds the function
//! among the VU's own instance's exports and calls it there, converting
//! by the function's own types: the plugin runs in the VU's store with
//! its HTTP client, as it would linked to a test of any other language.
//!
//! The JSON shapes are componentize-js's (what the JS SDK's users had):
//! records are objects with camelCase fields, tuples and lists arrays,
//! variants and nested results `{tag, val}`, enums strings, options the
//! value or null, flags objects of booleans; a function's own `result`
//! is its value, or an error thrown with the `err` value as payload.

use anyhow::Result;
use serde_json::{Map, Number, Value};
use wasmtime::StoreContextMut;
use wasmtime::component::types::Type;
use wasmtime::component::{ComponentType, Lift, Linker, Lower, Val};

use super::VuState;

/// The interface, as the runtime's component imports it.
pub const INTERFACE: &str = "wload:js/plugins@0.1.0";

/// `call-error` of wit/js/plugins.wit.
#[derive(ComponentType, Lift, Lower, Debug, Clone, PartialEq)]
#[component(variant)]
pub enum CallError {
    #[component(name = "thrown")]
    Thrown(String),
    #[component(name = "failed")]
    Failed(String),
}

pub fn add_to_linker(linker: &mut Linker<VuState>) -> Result<()> {
    linker.instance(INTERFACE)?.func_wrap_async(
        "call",
        |store: StoreContextMut<'_, VuState>,
         (interface, function, args): (String, String, String)| {
            Box::new(async move { Ok((call(store, &interface, &function, &args).await?,)) })
        },
    )?;
    Ok(())
}

/// Call `interface`'s `function` in the VU's instance. `Err` is a trap of
/// the plugin, which ends the iteration as the test's own trap would.
async fn call(
    mut store: StoreContextMut<'_, VuState>,
    interface: &str,
    function: &str,
    args: &str,
) -> wasmtime::Result<Result<String, CallError>> {
    let failed = |text: String| Ok(Err(CallError::Failed(text)));
    let Some(instance) = store.data().instance else {
        return failed("no instance to call a plugin in (a call before the VU started)".into());
    };
    let Some(func) = instance
        .get_export_index(&mut store, None, interface)
        .and_then(|i| instance.get_export_index(&mut store, Some(&i), function))
        .and_then(|f| instance.get_func(&mut store, f))
    else {
        return failed(format!(
            "no plugin given with --with exports {interface} with a function {function}; \
             give the plugin the script was built with"
        ));
    };
    let ty = func.ty(&store);
    let args: Value = match serde_json::from_str(args) {
        Ok(v) => v,
        Err(e) => return failed(format!("{function}: arguments are not JSON: {e}")),
    };
    let given = match args {
        Value::Array(list) => list,
        other => vec![other],
    };
    let mut params = Vec::with_capacity(ty.params().len());
    for (i, (name, param)) in ty.params().enumerate() {
        let value = given.get(i).unwrap_or(&Value::Null);
        match to_val(&param, value) {
            Ok(v) => params.push(v),
            Err(e) => return failed(format!("{function}: argument {} ({name}): {e}", i + 1)),
        }
    }
    if given.len() > params.len() {
        return failed(format!(
            "{function} takes {} arguments, {} given",
            params.len(),
            given.len()
        ));
    }
    let result_types: Vec<Type> = ty.results().collect();
    let mut results = vec![Val::Bool(false); result_types.len()];
    func.call_async(&mut store, &params, &mut results).await?;
    Ok(match (results.first(), result_types.first()) {
        (None, _) | (_, None) => Ok("null".to_owned()),
        // A function's own result: its value, or its error thrown.
        (Some(Val::Result(r)), Some(Type::Result(rt))) => match r {
            Ok(v) => Ok(json_of(v.as_deref(), rt.ok().as_ref()).to_string()),
            Err(e) => Err(CallError::Thrown(
                json_of(e.as_deref(), rt.err().as_ref()).to_string(),
            )),
        },
        (Some(v), Some(t)) => Ok(to_json(v, t).to_string()),
    })
}

fn json_of(v: Option<&Val>, ty: Option<&Type>) -> Value {
    match (v, ty) {
        (Some(v), Some(t)) => to_json(v, t),
        _ => Value::Null,
    }
}

/// `auth-header` → `authHeader`, as componentize-js names fields and
/// functions.
pub fn camel_case(kebab: &str) -> String {
    let mut out = String::with_capacity(kebab.len());
    for (i, part) in kebab.split('-').enumerate() {
        let mut chars = part.chars();
        match chars.next() {
            Some(first) if i > 0 => {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
            _ => out.push_str(part),
        }
    }
    out
}

/// A JSON value as a value of `ty`; what did not fit, as text.
fn to_val(ty: &Type, v: &Value) -> Result<Val, String> {
    fn int<T: TryFrom<i64> + TryFrom<u64>>(v: &Value, name: &str) -> Result<T, String> {
        let out_of_range = || format!("{v} is no {name}");
        if let Some(i) = v.as_i64() {
            return T::try_from(i).map_err(|_| out_of_range());
        }
        if let Some(u) = v.as_u64() {
            return T::try_from(u).map_err(|_| out_of_range());
        }
        match v.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                T::try_from(f as i64).map_err(|_| out_of_range())
            }
            _ => Err(format!("expected an integer ({name}), got {v}")),
        }
    }
    let expected = |what: &str| format!("expected {what}, got {v}");
    Ok(match ty {
        Type::Bool => Val::Bool(v.as_bool().ok_or_else(|| expected("a boolean"))?),
        Type::S8 => Val::S8(int(v, "s8")?),
        Type::U8 => Val::U8(int(v, "u8")?),
        Type::S16 => Val::S16(int(v, "s16")?),
        Type::U16 => Val::U16(int(v, "u16")?),
        Type::S32 => Val::S32(int(v, "s32")?),
        Type::U32 => Val::U32(int(v, "u32")?),
        Type::S64 => Val::S64(int(v, "s64")?),
        Type::U64 => Val::U64(int(v, "u64")?),
        Type::Float32 => Val::Float32(v.as_f64().ok_or_else(|| expected("a number"))? as f32),
        Type::Float64 => Val::Float64(v.as_f64().ok_or_else(|| expected("a number"))?),
        Type::Char => {
            let s = v
                .as_str()
                .ok_or_else(|| expected("a one-character string"))?;
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(expected("a one-character string")),
            }
        }
        Type::String => Val::String(v.as_str().ok_or_else(|| expected("a string"))?.to_owned()),
        Type::List(list) => {
            let items = v.as_array().ok_or_else(|| expected("an array"))?;
            let item = list.ty();
            Val::List(
                items
                    .iter()
                    .map(|x| to_val(&item, x))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::FixedLengthList(list) => {
            let items = v.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != list.len() as usize {
                return Err(expected(&format!("an array of {}", list.len())));
            }
            let item = list.ty();
            Val::FixedLengthList(
                items
                    .iter()
                    .map(|x| to_val(&item, x))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Map(map) => {
            let (key, value) = (map.key(), map.value());
            let pairs = match v {
                Value::Object(o) => o
                    .iter()
                    .map(|(k, x)| {
                        Ok((to_val(&key, &Value::String(k.clone()))?, to_val(&value, x)?))
                    })
                    .collect::<Result<_, String>>()?,
                Value::Array(list) => list
                    .iter()
                    .map(|pair| match pair.as_array().map(Vec::as_slice) {
                        Some([k, x]) => Ok((to_val(&key, k)?, to_val(&value, x)?)),
                        _ => Err(expected("[key, value] pairs")),
                    })
                    .collect::<Result<_, String>>()?,
                _ => return Err(expected("an object or [key, value] pairs")),
            };
            Val::Map(pairs)
        }
        Type::Record(record) => {
            let object = v.as_object().ok_or_else(|| expected("an object"))?;
            let mut fields = Vec::new();
            for field in record.fields() {
                let value = object
                    .get(&camel_case(field.name))
                    .or_else(|| object.get(field.name));
                let value = match (value, &field.ty) {
                    (Some(x), t) => to_val(t, x).map_err(|e| format!("{}: {e}", field.name))?,
                    (None, Type::Option(_)) => Val::Option(None),
                    (None, _) => {
                        return Err(format!("the field {} is missing", camel_case(field.name)));
                    }
                };
                fields.push((field.name.to_owned(), value));
            }
            Val::Record(fields)
        }
        Type::Tuple(tuple) => {
            let items = v.as_array().ok_or_else(|| expected("an array"))?;
            if items.len() != tuple.types().len() {
                return Err(expected(&format!("an array of {}", tuple.types().len())));
            }
            Val::Tuple(
                tuple
                    .types()
                    .zip(items)
                    .map(|(t, x)| to_val(&t, x))
                    .collect::<Result<_, _>>()?,
            )
        }
        Type::Variant(variant) => {
            let (tag, val) = tagged(v)?;
            let case = variant
                .cases()
                .find(|c| c.name == tag)
                .ok_or_else(|| format!("{tag:?} is not a case of this variant"))?;
            let payload = match case.ty {
                Some(t) => Some(Box::new(to_val(&t, val)?)),
                None => None,
            };
            Val::Variant(case.name.to_owned(), payload)
        }
        Type::Enum(e) => {
            let name = v.as_str().ok_or_else(|| expected("a string"))?;
            match e.names().find(|n| *n == name) {
                Some(n) => Val::Enum(n.to_owned()),
                None => {
                    let names: Vec<&str> = e.names().collect();
                    return Err(format!("{name:?} is none of {}", names.join(", ")));
                }
            }
        }
        Type::Option(option) => match v {
            Value::Null => Val::Option(None),
            x => Val::Option(Some(Box::new(to_val(&option.ty(), x)?))),
        },
        Type::Result(result) => {
            let (tag, val) = tagged(v)?;
            let side = |t: Option<Type>| -> Result<Option<Box<Val>>, String> {
                t.map(|t| to_val(&t, val).map(Box::new)).transpose()
            };
            match tag {
                "ok" => Val::Result(Ok(side(result.ok())?)),
                "err" => Val::Result(Err(side(result.err())?)),
                _ => return Err(expected("{tag: 'ok' or 'err', val}")),
            }
        }
        Type::Flags(flags) => {
            let object = v
                .as_object()
                .ok_or_else(|| expected("an object of booleans"))?;
            let set = flags
                .names()
                .filter(|n| {
                    object
                        .get(&camel_case(n))
                        .or_else(|| object.get(*n))
                        .and_then(Value::as_bool)
                        .unwrap_or(false)
                })
                .map(str::to_owned)
                .collect();
            Val::Flags(set)
        }
        Type::Own(_) | Type::Borrow(_) | Type::Future(_) | Type::Stream(_) | Type::ErrorContext => {
            return Err(
                "resources, futures and streams cannot be passed from JavaScript".to_owned(),
            );
        }
    })
}

/// `{tag, val}`'s parts (`val` null when absent).
fn tagged(v: &Value) -> Result<(&str, &Value), String> {
    let object = v
        .as_object()
        .ok_or_else(|| format!("expected {{tag, val}}, got {v}"))?;
    let tag = object
        .get("tag")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("expected {{tag, val}}, got {v}"))?;
    Ok((tag, object.get("val").unwrap_or(&Value::Null)))
}

/// A value of `ty` as JSON.
fn to_json(v: &Val, ty: &Type) -> Value {
    let number = |f: f64| Number::from_f64(f).map_or(Value::Null, Value::Number);
    match (v, ty) {
        (Val::Bool(b), _) => Value::Bool(*b),
        (Val::S8(x), _) => Value::from(*x),
        (Val::U8(x), _) => Value::from(*x),
        (Val::S16(x), _) => Value::from(*x),
        (Val::U16(x), _) => Value::from(*x),
        (Val::S32(x), _) => Value::from(*x),
        (Val::U32(x), _) => Value::from(*x),
        (Val::S64(x), _) => Value::from(*x),
        (Val::U64(x), _) => Value::from(*x),
        (Val::Float32(x), _) => number(f64::from(*x)),
        (Val::Float64(x), _) => number(*x),
        (Val::Char(c), _) => Value::String(c.to_string()),
        (Val::String(s), _) => Value::String(s.clone()),
        (Val::List(items), Type::List(l)) => {
            let t = l.ty();
            Value::Array(items.iter().map(|x| to_json(x, &t)).collect())
        }
        (Val::FixedLengthList(items), Type::FixedLengthList(l)) => {
            let t = l.ty();
            Value::Array(items.iter().map(|x| to_json(x, &t)).collect())
        }
        (Val::Map(pairs), Type::Map(m)) => {
            let (kt, vt) = (m.key(), m.value());
            Value::Array(
                pairs
                    .iter()
                    .map(|(k, x)| Value::Array(vec![to_json(k, &kt), to_json(x, &vt)]))
                    .collect(),
            )
        }
        (Val::Record(fields), Type::Record(r)) => {
            let mut out = Map::new();
            for ((name, x), field) in fields.iter().zip(r.fields()) {
                out.insert(camel_case(name), to_json(x, &field.ty));
            }
            Value::Object(out)
        }
        (Val::Tuple(items), Type::Tuple(t)) => Value::Array(
            items
                .iter()
                .zip(t.types())
                .map(|(x, t)| to_json(x, &t))
                .collect(),
        ),
        (Val::Variant(name, payload), Type::Variant(variant)) => {
            let case_ty = variant.cases().find(|c| c.name == name).and_then(|c| c.ty);
            tagged_json(name, payload.as_deref(), case_ty.as_ref())
        }
        (Val::Enum(name), _) => Value::String(name.clone()),
        (Val::Option(Some(x)), Type::Option(o)) => to_json(x, &o.ty()),
        (Val::Option(None), _) => Value::Null,
        (Val::Result(r), Type::Result(rt)) => match r {
            Ok(x) => tagged_json("ok", x.as_deref(), rt.ok().as_ref()),
            Err(x) => tagged_json("err", x.as_deref(), rt.err().as_ref()),
        },
        (Val::Flags(set), Type::Flags(f)) => Value::Object(
            f.names()
                .map(|n| (camel_case(n), Value::Bool(set.iter().any(|s| s == n))))
                .collect(),
        ),
        // Resources and the like never reach here: a plugin's function
        // returning one is refused when its value is converted above.
        _ => Value::Null,
    }
}

fn tagged_json(tag: &str, payload: Option<&Val>, ty: Option<&Type>) -> Value {
    let mut out = Map::new();
    out.insert("tag".to_owned(), Value::String(tag.to_owned()));
    if payload.is_some() {
        out.insert("val".to_owned(), json_of(payload, ty));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_camel_cased_as_componentize_js_did() {
        assert_eq!(camel_case("auth-header"), "authHeader");
        assert_eq!(camel_case("login"), "login");
        assert_eq!(camel_case("base-url-v2"), "baseUrlV2");
    }

    #[test]
    fn a_tagged_value_needs_a_tag() {
        let v = serde_json::json!({"tag": "ok", "val": 3});
        assert_eq!(tagged(&v).map(|(t, _)| t), Ok("ok"));
        assert!(tagged(&serde_json::json!({"val": 3})).is_err());
        assert!(tagged(&serde_json::json!(3)).is_err());
    }
}
