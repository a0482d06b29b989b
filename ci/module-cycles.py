#!/usr/bin/env python3
"""Finds import cycles between the modules of Rust library crates.

Usage: ci/module-cycles.py CRATE_SRC_DIR...   (for example fakekube/src)

A module depends on another when any of its files names it through `crate::`, `super::` or
`self::` (in a `use` or in a path), comments aside. Dependencies are compared among siblings: an
edge from `a::x` to `b::y` is an edge from `a` to `b` among the crate root's children, and one
from `a::x` to `a::z` is an edge from `x` to `z` among `a`'s. A module using its parent's items,
or a parent using its children's, is no cycle. Exits 1 and names each cycle when there is one.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

COMMENT = re.compile(r"//[^\n]*")
USE = re.compile(r"\buse\s+((?:crate|super|self)\b[^;]*);", re.S)
PATH = re.compile(r"\b((?:crate|super|self)(?:::[A-Za-z_][A-Za-z0-9_]*)+)")


def module_files(src: Path) -> dict[tuple[str, ...], Path]:
    """Maps each module path (a tuple of names; () is the crate root) to its file."""
    mods: dict[tuple[str, ...], Path] = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("").parts
        if rel and rel[0] == "bin":
            continue
        if rel in (("lib",), ("main",)):
            mods[()] = f
        elif rel[-1] == "mod":
            mods[tuple(rel[:-1])] = f
        else:
            mods[tuple(rel)] = f
    return mods


def expand(tree: str) -> list[str]:
    """Expands a `use` tree (`crate::{a, b::{c, d}}`) into its paths."""
    tree = re.sub(r"\s+as\s+[A-Za-z_][A-Za-z0-9_]*", "", tree)
    tree = re.sub(r"\s+", "", tree)
    depth = 0
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner, rest = tree[:start], tree[start + 1 : i], tree[i + 1 :]
                parts, level, cur = [], 0, ""
                for c in inner:
                    if c == "," and level == 0:
                        parts.append(cur)
                        cur = ""
                        continue
                    level += c == "{"
                    level -= c == "}"
                    cur += c
                parts.append(cur)
                out = []
                for p in parts:
                    if p and p != "self":
                        out.extend(expand(prefix + p + rest))
                    elif p == "self":
                        out.append(prefix.rstrip(":"))
                return out
    return [tree]


def references(text: str) -> list[str]:
    text = COMMENT.sub("", text)
    refs = []
    for m in USE.finditer(text):
        refs.extend(expand(m.group(1)))
    refs.extend(m.group(1) for m in PATH.finditer(USE.sub("", text)))
    return refs


def resolve(ref: str, here: tuple[str, ...], known) -> tuple[str, ...] | None:
    """The module a path names, from module `here` (whose `super` is its parent)."""
    parts = ref.split("::")
    if parts[0] == "crate":
        cur: list[str] = []
    elif parts[0] == "self":
        cur = list(here)
    else:  # super
        cur = list(here[:-1])
    rest = parts[1:]
    while rest and rest[0] == "super":
        cur = cur[:-1]
        rest = rest[1:]
    path = tuple(cur + rest)
    # The longest prefix that is a module.
    for n in range(len(path), -1, -1):
        if path[:n] in known:
            return path[:n]
    return None


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def check(src: Path) -> list[str]:
    mods = module_files(src)
    known = set(mods)
    # edges[parent][child_a] = {child_b, ...}, with a witness file per edge.
    edges: dict[tuple[str, ...], dict[str, set[str]]] = {}
    witness: dict[tuple[tuple[str, ...], str, str], str] = {}
    for here, f in mods.items():
        for ref in references(f.read_text()):
            target = resolve(ref, here, known)
            if target is None:
                continue
            n = 0
            while n < min(len(here), len(target)) and here[n] == target[n]:
                n += 1
            if n == len(here) or n == len(target):
                continue  # ancestor or descendant: parent and child may use each other
            parent, a, b = here[:n], here[n], target[n]
            edges.setdefault(parent, {}).setdefault(a, set()).add(b)
            witness.setdefault((parent, a, b), f"{f}: {ref}")
    problems = []
    for parent, es in sorted(edges.items()):
        for comp in cycles(es):
            where = "::".join(("crate",) + parent)
            lines = [f"{src}: import cycle among {where}'s modules: {', '.join(comp)}"]
            for a in comp:
                for b in sorted(es.get(a, ())):
                    if b in comp:
                        lines.append(f"    {a} -> {b}   ({witness[(parent, a, b)]})")
            problems.append("\n".join(lines))
    return problems


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = []
    for arg in sys.argv[1:]:
        problems.extend(check(Path(arg)))
    for p in problems:
        print(p)
    if not problems:
        print(f"no import cycles in {', '.join(sys.argv[1:])}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
