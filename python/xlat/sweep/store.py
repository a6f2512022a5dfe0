"""A sweep's results directory: one Parquet file per finished point, named by its key, written
to a hidden temporary name and renamed into place (so a kill at any moment leaves no partial
row and no duplicate), a zero-row schema file that every point's columns are merged into
before the point is written (``pandas.read_parquet(DIR)`` takes the first file's schema, and
``000-schema.parquet`` sorts first), a manifest with the xlat version, and the cache of trace
content hashes. Files starting with ``_`` or ``.`` are skipped by pandas/pyarrow readers.

A point's key hashes (docs/sweep.md):

- the trace's content (BLAKE2b of the file's bytes; for ``workload:`` specs the spec text, a
  workload being a deterministic function of its spec and of the xlat version),
- the configuration as xlat resolved it (the effective configuration, canonical JSON, not
  the sweep file's text),
- the layout as parsed (canonical JSON), and
- the xlat version.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from xlat.sweep.spec import SweepError

MANIFEST = "_manifest.json"
HASHES = "_trace-hashes.json"
SCHEMA_FILE = "000-schema.parquet"
POINT_RE = re.compile(r"^point-([0-9a-f]{32})\.parquet$")
FORMAT = 1
#: Identification columns (text) every row has, before the axes, counters and derived figures.
ID_COLUMNS = (
    "key",
    "trace",
    "trace_hash",
    "config_hash",
    "layout_hash",
    "xlat_version",
    "base",
    "config_name",
    "policy",
    "layout",
    "set",
    "sim_config_hash",
    "config_json",
)


def xlat_version() -> str:
    """What the key calls the version: the package's, the extension's and the result schema's."""
    import xlat
    from xlat import _native

    return f"xlat {xlat.__version__} (native {_native.__version__})"


def _h(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def config_hash(resolved: dict) -> str:
    return _h("config", canonical(resolved))


def layout_hash(path: str | None) -> str:
    if path is None:
        return _h("layout", "none")
    from xlat._native import check_layout

    with open(path, encoding="utf-8") as f:
        return _h("layout", canonical(json.loads(check_layout(os.path.basename(path), f.read()))))


def point_key(trace_h: str, config_h: str, layout_h: str, version: str) -> str:
    return _h("point", trace_h, config_h, layout_h, version)


def file_stat_key(path: str) -> list[int]:
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def content_hash(path: str) -> str:
    """BLAKE2b of the file's bytes (read in 1 MiB blocks)."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        while b := f.read(1 << 20):
            h.update(b)
    return h.hexdigest()


def spec_hash(spec: str) -> str:
    return _h("workload", spec)


def _write_atomic(path: str, data: bytes) -> None:
    tmp = os.path.join(os.path.dirname(path), f".tmp-{os.getpid()}-{os.path.basename(path)}")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Results:
    """An open results directory (created if missing)."""

    def __init__(self, root: str, version: str):
        self.root = root
        self.version = version
        os.makedirs(root, exist_ok=True)
        man = os.path.join(root, MANIFEST)
        if os.path.exists(man):
            try:
                with open(man) as f:
                    m = json.load(f)
                had = m["xlat_version"]
            except (OSError, ValueError, KeyError, TypeError):
                raise SweepError(f"{root} holds a damaged {MANIFEST}; it is not a sweep's results") from None
            if had != version:
                raise SweepError(
                    f"{root} was written by {had}, not by this {version}: its points cannot be reused "
                    "(the version is part of every point's key); give another results directory"
                )
        else:
            if any(POINT_RE.match(n) for n in os.listdir(root)):
                raise SweepError(f"{root} holds points but no {MANIFEST}; it is not a sweep's results")
            _write_atomic(man, (canonical({"format": FORMAT, "xlat_version": version}) + "\n").encode())
        self._clean_temporaries()
        self._hashes: dict[str, Any] = self._load_hashes()
        self._schema = self._load_schema()

    def _clean_temporaries(self) -> None:
        """Remove what killed writers left (``.tmp-PID-...``), unless that process still runs."""
        for n in os.listdir(self.root):
            m = re.match(r"^\.tmp-(\d+)-", n)
            if not m:
                continue
            pid = int(m.group(1))
            try:
                os.kill(pid, 0)
                alive = pid != os.getpid()
            except ProcessLookupError:
                alive = False
            except PermissionError:
                alive = True
            if not alive:
                os.unlink(os.path.join(self.root, n))

    def _load_hashes(self) -> dict[str, Any]:
        try:
            with open(os.path.join(self.root, HASHES)) as f:
                d = json.load(f)
            return d if isinstance(d, dict) else {}
        except (OSError, ValueError):
            return {}

    def trace_hash(self, trace: str) -> str:
        """The trace's content hash; for files, computed once and cached by (path, size, mtime,
        ctime, inode): a file rewritten in place changes its ctime, which no user can set."""
        if trace.startswith("workload:"):
            return spec_hash(trace)
        path = os.path.abspath(trace)
        st = file_stat_key(path)
        hit = self._hashes.get(path)
        if isinstance(hit, dict) and hit.get("stat") == st:
            return str(hit["hash"])
        h = content_hash(path)
        self._hashes[path] = {"stat": st, "hash": h}
        _write_atomic(os.path.join(self.root, HASHES), (canonical(self._hashes) + "\n").encode())
        return h

    def done(self) -> set[str]:
        """Keys of the points already written."""
        return {m.group(1) for n in os.listdir(self.root) if (m := POINT_RE.match(n))}

    def _load_schema(self):
        import pyarrow.parquet as pq

        p = os.path.join(self.root, SCHEMA_FILE)
        return pq.read_schema(p) if os.path.exists(p) else None

    def write(self, key: str, row: dict[str, Any]) -> None:
        """Write one finished point: merge its columns into the schema file first (so a kill
        in between loses no column), then the point's file under a temporary name, renamed."""
        import pyarrow as pa

        table = pa.Table.from_pylist([row], schema=row_schema(row))
        if self._schema is None or any(self._schema.get_field_index(f.name) < 0 for f in table.schema):
            fields = list(self._schema) if self._schema is not None else []
            have = {f.name for f in fields}
            merged = pa.schema(fields + [f for f in table.schema if f.name not in have])
            self._write_table(merged.empty_table(), SCHEMA_FILE)
            self._schema = merged
        self._write_table(table, f"point-{key}.parquet")

    def _write_table(self, table, name: str) -> None:
        import pyarrow.parquet as pq

        final = os.path.join(self.root, name)
        tmp = os.path.join(self.root, f".tmp-{os.getpid()}-{name}")
        pq.write_table(table, tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)


def row_schema(row: dict[str, Any]):
    """Column types by name: identification and axis columns are text, ``derived.*`` float64,
    counters int64 (the same in every file, so the files of a dataset always agree)."""
    import pyarrow as pa

    def typ(k: str):
        if k in ID_COLUMNS or k.startswith("axis."):
            return pa.string()
        if k.startswith("derived."):
            return pa.float64()
        return pa.int64()

    return pa.schema([(k, typ(k)) for k in row])
