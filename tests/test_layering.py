"""The Python package's layering: the library never imports the command line, and no module
imports itself back through others (scripts/check-cycles.py's rules)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "python" / "xlat"


def _imports(path: Path) -> set[str]:
    """Every module an ``import`` or ``from ... import`` anywhere in ``path`` names (absolute)."""
    mod = ".".join(path.relative_to(PKG.parent).with_suffix("").parts)
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = mod.split(".")[: -node.level]
                base = ".".join([*parts, base] if base else parts)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def test_library_modules_never_import_the_cli():
    # The entry points (python -m xlat, python -m xlat.mosaic) are the only way in from outside.
    entry_points = {PKG / "__main__.py", PKG / "mosaic" / "__main__.py"}
    library = [p for p in PKG.rglob("*.py") if "cli" not in p.relative_to(PKG).parts[:1]]
    assert len(library) > 20
    offenders = {
        str(p.relative_to(PKG)): sorted(
            m for m in _imports(p) if m == "xlat.cli" or m.startswith("xlat.cli.")
        )
        for p in library
        if p not in entry_points
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_import_cycles_in_the_python_package():
    spec = importlib.util.spec_from_file_location("check_cycles", ROOT / "scripts" / "check-cycles.py")
    assert spec is not None and spec.loader is not None
    check_cycles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check_cycles)
    graph = check_cycles.python_graph(PKG)
    assert PKG / "cli" / "common.py" in graph[PKG / "cli" / "sim.py"], "the graph sees the CLI's imports"
    cycles = [[str(f.relative_to(PKG)) for f in comp] for comp in check_cycles.cycles(graph)]
    assert cycles == []


def test_mosaic_commands_need_no_rust_extension(tmp_path):
    """`python -m xlat.mosaic` (and so xlat.cli.run) works before the Rust extension is built."""
    code = (
        "import runpy, sys\n"
        "sys.modules['xlat._native'] = None  # any import of it now fails\n"
        "sys.argv = ['xlat.mosaic', 'run', '--layout', sys.argv[1], '--', 'true']\n"
        "runpy.run_module('xlat.mosaic', run_name='__main__', alter_sys=True)\n"
    )
    missing = tmp_path / "missing.toml"
    r = subprocess.run([sys.executable, "-c", code, str(missing)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"xlat: error: layout file '{missing}' does not exist, nor is it a shipped")
    assert r.stderr.count("\n") == 1
