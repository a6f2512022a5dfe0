"""The sweep file (TOML): which traces, base configurations, overrides and layouts make the
points of a sweep (docs/sweep.md)::

    traces = ["a.xlat", "workload:gups?size=1GiB&accesses=20000", "recipe:xz"]
    cpus = ["skylake"]          # base presets (and/or configs = ["my.toml"])
    set = ["os.policy=4k"]      # overrides every point has
    layouts = ["none", "lay.toml"]

    [axes]                      # the cross product of every axis ...
    "tlb.stlb.entries" = [768, 1536]

    [[points]]                  # ... and/or explicit points (overrides each)
    "tlb.stlb.entries" = 3072
    "os.policy" = "thp"

Points are traces x bases x layouts x (axis combinations, then explicit points). Relative paths
are taken from the sweep file's directory.
"""

from __future__ import annotations

import itertools
import os
import tomllib
from dataclasses import dataclass, field
from typing import Any

from xlat.sim import ConfigError, Run
from xlat.window import Window
from xlat.window import window as make_window

KEYS = ("traces", "cpus", "configs", "set", "layouts", "window", "axes", "points")
NO_LAYOUT = "none"


class SweepError(ValueError):
    """A sweep file, results directory or cluster a sweep cannot use (one sentence)."""


@dataclass(frozen=True)
class Point:
    """One simulation of a sweep: a trace under one configuration (base, overrides, layout)."""

    trace: str
    base_kind: str  # "cpu" or "config"
    base: str
    sets: tuple[str, ...]
    layout: str | None
    #: The values this point takes on the sweep's axes (and explicit points' keys), as text.
    axes: tuple[tuple[str, str], ...] = field(default=())

    def run(self) -> Run:
        kw = {self.base_kind: self.base}
        return Run(**kw, set=self.sets, layout=self.layout)

    @property
    def label(self) -> str:
        over = ",".join(f"{k}={v}" for k, v in self.axes)
        lay = f":{os.path.basename(self.layout)}" if self.layout else ""
        return f"{self.base}{lay}" + (f"[{over}]" if over else "")


@dataclass
class Sweep:
    path: str
    traces: list[str]
    points: list[Point]
    #: Every axis key (and explicit point key), in file order: the ``axis.*`` columns.
    axis_keys: list[str]
    #: The effective configuration of each (base kind, base, overrides, layout), as built.
    resolved: dict[tuple, dict] = field(default_factory=dict)
    #: The window of every trace (``window = {skip, warmup, limit}``; docs/windows.md).
    window: Window = field(default_factory=Window)
    #: Per axis key, the type of its ``axis.*`` column: "int", "float", "bool" or "string"
    #: (every value the sweep file gives the key decides it: 768 and 1536 are an int column).
    axis_types: dict[str, str] = field(default_factory=dict)


def axis_type(values: list[Any]) -> str:
    """The column type of an axis whose sweep-file values are ``values`` (TOML scalars)."""
    if values and all(isinstance(v, bool) for v in values):
        return "bool"
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if values and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "float"
    return "string"


def axis_value(text: str, typ: str) -> Any:
    """An axis value (as text, :func:`value_text`) as its column's type."""
    if typ == "bool":
        return text == "true"
    if typ == "int":
        return int(text)
    if typ == "float":
        return float(text)
    return text


def value_text(v: Any, where: str) -> str:
    """A TOML scalar as ``--set`` takes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float | str):
        return str(v)
    raise SweepError(f"{where}: values must be numbers, strings or booleans, not {type(v).__name__}")


def _strings(doc: dict, key: str, where: str) -> list[str]:
    v = doc.get(key, [])
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise SweepError(f"{where}: '{key}' must be a list of strings")
    return v


def _resolve(p: str, base_dir: str) -> str:
    if p.startswith(("workload:", "recipe:")):
        return p
    return os.path.normpath(os.path.join(base_dir, os.path.expanduser(p)))


def load(path: str) -> Sweep:
    """Read and check a sweep file: every configuration is built once (no simulation), so an
    unknown key, an empty axis or a value a structure cannot take is one sentence here."""
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise SweepError(f"cannot read the sweep file {path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{path} is not valid TOML: {e}") from None
    where = f"sweep file {path}"
    unknown = sorted(set(doc) - set(KEYS))
    if unknown:
        raise SweepError(f"{where}: unknown key '{unknown[0]}' (known: {', '.join(KEYS)})")
    base_dir = os.path.dirname(os.path.abspath(path))
    traces = [_resolve(t, base_dir) for t in _strings(doc, "traces", where)]
    if not traces:
        raise SweepError(f"{where}: 'traces' names no trace")
    for t in traces:
        if not t.startswith(("workload:", "recipe:")) and not os.path.isfile(t):
            raise SweepError(f"{where}: trace {t} does not exist")
    bases = [("cpu", c) for c in _strings(doc, "cpus", where)]
    bases += [("config", _resolve(c, base_dir)) for c in _strings(doc, "configs", where)]
    if not bases:
        bases = [("cpu", "skylake")]
    fixed = tuple(_strings(doc, "set", where))
    win = doc.get("window", {})
    if not isinstance(win, dict) or set(win) - {"skip", "warmup", "limit"}:
        raise SweepError(f"{where}: window must be a table of skip, warmup and limit (accesses)")
    try:
        window = make_window(**win)
    except ConfigError as e:
        raise SweepError(f"{where}: window: {e}") from None
    layouts: list[str | None] = [
        None if lay == NO_LAYOUT else _resolve(lay, base_dir) for lay in _strings(doc, "layouts", where)
    ] or [None]

    axes = doc.get("axes", {})
    if not isinstance(axes, dict):
        raise SweepError(f"{where}: [axes] must be a table of KEY = [values]")
    axis_lists: list[tuple[str, list[str]]] = []
    raw: dict[str, list[Any]] = {}
    for k, vals in axes.items():
        if not isinstance(vals, list):
            vals = [vals]
        if not vals:
            raise SweepError(f"{where}: axis '{k}' is empty: give it at least one value")
        axis_lists.append((k, [value_text(v, f"{where}: axis '{k}'") for v in vals]))
        raw.setdefault(k, []).extend(vals)
    explicit = doc.get("points", [])
    if not isinstance(explicit, list) or not all(isinstance(p, dict) for p in explicit):
        raise SweepError(f"{where}: [[points]] must be tables of KEY = value")
    combos: list[tuple[tuple[str, str], ...]] = []
    if axis_lists:
        keys = [k for k, _ in axis_lists]
        for vals in itertools.product(*(v for _, v in axis_lists)):
            combos.append(tuple(zip(keys, vals, strict=True)))
    for i, p in enumerate(explicit):
        combos.append(tuple((k, value_text(v, f"{where}: point {i + 1} key '{k}'")) for k, v in p.items()))
        for k, v in p.items():
            raw.setdefault(k, []).append(v)
    if not combos:
        combos = [()]
    axis_keys = [k for k, _ in axis_lists]
    for c in combos:
        axis_keys += [k for k, _ in c if k not in axis_keys]

    points = [
        Point(t, kind, base, fixed + tuple(f"{k}={v}" for k, v in c), lay, c)
        for t in traces
        for kind, base in bases
        for lay in layouts
        for c in combos
    ]
    resolved = check(points, axis_lists, where)
    types = {k: axis_type(raw.get(k, [])) for k in axis_keys}
    return Sweep(path, traces, points, axis_keys, resolved, window, types)


def check(points: list[Point], axis_lists: list[tuple[str, list[str]]], where: str) -> dict[tuple, dict]:
    """Build every distinct configuration once; name the axis (or point) that breaks it. Returns
    the effective configurations by (base kind, base, overrides, layout)."""
    from xlat._native import ConfigError

    if points:
        p = points[0]
        for k, vals in axis_lists:
            try:
                Point(p.trace, p.base_kind, p.base, (f"{k}={vals[0]}",), None).run().check()
            except ConfigError as e:
                raise SweepError(f"{where}: axis '{k}': {e}") from None
            except OSError as e:
                raise SweepError(f"{where}: cannot read {e.filename}: {e.strerror}") from None
    seen: dict[tuple, dict] = {}
    for p in points:
        k = (p.base_kind, p.base, p.sets, p.layout)
        if k in seen:
            continue
        try:
            seen[k] = p.run().check()
        except ConfigError as e:
            raise SweepError(f"{where}: point {p.label}: {e}") from None
        except OSError as e:
            raise SweepError(f"{where}: cannot read {e.filename}: {e.strerror}") from None
    return seen
