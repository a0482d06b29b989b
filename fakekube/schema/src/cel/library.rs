//! The CEL environment of CRD validation rules: the `cel` crate's standard library and strings
//! extension, plus the Kubernetes libraries fakekube implements (lists, regex, sets,
//! quantity, IP, CIDR, URL) and the `cel.bind` macro. Each function is a plain Rust function
//! over [`Value`]s, registered as an overload.

use super::net::{self, CIDR_TYPE, Cidr, IP_TYPE, Ip, URL_TYPE};
use super::quantity::{self, Quantity};
use cel::common::ast::{ComprehensionExpr, Expr, ListExpr, LiteralValue};
use cel::common::types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::parser::Macro;
use cel::{DeclarationError, Env, ExecutionError, Value, extensions};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

/// Defines an overload (a plain `fn`, as the crate needs) that hands its arguments, as
/// values, to `$body` and returns what it returns.
macro_rules! overload {
    ($wrapper:ident => $body:expr) => {
        fn $wrapper<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
            let values = args
                .iter()
                .map(|a| Value::try_from(a.as_ref()))
                .collect::<Result<Vec<Value>, ExecutionError>>()?;
            let body: fn(&[Value]) -> Result<Value, ExecutionError> = $body;
            let out: Box<dyn Val> = body(&values)?.try_into()?;
            Ok(CowVal::Owned(out))
        }
    };
}

/// The environment, built once per process.
pub(super) fn env() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(extensions::strings)?;
    lists(&mut env)?;
    regex(&mut env)?;
    sets(&mut env)?;
    quantities(&mut env)?;
    ips(&mut env)?;
    cidrs(&mut env)?;
    urls(&mut env)?;
    env.add_macro(Macro::receiver("bind", 3, bind_macro))?;
    Ok(env)
}

/// Expands `cel.bind(var, init, result)` into a comprehension over nothing whose
/// accumulator is `var`; declines `bind` on anything but `cel`.
fn bind_macro(
    helper: &mut cel::parser::MacroExprHelper<'_>,
    target: &mut Option<cel::IdedExpr>,
    args: &mut Vec<cel::IdedExpr>,
) -> Result<Option<cel::IdedExpr>, cel::ParseError> {
    let on_cel = matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel");
    let var = match args.first().map(|a| &a.expr) {
        Some(Expr::Ident(v)) => v.clone(),
        _ => return Ok(None),
    };
    if !on_cel || args.len() != 3 {
        return Ok(None);
    }
    let result = args.pop().unwrap_or_default();
    let init = args.pop().unwrap_or_default();
    let iter_range = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let loop_cond = helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into())));
    let loop_step = helper.next_expr(Expr::Ident(var.clone()));
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
        ComprehensionExpr {
            iter_range,
            iter_var: "#unused".to_string(),
            iter_var2: None,
            accu_var: var,
            accu_init: init,
            loop_cond,
            loop_step,
            result,
        },
    )))))
}

/// A function error.
fn fail(function: &str, why: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, why)
}

/// The `i`th argument.
fn arg<'a>(args: &'a [Value], i: usize, function: &str) -> Result<&'a Value, ExecutionError> {
    args.get(i)
        .ok_or_else(|| fail(function, "missing argument"))
}

/// The `i`th argument as a string.
fn string_arg<'a>(args: &'a [Value], i: usize, function: &str) -> Result<&'a str, ExecutionError> {
    match arg(args, i, function)? {
        Value::String(s) => Ok(s.as_str()),
        other => Err(fail(function, format!("expected a string, got {other:?}"))),
    }
}

/// The `i`th argument as a list.
fn list_arg<'a>(
    args: &'a [Value],
    i: usize,
    function: &str,
) -> Result<&'a [Value], ExecutionError> {
    match arg(args, i, function)? {
        Value::List(l) => Ok(l.as_slice()),
        other => Err(fail(function, format!("expected a list, got {other:?}"))),
    }
}

/// The `i`th argument as an opaque value of type `T`.
fn opaque_arg<T: Opaque + Clone + 'static>(
    args: &[Value],
    i: usize,
    function: &str,
) -> Result<T, ExecutionError> {
    match arg(args, i, function)? {
        Value::Opaque(o) => o
            .downcast_ref::<T>()
            .cloned()
            .ok_or_else(|| fail(function, "unexpected argument type")),
        other => Err(fail(function, format!("unexpected argument {other:?}"))),
    }
}

/// The CEL type of the opaque values named `name`.
fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// An opaque value.
fn opaque(o: impl Opaque) -> Value {
    Value::Opaque(Arc::new(o))
}

/// Orders two values of the same comparable type.
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::UInt(x), Value::UInt(y)) => Some(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::Duration(x), Value::Duration(y)) => Some(x.cmp(y)),
        (Value::Timestamp(x), Value::Timestamp(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

overload!(is_sorted => |a| {
    let list = list_arg(a, 0, "isSorted")?;
    for w in list.windows(2) {
        match compare(&w[0], &w[1]) {
            Some(Ordering::Greater) => return Ok(Value::Bool(false)),
            Some(_) => {}
            None => return Err(fail("isSorted", "the list's elements cannot be compared")),
        }
    }
    Ok(Value::Bool(true))
});

overload!(sum => |a| {
    let list = list_arg(a, 0, "sum")?;
    let Some((first, rest)) = list.split_first() else {
        return Ok(Value::Int(0));
    };
    let mut total = first.clone();
    for v in rest {
        total = match (&total, v) {
            (Value::Int(t), Value::Int(x)) => Value::Int(t.checked_add(*x).ok_or_else(|| fail("sum", "integer overflow"))?),
            (Value::UInt(t), Value::UInt(x)) => Value::UInt(t.checked_add(*x).ok_or_else(|| fail("sum", "integer overflow"))?),
            (Value::Float(t), Value::Float(x)) => Value::Float(t + x),
            (Value::Duration(t), Value::Duration(x)) => Value::Duration(*t + *x),
            _ => return Err(fail("sum", "the list's elements are not all of one numeric type")),
        };
    }
    Ok(total)
});

/// The least (`greatest` false) or greatest element of a list.
fn extreme(a: &[Value], function: &str, greatest: bool) -> Result<Value, ExecutionError> {
    let list = list_arg(a, 0, function)?;
    let mut best = list
        .first()
        .ok_or_else(|| fail(function, format!("{function} called on empty list")))?;
    for v in &list[1..] {
        let ord = compare(v, best)
            .ok_or_else(|| fail(function, "the list's elements cannot be compared"))?;
        if (greatest && ord == Ordering::Greater) || (!greatest && ord == Ordering::Less) {
            best = v;
        }
    }
    Ok(best.clone())
}

overload!(list_min => |a| extreme(a, "min", false));
overload!(list_max => |a| extreme(a, "max", true));

overload!(list_index_of => |a| {
    let list = list_arg(a, 0, "indexOf")?;
    let x = arg(a, 1, "indexOf")?;
    let i = list.iter().position(|v| v == x).map_or(-1, |i| i64::try_from(i).unwrap_or(-1));
    Ok(Value::Int(i))
});

overload!(list_last_index_of => |a| {
    let list = list_arg(a, 0, "lastIndexOf")?;
    let x = arg(a, 1, "lastIndexOf")?;
    let i = list.iter().rposition(|v| v == x).map_or(-1, |i| i64::try_from(i).unwrap_or(-1));
    Ok(Value::Int(i))
});

/// Kubernetes' lists library.
fn lists(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_last_index_of,
    )?;
    Ok(())
}

/// `pattern` compiled as the API server's CEL compiles it (RE2 syntax).
fn re(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    crate::pattern::compile(pattern).map_err(|e| fail(function, e))
}

overload!(find => |a| {
    let s = string_arg(a, 0, "find")?;
    let r = re(string_arg(a, 1, "find")?, "find")?;
    Ok(Value::String(Arc::new(r.find(s).map(|m| m.as_str().to_string()).unwrap_or_default())))
});

/// Every match of the pattern, at most `limit` of them when it is not negative.
fn find_all(a: &[Value], limit: i64) -> Result<Value, ExecutionError> {
    let s = string_arg(a, 0, "findAll")?;
    let r = re(string_arg(a, 1, "findAll")?, "findAll")?;
    let found: Vec<Value> = r
        .find_iter(s)
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .map(|m| Value::String(Arc::new(m.as_str().to_string())))
        .collect();
    Ok(Value::List(Arc::new(found)))
}

overload!(find_all_every => |a| find_all(a, -1));
overload!(find_all_limited => |a| {
    let limit = match arg(a, 2, "findAll")? {
        Value::Int(n) => *n,
        _ => return Err(fail("findAll", "the limit must be an int")),
    };
    find_all(a, limit)
});

/// Kubernetes' regex library.
fn regex(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all_every,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_limited,
    )?;
    Ok(())
}

overload!(sets_contains => |a| {
    let (x, y) = (list_arg(a, 0, "sets.contains")?, list_arg(a, 1, "sets.contains")?);
    Ok(Value::Bool(y.iter().all(|v| x.contains(v))))
});
overload!(sets_equivalent => |a| {
    let (x, y) = (list_arg(a, 0, "sets.equivalent")?, list_arg(a, 1, "sets.equivalent")?);
    Ok(Value::Bool(y.iter().all(|v| x.contains(v)) && x.iter().all(|v| y.contains(v))))
});
overload!(sets_intersects => |a| {
    let (x, y) = (list_arg(a, 0, "sets.intersects")?, list_arg(a, 1, "sets.intersects")?);
    Ok(Value::Bool(y.iter().any(|v| x.contains(v))))
});

/// CEL's sets extension.
fn sets(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        vec![LIST_TYPE, LIST_TYPE],
        sets_intersects,
    )?;
    Ok(())
}

overload!(quantity_of => |a| {
    let q = Quantity::parse(string_arg(a, 0, "quantity")?).map_err(|e| fail("quantity", e))?;
    Ok(opaque(q))
});
overload!(is_quantity => |a| Ok(Value::Bool(Quantity::parse(string_arg(a, 0, "isQuantity")?).is_ok())));
overload!(q_is_integer => |a| Ok(Value::Bool(opaque_arg::<Quantity>(a, 0, "isInteger")?.is_integer())));
overload!(q_as_integer => |a| Ok(Value::Int(opaque_arg::<Quantity>(a, 0, "asInteger")?.as_integer()?)));
overload!(q_as_float => |a| Ok(Value::Float(opaque_arg::<Quantity>(a, 0, "asApproximateFloat")?.as_f64())));
overload!(q_sign => |a| Ok(Value::Int(opaque_arg::<Quantity>(a, 0, "sign")?.sign())));

/// The quantity of the `i`th argument, a quantity or an int.
fn quantity_or_int(a: &[Value], i: usize, function: &str) -> Result<Quantity, ExecutionError> {
    match arg(a, i, function)? {
        Value::Int(n) => Ok(Quantity::from_int(*n)),
        _ => opaque_arg::<Quantity>(a, i, function),
    }
}

overload!(q_add => |a| {
    let q = opaque_arg::<Quantity>(a, 0, "add")?.add(quantity_or_int(a, 1, "add")?, false)?;
    Ok(opaque(q))
});
overload!(q_sub => |a| {
    let q = opaque_arg::<Quantity>(a, 0, "sub")?.add(quantity_or_int(a, 1, "sub")?, true)?;
    Ok(opaque(q))
});
overload!(q_greater => |a| {
    let ord = opaque_arg::<Quantity>(a, 0, "isGreaterThan")?.compare(opaque_arg(a, 1, "isGreaterThan")?);
    Ok(Value::Bool(ord == Ordering::Greater))
});
overload!(q_less => |a| {
    let ord = opaque_arg::<Quantity>(a, 0, "isLessThan")?.compare(opaque_arg(a, 1, "isLessThan")?);
    Ok(Value::Bool(ord == Ordering::Less))
});
overload!(q_compare => |a| {
    let ord = opaque_arg::<Quantity>(a, 0, "compareTo")?.compare(opaque_arg(a, 1, "compareTo")?);
    Ok(Value::Int(match ord { Ordering::Less => -1, Ordering::Equal => 0, Ordering::Greater => 1 }))
});

/// Kubernetes' quantity library.
fn quantities(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity_of,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload(
        "isInteger",
        "quantity_is_integer",
        opaque_type(quantity::TYPE_NAME),
        vec![],
        q_is_integer,
    )?;
    env.add_member_overload(
        "asInteger",
        "quantity_get_integer",
        opaque_type(quantity::TYPE_NAME),
        vec![],
        q_as_integer,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        opaque_type(quantity::TYPE_NAME),
        vec![],
        q_as_float,
    )?;
    env.add_member_overload(
        "sign",
        "quantity_get_sign",
        opaque_type(quantity::TYPE_NAME),
        vec![],
        q_sign,
    )?;
    env.add_member_overload(
        "add",
        "quantity_add",
        opaque_type(quantity::TYPE_NAME),
        vec![DYN_TYPE],
        q_add,
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub",
        opaque_type(quantity::TYPE_NAME),
        vec![DYN_TYPE],
        q_sub,
    )?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        opaque_type(quantity::TYPE_NAME),
        vec![opaque_type(quantity::TYPE_NAME)],
        q_greater,
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        opaque_type(quantity::TYPE_NAME),
        vec![opaque_type(quantity::TYPE_NAME)],
        q_less,
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        opaque_type(quantity::TYPE_NAME),
        vec![opaque_type(quantity::TYPE_NAME)],
        q_compare,
    )?;
    Ok(())
}

overload!(ip_of => |a| Ok(opaque(Ip(net::parse_ip(string_arg(a, 0, "ip")?).map_err(|e| fail("ip", e))?))));
overload!(is_ip => |a| Ok(Value::Bool(net::parse_ip(string_arg(a, 0, "isIP")?).is_ok())));
overload!(ip_is_canonical => |a| {
    Ok(Value::Bool(net::is_canonical(string_arg(a, 0, "ip.isCanonical")?).map_err(|e| fail("ip.isCanonical", e))?))
});
overload!(ip_family => |a| Ok(Value::Int(if opaque_arg::<Ip>(a, 0, "family")?.0.is_ipv4() { 4 } else { 6 })));
overload!(ip_unspecified => |a| Ok(Value::Bool(opaque_arg::<Ip>(a, 0, "isUnspecified")?.0.is_unspecified())));
overload!(ip_loopback => |a| Ok(Value::Bool(opaque_arg::<Ip>(a, 0, "isLoopback")?.0.is_loopback())));
overload!(ip_ll_multicast => |a| Ok(Value::Bool(net::is_link_local_multicast(opaque_arg::<Ip>(a, 0, "isLinkLocalMulticast")?.0))));
overload!(ip_ll_unicast => |a| Ok(Value::Bool(net::is_link_local_unicast(opaque_arg::<Ip>(a, 0, "isLinkLocalUnicast")?.0))));
overload!(ip_global_unicast => |a| Ok(Value::Bool(net::is_global_unicast(opaque_arg::<Ip>(a, 0, "isGlobalUnicast")?.0))));
overload!(ip_string => |a| Ok(Value::String(Arc::new(opaque_arg::<Ip>(a, 0, "string")?.0.to_string()))));

/// Kubernetes' IP library.
fn ips(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("ip", "string_to_ip", vec![STRING_TYPE], ip_of)?;
    env.add_overload("isIP", "is_ip", vec![STRING_TYPE], is_ip)?;
    env.add_overload(
        "ip.isCanonical",
        "ip_is_canonical",
        vec![STRING_TYPE],
        ip_is_canonical,
    )?;
    env.add_member_overload(
        "family",
        "ip_family",
        opaque_type(IP_TYPE),
        vec![],
        ip_family,
    )?;
    env.add_member_overload(
        "isUnspecified",
        "ip_is_unspecified",
        opaque_type(IP_TYPE),
        vec![],
        ip_unspecified,
    )?;
    env.add_member_overload(
        "isLoopback",
        "ip_is_loopback",
        opaque_type(IP_TYPE),
        vec![],
        ip_loopback,
    )?;
    env.add_member_overload(
        "isLinkLocalMulticast",
        "ip_is_link_local_multicast",
        opaque_type(IP_TYPE),
        vec![],
        ip_ll_multicast,
    )?;
    env.add_member_overload(
        "isLinkLocalUnicast",
        "ip_is_link_local_unicast",
        opaque_type(IP_TYPE),
        vec![],
        ip_ll_unicast,
    )?;
    env.add_member_overload(
        "isGlobalUnicast",
        "ip_is_global_unicast",
        opaque_type(IP_TYPE),
        vec![],
        ip_global_unicast,
    )?;
    env.add_overload(
        "string",
        "ip_to_string",
        vec![opaque_type(IP_TYPE)],
        ip_string,
    )?;
    Ok(())
}

overload!(cidr_of => |a| Ok(opaque(net::parse_cidr(string_arg(a, 0, "cidr")?).map_err(|e| fail("cidr", e))?)));
overload!(is_cidr => |a| Ok(Value::Bool(net::parse_cidr(string_arg(a, 0, "isCIDR")?).is_ok())));
overload!(cidr_contains_ip => |a| {
    let c = opaque_arg::<Cidr>(a, 0, "containsIP")?;
    let ip = match arg(a, 1, "containsIP")? {
        Value::String(s) => net::parse_ip(s).map_err(|e| fail("containsIP", e))?,
        _ => opaque_arg::<Ip>(a, 1, "containsIP")?.0,
    };
    Ok(Value::Bool(c.contains_ip(ip)))
});
overload!(cidr_contains_cidr => |a| {
    let c = opaque_arg::<Cidr>(a, 0, "containsCIDR")?;
    let other = match arg(a, 1, "containsCIDR")? {
        Value::String(s) => net::parse_cidr(s).map_err(|e| fail("containsCIDR", e))?,
        _ => opaque_arg::<Cidr>(a, 1, "containsCIDR")?,
    };
    Ok(Value::Bool(c.contains_cidr(&other)))
});
overload!(cidr_ip => |a| Ok(opaque(Ip(opaque_arg::<Cidr>(a, 0, "ip")?.addr))));
overload!(cidr_masked => |a| {
    let c = opaque_arg::<Cidr>(a, 0, "masked")?;
    Ok(opaque(Cidr { addr: net::mask(c.addr, c.prefix), prefix: c.prefix }))
});
overload!(cidr_prefix => |a| Ok(Value::Int(i64::from(opaque_arg::<Cidr>(a, 0, "prefixLength")?.prefix))));
overload!(cidr_string => |a| {
    let c = opaque_arg::<Cidr>(a, 0, "string")?;
    Ok(Value::String(Arc::new(format!("{}/{}", c.addr, c.prefix))))
});

/// Kubernetes' CIDR library.
fn cidrs(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("cidr", "string_to_cidr", vec![STRING_TYPE], cidr_of)?;
    env.add_overload("isCIDR", "is_cidr", vec![STRING_TYPE], is_cidr)?;
    env.add_member_overload(
        "containsIP",
        "cidr_contains_ip",
        opaque_type(CIDR_TYPE),
        vec![DYN_TYPE],
        cidr_contains_ip,
    )?;
    env.add_member_overload(
        "containsCIDR",
        "cidr_contains_cidr",
        opaque_type(CIDR_TYPE),
        vec![DYN_TYPE],
        cidr_contains_cidr,
    )?;
    env.add_member_overload("ip", "cidr_ip", opaque_type(CIDR_TYPE), vec![], cidr_ip)?;
    env.add_member_overload(
        "masked",
        "cidr_masked",
        opaque_type(CIDR_TYPE),
        vec![],
        cidr_masked,
    )?;
    env.add_member_overload(
        "prefixLength",
        "cidr_prefix_length",
        opaque_type(CIDR_TYPE),
        vec![],
        cidr_prefix,
    )?;
    env.add_overload(
        "string",
        "cidr_to_string",
        vec![opaque_type(CIDR_TYPE)],
        cidr_string,
    )?;
    Ok(())
}

overload!(url_of => |a| Ok(opaque(net::parse_url(string_arg(a, 0, "url")?).map_err(|e| fail("url", e))?)));
overload!(is_url => |a| Ok(Value::Bool(net::parse_url(string_arg(a, 0, "isURL")?).is_ok())));
overload!(url_scheme => |a| Ok(Value::String(Arc::new(opaque_arg::<net::Url>(a, 0, "getScheme")?.scheme))));
overload!(url_host => |a| Ok(Value::String(Arc::new(opaque_arg::<net::Url>(a, 0, "getHost")?.host))));
overload!(url_hostname => |a| Ok(Value::String(Arc::new(opaque_arg::<net::Url>(a, 0, "getHostname")?.hostname()))));
overload!(url_port => |a| Ok(Value::String(Arc::new(opaque_arg::<net::Url>(a, 0, "getPort")?.port()))));
overload!(url_path => |a| Ok(Value::String(Arc::new(opaque_arg::<net::Url>(a, 0, "getEscapedPath")?.path))));
overload!(url_query => |a| {
    let q = opaque_arg::<net::Url>(a, 0, "getQuery")?.query_values();
    let map: HashMap<String, Value> = q
        .into_iter()
        .map(|(k, vs)| (k, Value::List(Arc::new(vs.into_iter().map(|v| Value::String(Arc::new(v))).collect()))))
        .collect();
    Ok(map.into())
});

/// Kubernetes' URL library.
fn urls(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], url_of)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload(
        "getScheme",
        "url_get_scheme",
        opaque_type(URL_TYPE),
        vec![],
        url_scheme,
    )?;
    env.add_member_overload(
        "getHost",
        "url_get_host",
        opaque_type(URL_TYPE),
        vec![],
        url_host,
    )?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        opaque_type(URL_TYPE),
        vec![],
        url_hostname,
    )?;
    env.add_member_overload(
        "getPort",
        "url_get_port",
        opaque_type(URL_TYPE),
        vec![],
        url_port,
    )?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        opaque_type(URL_TYPE),
        vec![],
        url_path,
    )?;
    env.add_member_overload(
        "getQuery",
        "url_get_query",
        opaque_type(URL_TYPE),
        vec![],
        url_query,
    )?;
    Ok(())
}
