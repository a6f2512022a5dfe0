"""The one JSON shape every command writes with ``--json`` (docs/results-schema.md).

A document is an object::

    {"schema": "xlat-results", "schema_version": 1, "xlat_version": "0.1.0",
     "command": "sim", "argv": ["sim", "--cpu", "skylake", "bfs.xlat", "--json"],
     "results": [{"kind": "sim", "provenance": {...}, ...the command's fields...}, ...]}

``results`` is always a list, one entry per configuration, design, curve set or sample run,
and every entry carries its ``provenance``:

* ``trace``: what was read: ``{"spec", "path", "bytes", "sha256"}`` for a file (``spec`` as
  given, ``path`` absolute, the SHA-256 of its bytes), ``{"spec", "path": null, ...}`` for a
  generated workload (the spec is the identity: workloads are deterministic), or null;
* ``window``: ``{"skip", "warmup", "limit"}`` in accesses (docs/windows.md), or null for the
  whole trace, all counted;
* ``config``: the full resolved configuration the result was simulated under (defaults filled
  in, overrides applied), or null when the command has none;
* ``inputs``: other files the command read (a counts file, a layout), each ``{"spec", "path",
  "bytes", "sha256"}``.

The JSON Schema is ``xlat/schema/xlat-results-1.schema.json`` (:func:`schema`); the tests
validate every command's output against it. :func:`load` reads a document, and also the shapes
xlat wrote before it (one object, ``{"results": [...]}``, a bare list).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA", "SCHEMA_VERSION", "document", "file_identity", "load", "schema", "trace_identity"]

SCHEMA = "xlat-results"
SCHEMA_VERSION = 1

#: Prefixes of trace specs whose rest is a file (``lackey:run.log``); ``workload:`` and
#: ``recipe:`` specs are generated or resolved by name.
_FILE_PREFIXES = ("lackey:", "champsim:", "qemu-raw:", "drmemtrace:")
_GENERATED_PREFIXES = ("workload:", "recipe:")


def _sha256(path: Path, st: os.stat_result) -> str:
    """SHA-256 of the file's bytes, remembered in the user cache under (device, inode, size,
    modification and change times), so a multi-GiB trace is hashed once, not on every run (1.1
    GB/s here); a file rewritten in place changes its change time, which no user can set."""
    from xlat._data import cache_dir

    stat_key = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    key = hashlib.sha256(stat_key.encode()).hexdigest()[:32]
    memo = cache_dir() / "sha256" / key
    try:
        text = memo.read_text().strip()
        if len(text) == 64:
            return text
    except OSError:
        pass
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    try:  # a cache that cannot be written costs time, not correctness
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(digest + "\n")
        tmp.replace(memo)
    except OSError:
        pass
    return digest


def file_identity(spec: str | os.PathLike, path: str | os.PathLike | None = None) -> dict[str, Any]:
    """``{"spec", "path", "bytes", "sha256"}`` of a file (``path``, default ``spec``); a file that
    cannot be read (stdin, gone) has null ``path``, ``bytes`` and ``sha256``."""
    p = Path(spec if path is None else path)
    try:
        st = p.stat()
        if not p.is_file():
            raise OSError
        return {"spec": str(spec), "path": str(p.resolve()), "bytes": st.st_size, "sha256": _sha256(p, st)}
    except OSError:
        return {"spec": str(spec), "path": None, "bytes": None, "sha256": None}


def trace_identity(spec: str | os.PathLike | None) -> dict[str, Any] | None:
    """What identifies the trace ``spec``: a file's path, size and SHA-256 (also behind an
    importer prefix: ``lackey:run.log``), or the spec of a generated workload alone."""
    if spec is None:
        return None
    s = str(spec)
    if s.startswith(_GENERATED_PREFIXES):
        return {"spec": s, "path": None, "bytes": None, "sha256": None}
    if not Path(s).exists():
        for prefix in _FILE_PREFIXES:
            if s.startswith(prefix):
                return file_identity(s, s[len(prefix) :].split("?", 1)[0])
    return file_identity(s)


def _window(w: Any) -> dict[str, Any] | None:
    """A window as the schema writes it: None (the whole trace, all counted) or its three
    fields; accepts a :class:`xlat.window.Window`, a mapping, or the CLI's keyword arguments."""
    from xlat.window import Window

    if w is None:
        return None
    if isinstance(w, Mapping):
        w = Window(int(w.get("skip") or 0), int(w.get("warmup") or 0), w.get("limit"))
    return None if w.whole else {"skip": w.skip, "warmup": w.warmup, "limit": w.limit}


def _finite(x: Any) -> Any:
    """``x`` with every NaN or infinite float as None: JSON has no NaN (``json.dump`` would write
    ``NaN``, which strict parsers and JSON Schema reject), and "no value" is what it means here."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def document(
    command: str,
    results: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    *,
    kind: str | None = None,
    trace: str | os.PathLike | None = None,
    window: Any = None,
    config: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
    inputs: Sequence[str | os.PathLike] = (),
    argv: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The document of ``command``'s ``results`` (one mapping, or a list of them; each becomes
    one entry, its ``kind`` default ``command``). ``trace``, ``window`` and ``inputs`` are every
    entry's provenance; ``config`` is one configuration for all, or a list parallel to
    ``results``. An entry that brings its own ``provenance`` keeps the fields it sets."""
    from xlat import __version__

    rows = [results] if isinstance(results, Mapping) else list(results)
    configs = list(config) if isinstance(config, Sequence) else [config] * len(rows)
    if len(configs) != len(rows):
        raise ValueError(f"{len(configs)} configurations for {len(rows)} results")
    base = {
        "trace": trace_identity(trace),
        "window": _window(window),
        "inputs": [file_identity(i) for i in inputs],
    }
    out = []
    for row, cfg in zip(rows, configs, strict=True):
        entry = {"kind": kind or command, **row}
        prov = {**base, "config": None if cfg is None else dict(cfg), **dict(row.get("provenance") or {})}
        prov["window"] = _window(prov["window"])
        entry["provenance"] = prov
        out.append(entry)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "xlat_version": __version__,
        "command": command,
        "argv": None if argv is None else list(argv),
        "results": _finite(out),
    }


def load(source: str | os.PathLike | Mapping[str, Any] | Sequence[Any]) -> list[dict[str, Any]]:
    """The results of a ``--json`` document (a path, or the parsed JSON) as a list. Reads the
    shapes xlat wrote before the schema too: one object (one result), ``{"results": [...]}`` and
    a bare list."""
    if isinstance(source, (str, os.PathLike)):
        with open(source) as f:
            source = json.load(f)
    if isinstance(source, Mapping):
        if isinstance(source.get("results"), list):
            return [dict(r) for r in source["results"]]
        return [dict(source)]
    if isinstance(source, Sequence):
        return [dict(r) for r in source]
    raise TypeError(f"not a results document: {type(source).__name__}")


def schema() -> dict[str, Any]:
    """The JSON Schema of the document (draft 2020-12)."""
    from importlib.resources import files

    return json.loads(files("xlat").joinpath("schema", f"{SCHEMA}-{SCHEMA_VERSION}.schema.json").read_text())
