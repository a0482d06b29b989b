//! The CEL environment: the functions Kubernetes' rules use, the compiler's checks, and the
//! refusal of what fakekube cannot evaluate.

use super::convert::to_cel;
use super::*;
use serde_json::json;

/// Evaluates `rule` with `self` bound to `this` (no schema: plain JSON typing).
fn eval(rule: &str, this: serde_json::Value) -> Result<Value, String> {
    let c = compile(rule)?;
    evaluate(&c, to_cel(&this, None, false), OldSelf::Unbound)
}

fn holds(rule: &str, this: serde_json::Value) -> bool {
    match eval(rule, this) {
        Ok(Value::Bool(b)) => b,
        other => panic!("{rule}: {other:?}"),
    }
}

#[test]
fn the_standard_library_and_the_strings_extension_evaluate() {
    let obj = json!({ "name": "web-1", "replicas": 3, "tags": ["a", "b"], "m": { "k": "v" } });
    assert!(holds(
        "self.name.startsWith('web') && self.name.matches('^[a-z]+-[0-9]$')",
        obj.clone()
    ));
    assert!(holds(
        "has(self.replicas) && !has(self.missing)",
        obj.clone()
    ));
    assert!(holds(
        "self.tags.all(t, t.size() == 1) && self.tags.exists_one(t, t == 'a')",
        obj.clone()
    ));
    assert!(holds("self.m['k'] == 'v' && 'k' in self.m", obj.clone()));
    assert!(holds(
        "self.name.split('-')[1] == '1' && self.name.upperAscii() == 'WEB-1'",
        obj.clone()
    ));
    assert!(holds(
        "self.tags.map(t, t + '!') == ['a!', 'b!'] && self.tags.filter(t, t == 'b').size() == 1",
        obj.clone()
    ));
    assert!(holds("cel.bind(n, self.replicas * 2, n == 6)", obj.clone()));
    assert!(holds("self.?missing.orValue(1) == 1", obj));
}

#[test]
fn the_kubernetes_libraries_evaluate() {
    let obj = json!({ "nums": [1, 2, 3], "s": "a1b22c333", "mem": "1Gi", "addr": "10.0.0.7", "net": "10.0.0.0/24", "link": "https://example.com:8443/p?q=1" });
    assert!(holds(
        "self.nums.isSorted() && self.nums.sum() == 6 && self.nums.min() == 1 && self.nums.max() == 3",
        obj.clone()
    ));
    assert!(holds(
        "self.nums.indexOf(2) == 1 && self.nums.lastIndexOf(9) == -1",
        obj.clone()
    ));
    assert!(holds(
        "self.s.find('[0-9]+') == '1' && self.s.findAll('[0-9]+') == ['1', '22', '333'] && self.s.findAll('[0-9]+', 2).size() == 2",
        obj.clone()
    ));
    assert!(holds(
        "sets.contains(self.nums, [1, 2]) && sets.intersects(self.nums, [3, 4]) && !sets.equivalent(self.nums, [1])",
        obj.clone()
    ));
    assert!(holds(
        "quantity(self.mem).isGreaterThan(quantity('1000Mi')) && quantity('1500m').add(1).compareTo(quantity('2.5')) == 0",
        obj.clone()
    ));
    assert!(holds(
        "isQuantity('2Gi') && !isQuantity('2GB') && quantity('2k').asInteger() == 2000 && quantity('-1').sign() == -1",
        obj.clone()
    ));
    assert!(holds(
        "ip(self.addr).family() == 4 && cidr(self.net).containsIP(self.addr) && cidr(self.net).prefixLength() == 24",
        obj.clone()
    ));
    assert!(holds(
        "isIP('::1') && !isIP('010.0.0.1') && ip('::1').isLoopback() && string(cidr('10.0.0.9/8').masked()) == '10.0.0.0/8'",
        obj.clone()
    ));
    assert!(holds(
        "url(self.link).getHostname() == 'example.com' && url(self.link).getPort() == '8443' && url(self.link).getQuery()['q'] == ['1'] && isURL('/a') && !isURL('a b')",
        obj
    ));
}

#[test]
fn evaluation_errors_are_worded_as_cel_go_words_them() {
    assert_eq!(
        eval("self.missing == 1", json!({})).err().as_deref(),
        Some("no such key: missing")
    );
    assert_eq!(
        eval("1 / self.z == 1", json!({ "z": 0 })).err().as_deref(),
        Some("division by zero")
    );
}

#[test]
fn an_undeclared_name_fails_to_compile_with_a_caret_under_it() {
    let e = compile("self.a == b").expect_err("b is undeclared");
    assert_eq!(
        e,
        "ERROR: <input>:1:11: undeclared reference to 'b' (in container '')\n | self.a == b\n | ..........^"
    );
    let e = compile("self.a.frobnicate()").expect_err("no such function");
    assert!(e.contains("undeclared reference to 'frobnicate'"), "{e}");
    assert!(compile("self.a ==").is_err());
}

#[test]
fn a_kubernetes_function_fakekube_lacks_is_refused_by_name() {
    let e = compile("isSemver(self.v)").expect_err("semver is not implemented");
    assert_eq!(
        e,
        "fakekube does not implement the CEL function 'isSemver' (Kubernetes' semver library), so it cannot evaluate this rule"
    );
    let e = compile("self.m.all(k, v, v > 0)").expect_err("two-variable comprehensions");
    assert!(
        e.contains("'all' (Kubernetes' two-variable comprehensions library)"),
        "{e}"
    );
    assert!(compile("format.dns1123Label().validate(self.n).hasValue()").is_err());
}

#[test]
fn transition_rules_see_old_self_and_optional_old_self_is_an_optional() {
    let c = compile("self == oldSelf").expect("compiles");
    assert!(c.uses_old_self);
    let v = evaluate(&c, Value::Int(1), OldSelf::Value(Value::Int(1))).expect("evaluates");
    assert_eq!(v, Value::Bool(true));
    let c = compile("!oldSelf.hasValue() || self >= oldSelf.value()").expect("compiles");
    assert_eq!(
        evaluate(&c, Value::Int(1), OldSelf::Optional(None)),
        Ok(Value::Bool(true))
    );
    assert_eq!(
        evaluate(&c, Value::Int(1), OldSelf::Optional(Some(Value::Int(2)))),
        Ok(Value::Bool(false))
    );
}

#[test]
fn values_are_typed_by_their_schema() {
    let s = json!({ "type": "object", "properties": {
        "ratio": { "type": "number" },
        "when": { "type": "string", "format": "date-time" },
        "wait": { "type": "string", "format": "duration" },
        "metadata": { "type": "object" },
    } });
    let obj = json!({ "ratio": 2, "when": "2024-01-01T00:00:00Z", "wait": "1h30m", "metadata": { "name": "n", "labels": { "a": "b" } } });
    let c = compile("self.ratio == 2.0 && self.when < timestamp('2025-01-01T00:00:00Z') && self.wait == duration('90m') && !has(self.metadata.labels) && self.metadata.name == 'n'").expect("compiles");
    assert_eq!(
        evaluate(&c, to_cel(&obj, Some(&s), true), OldSelf::Unbound),
        Ok(Value::Bool(true))
    );
}

#[test]
fn a_rule_reads_only_the_fields_it_selects_of_self_and_old_self() {
    let fields = |names: &[&str]| Selection::Fields(names.iter().map(|n| n.to_string()).collect());
    let c = compile("has(self.a) && self.b.c == oldSelf.b.c").expect("compiles");
    assert_eq!(c.self_reads, fields(&["a", "b"]));
    assert_eq!(c.old_self_reads, fields(&["b"]));
    let c = compile("has(self.v) == has(oldSelf.v) && (!has(self.v) || self.v == oldSelf.v)")
        .expect("compiles");
    assert_eq!(
        (c.self_reads.clone(), c.old_self_reads.clone()),
        (fields(&["v"]), fields(&["v"]))
    );
    // A comprehension variable named `self` is not the node's value.
    let c = compile("[1].all(self, self > 0) && self.a > 0").expect("compiles");
    assert_eq!(c.self_reads, fields(&["a"]));
    assert_eq!(c.old_self_reads, fields(&[]));
    for whole in [
        "self == oldSelf",
        "size(self) > 0",
        "self.all(k, k != 'x')",
        "'a' in self",
    ] {
        let c = compile(whole).expect("compiles");
        assert_eq!(c.self_reads, Selection::Whole, "{whole}");
    }
    assert_eq!(
        compile("self == oldSelf").expect("compiles").old_self_reads,
        Selection::Whole
    );
}

mod reads {
    use super::super::convert::to_cel;
    use super::*;
    use proptest::prelude::*;

    /// Rules over an object with fields `a`, `b` and `c`, reading some or all of it.
    const RULES: &[&str] = &[
        "has(self.a) == has(oldSelf.a) && (!has(self.a) || self.a == oldSelf.a)",
        "self.a > 1 || has(self.b)",
        "self.b.x == 'y'",
        "size(self) >= 2",
        "self == oldSelf",
        "has(self.c) ? self.c.size() > 0 : oldSelf.a == 1",
        "self.all(k, k != 'c') || self.a == oldSelf.a",
        "[0].exists(self, self == 0) && !has(self.b)",
    ];

    fn field() -> impl Strategy<Value = serde_json::Value> {
        prop_oneof![
            (0i64..3).prop_map(|i| json!(i)),
            "[xy]".prop_map(|s| json!(s)),
            "[xy]".prop_map(|s| json!({ "x": s })),
            prop::collection::vec(0i64..2, 0..2).prop_map(|v| json!(v)),
        ]
    }

    fn object() -> impl Strategy<Value = serde_json::Value> {
        prop::collection::btree_map(prop::sample::select(vec!["a", "b", "c"]), field(), 0..4)
            .prop_map(|m| json!(m))
    }

    proptest! {
        #[test]
        fn a_rule_evaluates_the_same_on_only_what_it_reads(
            rule in prop::sample::select(RULES),
            new in object(),
            old in object(),
        ) {
            let c = compile(rule).expect("compiles");
            let whole = evaluate(&c, to_cel(&new, None, false), OldSelf::Value(to_cel(&old, None, false)));
            let read = evaluate(
                &c,
                to_cel_reads(&new, None, false, &c.self_reads),
                OldSelf::Value(to_cel_reads(&old, None, false, &c.old_self_reads)),
            );
            prop_assert_eq!(whole, read);
        }
    }
}
