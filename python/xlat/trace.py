"""Traces and workloads from Python: open, iterate, read into numpy, convert, summarise."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any, NamedTuple

from xlat import _native
from xlat._native import EventError, TraceError, TraceIOError, WorkloadError, XlatError

__all__ = [
    "Accesses",
    "Event",
    "EventError",
    "Trace",
    "TraceError",
    "TraceIOError",
    "WorkloadError",
    "XlatError",
    "convert",
    "export_champsim",
    "open",
    "read_accesses",
    "trace_info",
    "workload",
    "workloads",
]

#: Access kinds as stored in the ``kind`` column.
KINDS = {0: "load", 1: "store", 2: "ifetch"}


class Event(NamedTuple):
    """One event. ``type`` is ``"access"``, ``"syscall"`` or ``"marker"``.

    Accesses fill ``kind`` (``"L"``, ``"S"``, ``"I"``), ``addr`` and ``size``; syscalls fill
    ``name``, ``args`` and ``ret``; markers fill ``name`` and ``fields``.
    """

    type: str
    tid: int
    icount: int
    kind: str | None = None
    addr: int | None = None
    size: int | None = None
    name: str | None = None
    args: tuple[int, ...] | None = None
    ret: int | None = None
    fields: dict[str, Any] | None = None


def _event(t: tuple) -> Event:
    if t[0] == "access":
        _, tid, icount, kind, addr, size = t
        return Event("access", tid, icount, kind=kind, addr=addr, size=size)
    if t[0] == "syscall":
        _, _pos, tid, icount, name, args, ret = t
        return Event("syscall", tid, icount, name=name, args=tuple(args), ret=ret)
    _, _pos, tid, icount, name, fields, _ = t
    return Event("marker", tid, icount, name=name, fields=fields)


class Trace:
    """An event source opened for reading: a trace file, a text trace or a workload spec.

    Each call of :meth:`batches` or :meth:`events` reads the source from its start, through a
    reader of its own: a second pass restarts, and threads that share a ``Trace`` each read
    all of it. (One iterator shared by threads is Python's own: it refuses to run twice at
    once.)
    """

    def __init__(self, spec: str):
        self.spec = str(spec)
        self._src = _native.Source(self.spec)
        self._fresh = True
        self._lock = threading.Lock()
        self.header: dict[str, Any] = json.loads(self._src.header_json())

    def __repr__(self) -> str:
        return f"xlat.Trace({self.spec!r}, producer={self.header.get('producer')!r})"

    @property
    def footer(self) -> dict[str, Any] | None:
        """Totals of a trace file, available once the latest pass has read it to the end."""
        f = self._src.footer_json()
        return None if f is None else json.loads(f)

    def _reader(self) -> Any:
        """A reader at the start of the source: the one opened with the header the first time,
        a new one after."""
        with self._lock:
            if self._fresh:
                self._fresh = False
            else:
                self._src = _native.Source(self.spec)
            return self._src

    def batches(self) -> Iterator[dict[str, Any]]:
        """Yield batches as dicts of numpy columns ``addr`` (uint64), ``icount`` (uint64),
        ``tid`` (uint32), ``size`` (uint16), ``kind`` (uint8: 0 load, 1 store, 2 ifetch),
        and ``side``: the syscalls and markers, as tuples whose second item is the index of the
        access they precede. Every call reads the source from its start."""
        src = self._reader()
        while (b := src.next_batch()) is not None:
            yield b

    def events(self) -> Iterator[Event]:
        """Yield every event in order as an :class:`Event` (convenient, not fast). Every call
        reads the source from its start."""
        src = self._reader()
        while (evs := src.next_events()) is not None:
            for t in evs:
                yield _event(t)


def open(spec: str) -> Trace:
    """Open a trace file, a text trace or a ``workload:`` spec."""
    return Trace(spec)


class Accesses(dict):
    """The accesses of :func:`read_accesses`: a dict of equal-length numpy columns (``addr``,
    ``icount``, ``tid``, ``size``, ``kind``), so that ``pandas.DataFrame(acc)`` is one row per
    access; the side events (syscalls and markers, as tuples whose second item is the index of
    the access they precede) are the attribute ``side``, not a column."""

    side: list


def read_accesses(spec: str, limit: int | None = None, progress: bool = False, skip: int = 0) -> Accesses:
    """Read up to ``limit`` accesses, after passing over ``skip``, into numpy columns (see
    :meth:`Trace.batches` and :class:`Accesses`; the skipped part's side events are kept, as in
    :mod:`xlat.window`).

    The GIL is released while reading.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, not {limit}")
    if skip < 0:
        raise ValueError(f"skip must be >= 0, not {skip}")
    raw = _native.read_accesses(str(spec), limit, progress, skip)
    side = raw.pop("side")
    acc = Accesses(raw)
    acc.side = side
    return acc


# Trace format versions this xlat writes, oldest first (the last is the current one).
FORMAT_VERSIONS = ("1.0", "1.1", "1.2")


def convert(
    spec: str, out: str, level: int = 3, progress: bool = False, format_version: str = FORMAT_VERSIONS[-1]
) -> dict[str, Any]:
    """Write ``spec`` to ``out``: the text form if ``out`` ends in ``.txt``, else the compressed
    xlat format (zstd ``level`` 1-19) in ``format_version`` ("1.2", the current one, with
    numbered blocks; "1.1" or "1.0" for older readers). Returns a summary dict. Converting a
    1.0/1.1 file to 1.2 upgrades it, so that reordered or dropped blocks are detected."""
    if not 1 <= level <= 19:
        raise ValueError(f"level must be between 1 and 19, not {level}")
    if format_version not in FORMAT_VERSIONS:
        raise ValueError(
            f"format_version must be one of {', '.join(FORMAT_VERSIONS)}, not {format_version!r}"
        )
    minor = int(format_version.split(".")[1])
    return json.loads(_native.convert(str(spec), str(out), level, progress, minor))


def export_champsim(
    spec: str, out: str, tid: int | None = None, level: int = 1, progress: bool = False
) -> dict[str, Any]:
    """Write thread ``tid`` of ``spec`` (None: its only thread) as a ChampSim trace to ``out``:
    one 64-byte ``input_instr`` record per instruction, xz-compressed if ``out`` ends in ``.xz``
    (preset ``level`` 0-9), gzip for ``.gz``, else raw. Loads fill the 4 ``source_memory``
    slots and stores the 2 ``destination_memory`` slots; those beyond are dropped and counted
    (``dropped_loads``, ``dropped_stores``). An instruction's ip is its first instruction
    fetch's address, or synthetic where the trace has none (``synthetic_ips``; see
    docs/importers.md). Returns the summary (records, loads, stores, first_icount, ...)."""
    if not 0 <= level <= 9:
        raise ValueError(f"level must be between 0 and 9, not {level}")
    return json.loads(_native.export_champsim(str(spec), str(out), tid, level, progress))


def cut(
    spec: str, out: str, skip: int = 0, limit: int | None = None, level: int = 3, progress: bool = False
) -> dict[str, Any]:
    """Write the window of ``spec`` that passes over ``skip`` accesses and keeps the next
    ``limit`` (all with None) to ``out`` as a valid trace (text if ``out`` ends in ``.txt``):
    the skipped part's side events are kept, before the first access written, so that the OS
    model builds the same mappings; side events after the last access kept are dropped. Returns
    the summary of :func:`convert` (accesses, side events, bytes, path)."""
    from xlat.window import window

    win = window(skip, 0, limit)
    if not 1 <= level <= 19:
        raise ValueError(f"level must be between 1 and 19, not {level}")
    minor = int(FORMAT_VERSIONS[-1].split(".")[1])
    return json.loads(_native.convert(str(spec), str(out), level, progress, minor, win.native()))


def trace_info(spec: str, progress: bool = False) -> dict[str, Any]:
    """Counts, threads, syscalls, footprint and duration of a trace (read once, in full)."""
    return json.loads(_native.trace_info(str(spec), progress))


def workloads() -> list[dict[str, Any]]:
    """The synthetic workloads with their parameters and defaults."""
    return json.loads(_native.workloads())


def workload(name: str, **params: Any) -> str:
    """Build a workload spec, checking the name and parameters now rather than at first use::

    >>> workload("gups", size="8GiB", seed=2, accesses=10**6)
    'workload:gups?size=8GiB&seed=2&accesses=1000000'
    """
    spec = f"workload:{name}" + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
    _native.Source(spec)  # validates (cheap: nothing is generated until read)
    return spec
