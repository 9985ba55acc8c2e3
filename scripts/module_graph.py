#!/usr/bin/env python3
"""The engine's module import graph, and its cycles.

Reads `use crate::a::…` (and `crate::a::` paths) in every file of crates/engine/src,
outside `#[cfg(test)]` modules, maps each file to its top-level module, and prints the
strongly connected components with more than one module: a circle of imports. Exit 1 when
there is one. Usage: python3 scripts/module_graph.py [--edges]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "crates", "engine", "src")


def module_of(path):
    rel = os.path.relpath(path, ROOT)
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def strip_tests(text):
    # Drop `#[cfg(test)] mod … { … }` blocks: test code may import anything.
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def main():
    edges = {}
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            p = os.path.join(d, f)
            m = module_of(p)
            if m == "lib":
                continue
            text = strip_tests(open(p).read())
            # Comments cite modules without importing them.
            text = re.sub(r"//.*", "", text)
            for t in re.findall(r"crate::(\w+)", text):
                if t != m and os.path.exists(os.path.join(ROOT, t + ".rs")) or os.path.isdir(os.path.join(ROOT, t)):
                    if t != m:
                        edges.setdefault(m, set()).add(t)
    if "--edges" in sys.argv:
        for m in sorted(edges):
            print(f"{m} -> {', '.join(sorted(edges[m]))}")
    # Tarjan's strongly connected components.
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
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
            sccs.append(comp)

    nodes = set(edges) | {t for ts in edges.values() for t in ts}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    cycles = [sorted(c) for c in sccs if len(c) > 1]
    for c in cycles:
        print("circle:", " <-> ".join(c))
    if not cycles:
        print(f"no circles among {len(nodes)} modules")
    sys.exit(1 if cycles else 0)


main()
