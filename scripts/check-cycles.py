#!/usr/bin/env python3
"""Fail if any source file imports, directly or through others, a file that imports it back.

Rust (each crate under crates/): a file depends on another when it names an item of the
other's module in a path: `use crate::a::b::{..}`, `use super::x`, `crate::a::f(..)` in code.
Each path is resolved to the longest module prefix that is a file of the crate (`a/mod.rs`,
`a.rs`); declaring a child (`mod b;`) is not a dependency, but a child naming its parent's items
(`super::X`) is, and so is a parent naming a child's. Test modules (`#[cfg(test)] mod ...` to the
end of a file) and macro paths (`crate::m!`) are left out.

Python (the package under python/): `import` and `from ... import` statements anywhere in a
module (inside functions too; not under `if TYPE_CHECKING:`). The package's own `__init__.py`
(its facade: the version and lazy re-exports) is left out; sub-packages' `__init__.py` are not.

    scripts/check-cycles.py            exit 1 and print each cycle, or print a one-line summary
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rust_modules(src: Path) -> dict[tuple[str, ...], Path]:
    mods: dict[tuple[str, ...], Path] = {}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).with_suffix("")
        parts = tuple(rel.parts)
        if parts in (("lib",), ("main",)):
            parts = ()
        elif parts[-1] == "mod":
            parts = parts[:-1]
        mods[parts] = f
    return mods


def strip_rust(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
    return text[: m.start()] if m else text


def expand_use(tree: str) -> list[str]:
    """`a::{b::C, d}` -> [`a::b::C`, `a::d`] (nested braces)."""
    tree = re.sub(r"\s+as\s+\w+", "", tree)  # renames
    tree = re.sub(r"\s+", "", tree)
    out: list[str] = []

    def go(prefix: str, s: str) -> None:
        i = s.find("{")
        if i < 0:
            for part in split_top(s):
                out.append(prefix + part)
            return
        head, body = s[:i], s[i + 1 : s.rfind("}")]
        for part in split_top(body):
            go(prefix + head, part)

    def split_top(s: str) -> list[str]:
        parts, depth, cur = [], 0, ""
        for ch in s:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        if cur:
            parts.append(cur)
        return [p for p in parts if p]

    go("", tree)
    return out


def resolve(path: list[str], here: tuple[str, ...], mods: dict) -> tuple[str, ...] | None:
    if not path:
        return None
    if path[0] == "crate":
        base, rest = (), path[1:]
    elif path[0] in ("super", "self"):
        base = here
        while path and path[0] in ("super", "self"):
            if path[0] == "super":
                base = base[:-1]
            path = path[1:]
        rest = path
    elif here + (path[0],) in mods:
        base, rest = here, path  # a child module, named relative to this one
    else:
        return None
    for n in range(len(rest), -1, -1):
        cand = base + tuple(rest[:n])
        if cand in mods:
            return cand
    return None


def rust_graph(src: Path) -> dict[Path, set[Path]]:
    mods = rust_modules(src)
    graph: dict[Path, set[Path]] = {f: set() for f in mods.values()}
    for here, f in mods.items():
        text = strip_rust(f.read_text())
        # mod.rs/lib.rs name their own module `self`; a.rs too: `here` is the module.
        paths: list[list[str]] = []
        for m in re.finditer(r"\buse\s+([^;]+);", text):
            for p in expand_use(m.group(1)):
                paths.append([x for x in p.split("::") if x])
        for m in re.finditer(r"(?<![\w:])(\w+(?:::\w+)+)(\s*!)?", text):
            if m.group(2):
                continue  # a macro path
            paths.append(m.group(1).split("::"))
        for p in paths:
            target = resolve(p, here, mods)
            if target is not None and target != here:
                graph[f].add(mods[target])
    return graph


def python_graph(pkg: Path) -> dict[Path, set[Path]]:
    name = pkg.name
    files = [f for f in pkg.rglob("*.py") if f != pkg / "__init__.py"]

    def module_of(f: Path) -> str:
        rel = f.relative_to(pkg.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join(parts)

    by_mod = {module_of(f): f for f in files}
    graph: dict[Path, set[Path]] = {f: set() for f in files}
    for f in files:
        tree = ast.parse(f.read_text())
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                for sub in ast.walk(node):
                    skip.add(id(sub))
        mod = module_of(f)
        is_pkg = f.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg_parts = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg_parts = pkg_parts[: len(pkg_parts) - (node.level - 1)]
                    base = ".".join(pkg_parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for t in targets:
                if not (t == name or t.startswith(name + ".")):
                    continue
                parts = t.split(".")
                for n in range(len(parts), 1, -1):
                    cand = ".".join(parts[:n])
                    if cand in by_mod:
                        if by_mod[cand] != f:
                            graph[f].add(by_mod[cand])
                        break
    return graph


def cycles(graph: dict[Path, set[Path]]) -> list[list[Path]]:
    """Strongly connected components of more than one file (Tarjan)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on: set[Path] = set()
    out: list[list[Path]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    graphs = {}
    for src in sorted(ROOT.glob("crates/*/src")):
        graphs[str(src.parent.relative_to(ROOT))] = rust_graph(src)
    for pkg in sorted(p.parent for p in ROOT.glob("python/*/__init__.py")):
        graphs[str(pkg.relative_to(ROOT))] = python_graph(pkg)
    bad = 0
    files = 0
    for name, g in graphs.items():
        files += len(g)
        for comp in cycles(g):
            bad += 1
            print(f"import cycle in {name}:", file=sys.stderr)
            for f in comp:
                deps = sorted(str(d.relative_to(ROOT)) for d in g[f] if d in comp)
                print(f"  {f.relative_to(ROOT)} -> {', '.join(deps)}", file=sys.stderr)
    if bad:
        print(f"check-cycles: {bad} import cycle(s)", file=sys.stderr)
        return 1
    print(f"check-cycles: no import cycles among {files} files of {len(graphs)} crates and packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
