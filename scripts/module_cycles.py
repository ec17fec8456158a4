#!/usr/bin/env python3
"""No import cycles between the top-level modules of a crate (ARCHITECTURE.md,
"Rules"): for every crate of the workspace, the modules under src/ (a file or a
folder of the crate root, lib.rs and main.rs aside) and the `crate::<module>`
paths each one names outside comments and its test module, then every cycle of
that graph (its strongly connected parts of more than one module), printed with
the edges that close it. Exits 1 when there is one.

A cycle is how one long module grows: two halves that need each other cannot be
read, tested or moved apart. Issue 24 removed the last ones; this keeps them out.

Usage: python3 scripts/module_cycles.py [WORKSPACE_ROOT]
"""

import os
import re
import sys

PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")


def code_of(path):
    """The file without comment lines and without its `#[cfg(test)]` part (a
    test module may reach anywhere)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = text.split("#[cfg(test)]", 1)[0]
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("//"))


def graph_of(src):
    """Each top-level module of the crate at `src`, and the modules it names."""
    edges = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            top = os.path.relpath(path, src).split(os.sep)[0].removesuffix(".rs")
            if top in ("lib", "main", "bin"):
                continue
            named = set(PATH.findall(code_of(path))) - {top}
            edges.setdefault(top, set()).update(named)
    return {m: {n for n in named if n in edges} for m, named in edges.items()}


def cycles(graph):
    """The strongly connected parts of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    bad = 0
    for crate in sorted(os.listdir(top)):
        src = os.path.join(top, crate, "src")
        if not (os.path.isfile(os.path.join(top, crate, "Cargo.toml")) and os.path.isdir(src)):
            continue
        graph = graph_of(src)
        for part in cycles(graph):
            bad += 1
            print(f"{crate}: modules {', '.join(part)} import each other:")
            for a in part:
                for b in sorted(graph[a] & set(part)):
                    print(f"    {a} -> {b}")
    if bad:
        print(f"{bad} import cycle(s): move what both sides need below them both")
        return 1
    print("no import cycles between a crate's modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
