"""A sweep's results directory: one Parquet file per finished point, named by its key, written
to a hidden temporary name and renamed into place (so a kill at any moment leaves no partial
row and no duplicate), a zero-row schema file that every point's columns are merged into
before the point is written (``pandas.read_parquet(DIR)`` takes the first file's schema, and
``000-schema.parquet`` sorts first), a manifest with the xlat version, the cache of trace
content hashes, and the list of point files already read whole (a point file that cannot be
read is moved to ``_damaged/`` and its point runs again). Files starting with ``_`` or ``.`` are
skipped by pandas/pyarrow readers.

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
from dataclasses import dataclass
from typing import Any

from xlat.sweep.spec import SweepError

MANIFEST = "_manifest.json"
HASHES = "_trace-hashes.json"
SCHEMA_FILE = "000-schema.parquet"
#: Where point and schema files that cannot be read are moved (readers skip ``_`` names).
DAMAGED = "_damaged"
#: The point files read whole once, by name: their (size, mtime, ctime, inode) then.
CHECKED = "_checked-points.json"
UNREADABLE = "unreadable (truncated or damaged)"
POINT_RE = re.compile(r"^point-([0-9a-f]{32})\.parquet$")
#: 2: axis columns typed (int, float, bool or string, from the sweep file's values); 1 had text.
FORMAT = 2
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
    "contiguity_json",
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


def window_hash(trace_h: str, window: Any) -> str:
    """The trace's hash with a window of it (xlat.window.Window) folded in, for point keys."""
    return _h("window", trace_h, canonical(list(window)))


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
            if had == version and m.get("format") != FORMAT:
                raise SweepError(
                    f"{root} holds results in format {m.get('format')} (text axis columns), this xlat writes "
                    f"format {FORMAT} (typed ones): give another results directory"
                )
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
        #: Files found unreadable and set aside in ``_damaged/`` (:class:`Damaged`).
        self.damaged: list[Damaged] = []
        self._done = self._check_points()
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
        return self._load_json(HASHES)

    def _load_json(self, name: str) -> dict[str, Any]:
        """A cache file's object; an unreadable one is an empty cache."""
        try:
            with open(os.path.join(self.root, name)) as f:
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
        """Keys of the points already written (whole: see :meth:`_check_points`)."""
        return set(self._done)

    def _check_points(self) -> set[str]:
        """Read every point file whole once: one that cannot be read (a truncated copy, a disk
        that filled up, an edit) or does not hold its key's one row is set aside
        (:meth:`_set_aside`) and is not done, so the sweep runs it again. Files found whole are
        remembered in ``_checked-points.json`` by (size, mtime, ctime, inode), as trace hashes
        are, and not read again while these stay the same (a point is never rewritten in place;
        any write changes the ctime). Returns the keys done."""
        checked = self._load_json(CHECKED)
        keys: set[str] = set()
        now: dict[str, list[int]] = {}
        for n in sorted(os.listdir(self.root)):
            if not (m := POINT_RE.match(n)):
                continue
            path = os.path.join(self.root, n)
            try:
                st = file_stat_key(path)
                why = None if checked.get(n) == st else _unusable_point(path, m.group(1))
            except FileNotFoundError:  # set aside by a sweep running beside this one
                continue
            if why is not None:
                self._set_aside(n, m.group(1), why)
                continue
            keys.add(m.group(1))
            now[n] = st
        if now != checked:
            _write_atomic(os.path.join(self.root, CHECKED), (canonical(now) + "\n").encode())
        return keys

    def _set_aside(self, name: str, key: str | None, why: str) -> None:
        """Move ``name`` to ``_damaged/`` (kept for inspection, out of the dataset's way)."""
        d = os.path.join(self.root, DAMAGED)
        os.makedirs(d, exist_ok=True)
        try:
            os.replace(os.path.join(self.root, name), os.path.join(d, name))
        except FileNotFoundError:  # a sweep running beside this one moved it first, and says so
            return
        self.damaged.append(Damaged(os.path.join(self.root, name), os.path.join(d, name), key, why))

    def _load_schema(self):
        """The schema file's columns; an unreadable one is set aside and made again from the
        points' own schemas (the union of their columns)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        p = os.path.join(self.root, SCHEMA_FILE)
        if not os.path.exists(p):
            return None
        try:
            return pq.read_schema(p)
        except PermissionError:
            raise
        except (pa.ArrowException, OSError):
            self._set_aside(SCHEMA_FILE, None, UNREADABLE)
        if not self._done:
            return None
        fields: list = []
        have: set[str] = set()
        for key in sorted(self._done):
            sch = pq.read_schema(self.point_path(key))
            fields += [f for f in sch if f.name not in have]
            have |= {f.name for f in sch}
        merged = pa.schema(fields)
        self._write_table(merged.empty_table(), SCHEMA_FILE)
        return merged

    def write(self, key: str, row: dict[str, Any], axis_types: dict[str, str] | None = None) -> None:
        """Write one finished point: merge its columns into the schema file first (so a kill
        in between loses no column), then the point's file under a temporary name, renamed.
        A column whose type differs from the one earlier points gave it is one sentence."""
        import pyarrow as pa

        table = pa.Table.from_pylist([row], schema=row_schema(row, axis_types))
        if self._schema is not None:
            for f in table.schema:
                i = self._schema.get_field_index(f.name)
                if i >= 0 and self._schema.field(i).type != f.type:
                    raise SweepError(
                        f"column {f.name} is {self._schema.field(i).type} in {self.root}'s earlier points but "
                        f"{f.type} in this sweep (an axis given values of another type); give another "
                        "results directory"
                    )
        if self._schema is None or any(self._schema.get_field_index(f.name) < 0 for f in table.schema):
            fields = list(self._schema) if self._schema is not None else []
            have = {f.name for f in fields}
            merged = pa.schema(fields + [f for f in table.schema if f.name not in have])
            self._write_table(merged.empty_table(), SCHEMA_FILE)
            self._schema = merged
        self._write_table(table, os.path.basename(self.point_path(key)))

    def point_path(self, key: str) -> str:
        """The file of the finished point ``key``."""
        return os.path.join(self.root, f"point-{key}.parquet")

    def read(self, key: str) -> dict[str, Any]:
        """The row of the finished point ``key``."""
        import pyarrow.parquet as pq

        return pq.read_table(self.point_path(key)).to_pylist()[0]

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


def _unusable_point(path: str, key: str) -> str | None:
    """Why the point file ``path`` cannot be used, or None when it reads whole as one row of
    ``key``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as f:
            t = f.read(use_threads=False)
    except (PermissionError, FileNotFoundError):
        raise
    except (pa.ArrowException, OSError):
        return UNREADABLE
    if t.num_rows != 1 or "key" not in t.column_names or t.column("key")[0].as_py() != key:
        return "not the one row of its key"
    return None


@dataclass(frozen=True)
class Damaged:
    """A file of the results directory that could not be used, and where it went."""

    path: str
    moved_to: str
    #: The point's key (None: the schema file).
    key: str | None
    why: str

    def message(self, in_sweep: bool) -> str:
        """One sentence for stderr."""
        if self.key is None:
            return (
                f"sweep schema file {self.path} is {self.why}; moved it to {self.moved_to} and "
                "made it again from the points' columns"
            )
        then = "running it again" if in_sweep else "it is not a point of this sweep, so it is not run again"
        return f"sweep point {self.path} is {self.why}; moved it to {self.moved_to}, {then}"


def row_schema(row: dict[str, Any], axis_types: dict[str, str] | None = None):
    """Column types by name: identification columns are text, ``axis.KEY`` the sweep file's type
    for KEY (``axis_types``: int64, float64, bool or text), ``derived.*`` float64, counters int64
    (the same in every file, so the files of a dataset always agree)."""
    import pyarrow as pa

    arrow = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "string": pa.string()}

    def typ(k: str):
        if k.startswith("axis."):
            return arrow[(axis_types or {}).get(k.removeprefix("axis."), "string")]
        if k in ID_COLUMNS:
            return pa.string()
        if k.startswith("derived."):
            return pa.float64()
        return pa.int64()

    return pa.schema([(k, typ(k)) for k in row])
