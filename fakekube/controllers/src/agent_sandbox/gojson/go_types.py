#!/usr/bin/env python3
"""Writes go_types.txt: the JSON shape of the Go types agent-sandbox hashes.

The warm pool controller hashes `json.Marshal` of a SandboxTemplate's `podTemplate` and of its
blueprint; what encoding/json writes depends on the Go structs' field order, `omitempty` and
field kinds. This reads those facts from the Go sources and writes one row per struct field:

    <package>.<Struct> <TAB> <json name> <TAB> o|- (omitempty or not) <TAB> <type>

where <type> is `string`, `int`, `float`, `bool`, `bytes`, `quantity` (resource.Quantity),
`intstr` (intstr.IntOrString), `time` (metav1.Time), `raw` (anything else, written as given),
`*T`, `[]T`, `map[]T` or a struct name. Only types reachable from the roots are written, structs in the order first reached.

Usage (the sources at the versions agent-sandbox's go.mod names; run from the repo root):
    python3 fakekube/controllers/src/agent_sandbox/gojson/go_types.py \
        core=<k8s.io/api v0.36.3>/core/v1/types.go \
        meta=<k8s.io/apimachinery v0.36.3>/pkg/apis/meta/v1/types.go \
        sandbox=<agent-sandbox 2fd412d5>/api/v1beta1/sandbox_types.go \
        > fakekube/controllers/src/agent_sandbox/gojson/go_types.txt
"""
import re
import sys

ROOTS = ["sandbox.PodTemplate", "sandbox.SandboxBlueprint"]
# Package aliases the sources use for each other.
ALIASES = {"corev1": "core", "v1": "meta", "metav1": "meta"}
SPECIAL = {
    "resource.Quantity": "quantity",
    "intstr.IntOrString": "intstr",
    "meta.Time": "time",
    "meta.MicroTime": "time",
    "meta.Duration": "raw",
    "types.UID": "string",
    "runtime.RawExtension": "raw",
    "meta.FieldsV1": "raw",
}
BUILTIN = {
    "string": "string", "bool": "bool", "byte": "int",
    "int": "int", "int8": "int", "int16": "int", "int32": "int", "int64": "int",
    "uint": "int", "uint8": "int", "uint16": "int", "uint32": "int", "uint64": "int",
    "float32": "float", "float64": "float",
}

structs = {}  # name -> [(field name or None, go type, tag)]
named = {}  # name -> go type expression (non-struct named types)


def read(pkg, path):
    text = open(path, encoding="utf-8").read()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^type (\w+) struct \{\s*$", line)
        if m:
            fields = []
            i += 1
            in_comment = False
            while not lines[i].startswith("}"):
                f = lines[i].strip()
                i += 1
                if f.startswith("/*"):
                    in_comment = True
                if in_comment:
                    in_comment = "*/" not in f
                    continue
                if not f or f.startswith("//"):
                    continue
                fm = re.match(r"^(\w+)\s+([^`\s]+)\s*(`.*`)?$", f)
                em = re.match(r"^([\w.*]+)\s*(`.*`)?$", f)
                if fm:
                    fields.append((fm.group(1), fm.group(2), fm.group(3) or ""))
                elif em:
                    fields.append((None, em.group(1), em.group(2) or ""))
                else:
                    sys.exit(f"cannot read field {f!r} of {pkg}.{m.group(1)}")
            structs[f"{pkg}.{m.group(1)}"] = (pkg, fields)
        else:
            m = re.match(r"^type (\w+) (\S.*)$", line)
            if m and not m.group(2).startswith(("interface", "struct", "func")):
                named[f"{pkg}.{m.group(1)}"] = (pkg, m.group(2).strip())
        i += 1


def qualify(pkg, name):
    if "." in name:
        p, n = name.split(".", 1)
        return f"{ALIASES.get(p, p)}.{n}"
    return f"{pkg}.{name}"


def resolve(pkg, expr, reached):
    """The row type of the Go type expression `expr` written in package `pkg`."""
    if expr.startswith("*"):
        return "*" + resolve(pkg, expr[1:], reached)
    if expr == "[]byte":
        return "bytes"
    if expr.startswith("[]"):
        return "[]" + resolve(pkg, expr[2:], reached)
    if expr.startswith("map["):
        depth, j = 0, 3
        for j in range(3, len(expr)):
            depth += {"[": 1, "]": -1}.get(expr[j], 0)
            if depth == 0:
                break
        return "map[]" + resolve(pkg, expr[j + 1:], reached)
    if expr in BUILTIN:
        return BUILTIN[expr]
    q = qualify(pkg, expr)
    if q in SPECIAL:
        return SPECIAL[q]
    if q in named:
        npkg, nexpr = named[q]
        return resolve(npkg, nexpr, reached)
    if q in structs:
        if q not in reached:
            reached.append(q)
        return q
    sys.exit(f"unknown type {expr} in {pkg}")


def rows(name, reached):
    pkg, fields = structs[name]
    out = []
    for field, expr, tag in fields:
        m = re.search(r'json:"([^"]*)"', tag)
        opts = (m.group(1) if m else "").split(",")
        key = opts[0]
        if key == "-":
            continue
        if field is None and not key:
            # Embedded without a name: its fields are promoted.
            out.extend(rows(qualify(pkg, expr.lstrip("*")), reached))
            continue
        key = key or field
        flag = "o" if "omitempty" in opts[1:] else "-"
        out.append((key, flag, resolve(pkg, expr, reached)))
    return out


def main():
    for arg in sys.argv[1:]:
        pkg, path = arg.split("=", 1)
        read(pkg, path)
    reached = list(ROOTS)
    done = 0
    print("# Generated by go_types.py from k8s.io/api and k8s.io/apimachinery v0.36.3 and")
    print("# agent-sandbox 2fd412d5 (api/v1beta1); see that script. One row per field, in order.")
    while done < len(reached):
        name = reached[done]
        done += 1
        for key, flag, ty in rows(name, reached):
            print(f"{name}\t{key}\t{flag}\t{ty}")


main()
