"""The address-translation simulator from Python.

Run a trace or workload through a CPU preset (or a configuration file), optionally with
``--set``-style overrides and a mosaic layout, and get a :class:`SimResult`::

    >>> import xlat.sim as sim
    >>> r = sim.simulate("workload:gups?size=1GiB&accesses=20000", cpu="skylake", set=["os.policy=thp"])
    >>> r.counters["accesses"]
    20000
    >>> r.counters["walker.walks"] <= r.counters["tlb_level1.data.misses"]
    True
    >>> row = r.to_pandas()  # one row: every counter and derived metric

Several configurations over one trace run in parallel on all cores (results in the given order,
identical whatever the thread count)::

    >>> rs = sim.simulate_many("workload:gups?size=1GiB&accesses=20000",
    ...                        [sim.Run(cpu="skylake"), sim.Run(cpu="skylake", set=["os.policy=thp"])])
    >>> [r.policy for r in rs]
    ['4k', 'thp-always']

The result's JSON schema is documented in ``docs/simulator.md``; configurations in
``docs/config.md``; presets in ``docs/presets.md``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlat import _native
from xlat._data import configs_dir
from xlat._native import ConfigError, SimulationError

__all__ = [
    "ConfigError",
    "Run",
    "SimResult",
    "SimResults",
    "SimulationError",
    "preset",
    "presets",
    "simulate",
    "simulate_many",
]


def presets() -> list[str]:
    """Names of the built-in CPU presets (``configs/cpus/*.toml``)."""
    return list(_native.presets())


def preset(name: str) -> str:
    """The TOML text of a CPU preset."""
    return _native.preset(name)


@dataclass(frozen=True)
class Run:
    """One configuration: a preset (``cpu``) or a TOML file (``config``), overrides (``set``:
    ``--set``-style ``"key=value"`` strings, or a mapping ``{"tlb.stlb.entries": 3072}``), the OS
    page-size ``policy`` (``"4k"``, ``"thp"``; ``os.policy``), and optionally a mosaic layout
    file (which selects the mosaic policy)."""

    cpu: str | None = None
    config: str | None = None
    set: Sequence[str] | Mapping[str, Any] = field(default_factory=tuple)
    layout: str | None = None
    policy: str | None = None

    def _native_args(self) -> tuple[str, str, list[str], tuple[str, str] | None]:
        if (self.cpu is None) == (self.config is None):
            raise ConfigError("give exactly one of cpu= (a preset name) and config= (a TOML file).")
        if self.cpu is not None:
            what, text = self.cpu, preset(self.cpu)
        else:
            what = str(config_file(self.config))
            with open(what, encoding="utf-8") as f:
                text = f.read()
        lay = None
        if self.layout is not None:
            from xlat.layout import LayoutError, layout_file

            try:
                path = layout_file(self.layout)  # a file, or a shipped layout's name (all-2MB)
            except LayoutError as e:
                raise ConfigError(str(e)) from None
            lay = (os.path.basename(str(path)), path.read_text(encoding="utf-8"))
        return what, text, self.overrides(), lay

    def overrides(self) -> list[str]:
        """The ``--set`` overrides this run applies, in order: ``set`` as ``key=value`` strings,
        then ``os.policy`` for ``policy``."""
        sets = _overrides(self.set)
        if self.policy is not None:
            sets.append(f"os.policy={self.policy}")
        return sets

    def check(self) -> dict[str, Any]:
        """Build this configuration without simulating: the effective configuration, or the
        :class:`ConfigError` a simulation would raise."""
        return json.loads(_native.check_config(*self._native_args()))


#: The design configurations shipped with xlat, by name (``configs/DIR/NAME.toml``, package
#: data: ``rainbow/hscc-4kb``, ``lite/tlb-lite``, ``rmm/rmm``, ``mach/ptlb``, ...).
NAMED_CONFIGS = configs_dir()
_CONFIG_DIRS = ("lite", "rmm", "mach", "rainbow", "virt", "hashed", "calibrated", "examples")


def config_names() -> list[str]:
    """Names of the shipped design configurations (``DIR/NAME``)."""
    return sorted(f"{d}/{p.stem}" for d in _CONFIG_DIRS for p in (NAMED_CONFIGS / d).glob("*.toml"))


def config_file(name_or_path: str | os.PathLike) -> Path:
    """A configuration file: ``name_or_path`` if it exists, else the shipped configuration of that
    name (``--config rainbow/hscc-4kb``); one sentence (``ConfigError``) if neither."""
    p = Path(name_or_path)
    if p.exists():
        return p
    named = NAMED_CONFIGS / f"{name_or_path}.toml"
    if str(name_or_path).split("/")[0] in _CONFIG_DIRS and named.is_file():
        return named
    raise ConfigError(
        f"configuration file '{p}' does not exist, nor is it a shipped configuration's name "
        f"(DIR/NAME: {', '.join(config_names())})."
    )


def short_trace(trace: str, width: int = 70) -> str:
    """A trace path or spec for a plot's title: its last ``width`` characters at most."""
    return trace if len(trace) <= width else "..." + trace[-(width - 3) :]


def _toml_value(text: str) -> Any:
    """A ``--set`` value as the configuration reads it: TOML (``3072``, ``true``, ``"lru"``), else
    the text itself (``thp``)."""
    import tomllib

    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _inline_toml(v: Any) -> str:
    """A value of ``set={...}`` as inline TOML: ``true``, ``3072``, ``["4KB", "2MB"]``, and a
    mapping as an inline table (``{"tlb.l2x": {"level": 2, ...}}`` adds a structure)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k} = {_inline_toml(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_inline_toml(x) for x in v) + "]"
    raise ConfigError(f"set= cannot give the value {v!r} ({type(v).__name__}) in a configuration.")


def _overrides(s: Any) -> list[str]:
    """``set=`` as ``key=value`` strings: one string, a sequence of them, or a mapping."""
    if isinstance(s, str):
        return [s]
    if isinstance(s, Mapping):
        return [f"{k}={v if isinstance(v, str) else _inline_toml(v)}" for k, v in s.items()]
    if isinstance(s, Iterable) and all(isinstance(x, str) for x in s):
        return list(s)
    raise ConfigError(
        f"set= takes 'key=value' strings or a mapping {{'key': value}}, not {type(s).__name__} {s!r}."
    )


class SimResult:
    """The result of one simulation: ``counters`` (flat ints named as a tree, e.g.
    ``tlb.stlb.misses``), ``derived`` (MPKI, H/M/C, time estimate), the effective ``config``,
    ``config_hash``, ``series`` (counters sampled per interval, cumulative) and ``miss_profile``
    (walks per 2MB region, ``{region_start_address: walks}``, with ``sim.miss_profile=true``)
    if requested."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.counters: dict[str, int] = data["counters"]
        self.derived: dict[str, float] = data["derived"]
        self.config: dict[str, Any] = data["config"]
        self.config_name: str = data["config_name"]
        self.config_hash: str = data["config_hash"]
        self.policy: str = data["policy"]
        self.trace: str = data["trace"]
        mp = data.get("miss_profile")
        self.miss_profile: dict[int, int] | None = None if mp is None else {a: n for a, n in mp}
        #: ``virt.walk_log=N``: the loads of the first N nested walks, records ``(kind, ...)``:
        #: ``(0, va, guest root, host root, 0)`` starts a walk, ``(1 or 2, level, address, entry,
        #: leaf)`` is a guest or host load, ``(3, frame, size index, 0, 0)`` the entry filled
        #: (docs/virtualisation.md).
        wl = data.get("walk_log")
        self.walk_log: list[tuple[int, ...]] | None = None if wl is None else [tuple(x) for x in wl]
        #: ``sim.contiguity=true``: the ranges the OS could form at the end (``runs``: (pages,
        #: count) largest first, ``pages``, ``entries_4k/2m/1g``); see :func:`xlat.rmm.contiguity`.
        self.contiguity: dict[str, Any] | None = data.get("contiguity")
        #: The accesses read and counted (:mod:`xlat.window`): ``{"skip", "warmup", "limit"}``,
        #: or None for the whole trace, all counted.
        self.window: dict[str, Any] | None = data.get("window")
        #: The run that made this result (configuration, overrides, layout), when
        #: :func:`simulate_many` made it: its parameters become columns of :meth:`to_dict`.
        self.run: Run | None = None
        #: Wall seconds of the run (not part of the result's data): ``open_s`` opening the input
        #: (a workload may build its data there), ``input_s`` that plus waiting for its batches
        #: (decoding, generating), ``total_s`` in all; the simulation took ``total_s - input_s``.
        self.timing: dict[str, float] | None = None

    @property
    def label(self) -> str:
        """``config_name/policy`` plus the layout name for mosaic runs."""
        lay = (self.config.get("layout") or {}).get("name")
        return f"{self.config_name}/{self.policy}" + (f":{lay}" if lay else "")

    def __repr__(self) -> str:
        c = self.counters
        return (
            f"SimResult({self.label}, accesses={c['accesses']}, walks={c['walker.walks']}, "
            f"hash={self.config_hash})"
        )

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True)

    def energy(self, set: Any = None, walk_loads: str = "l1", l1_lookups: str = "masked"):
        """Energy of this run under an energy set (default: Karakostas 2016, Table 5.2); see
        :func:`xlat.energy.energy` and ``docs/lite.md``."""
        from xlat.energy import energy

        return energy(self, set, walk_loads, l1_lookups=l1_lookups)

    def to_dict(self, energy: Any = None, walk_loads: str = "l1") -> dict[str, Any]:
        """Counters and derived metrics in one flat dict, after what identifies the run: the
        configuration's name, policy and hash, its ``label``, the ``trace``, the ``layout`` (its
        name; "" without one), the overrides (``set``: as given, ";"-joined, and one ``set.KEY``
        column each, typed as TOML reads the value) and the window (``window.*``, when there is
        one); with ``energy`` (an energy set name or path, or True for the default) also the
        ``energy.*`` figures."""
        row: dict[str, Any] = {
            "config": self.config_name,
            "policy": self.policy,
            "config_hash": self.config_hash,
            "label": self.label,
            "trace": self.trace,
            "layout": (self.config.get("layout") or {}).get("name") or "",
        }
        sets = self.run.overrides() if self.run is not None else []
        row["set"] = ";".join(sets)
        for s in sets:
            k, _, v = s.partition("=")
            row[f"set.{k.strip()}"] = _toml_value(v.strip())
        if self.window:
            row.update({f"window.{k}": v for k, v in self.window.items()})
        row.update(self.counters)
        row.update({f"derived.{k}": v for k, v in self.derived.items()})
        if energy is not None and energy is not False:
            row.update(self.energy(None if energy is True else energy, walk_loads).to_dict())
        return row

    def to_pandas(self, energy: Any = None, walk_loads: str = "l1"):
        """One-row DataFrame of :meth:`to_dict`: the run's parameters (``label``, ``trace``,
        ``layout``, ``set.*``, ``window.*``) and every counter and derived metric as columns, with
        no index of its own (a tidy frame: ``to_csv(index=False)`` keeps everything)."""
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        return pd.DataFrame([self.to_dict(energy, walk_loads)])

    def series_to_pandas(self):
        """The sampled counters (one row per interval, cumulative; ``.diff()`` for per-interval
        values), with ``at`` first (where the row was taken, in the series' unit); the last row
        is the run's end, so it holds the totals. None if no interval was requested."""
        from xlat._optional import need_pandas

        pd = need_pandas("series_to_pandas()")

        s = self.data.get("series")
        if not s:
            return None
        df = pd.DataFrame(s["rows"], columns=s["columns"])
        if s.get("at"):
            df.insert(0, "at", s["at"])
        return df

    def epochs_to_pandas(self, name: str):
        """Epoch controller ``name``'s time series (e.g. ``contiguity`` with
        ``sim.contiguity_every``): one row per epoch, its counters after that epoch, with
        ``at`` (the epoch's end, in the controller's unit: instructions or accesses) first; None
        if no such controller ran."""
        from xlat._optional import need_pandas

        pd = need_pandas("epochs_to_pandas()")

        s = (self.data.get("epochs") or {}).get(name)
        if not s:
            return None
        df = pd.DataFrame(s["rows"], columns=s["columns"])
        df.insert(0, "at", [(i + 1) * s["every"] for i in range(len(df))])
        return df


class SimResults(list):
    """Results of several configurations over one trace, in the order given."""

    #: (derived figure, panel title) of :meth:`plot`.
    PLOT_FIGURES = (
        ("tlb_level1.mpki", "first-level TLB misses per 1000 instructions"),
        ("tlb_level2.mpki", "second-level TLB misses per 1000 instructions"),
        ("cycles_per_walk", "cycles per page walk"),
        ("time.translation_fraction", "translation share of cycles (additive model), %"),
    )

    def labels(self) -> list[str]:
        """Each result's ``label``, numbered (``1:skylake/4k``) where two results share one."""
        names = [r.label for r in self]
        return [n if names.count(n) == 1 else f"{i}:{n}" for i, n in enumerate(names)]

    def title(self) -> str:
        """The trace, its simulated accesses and its window, for a plot's title."""
        first = self[0]
        w = first.window
        win = (
            ""
            if not w
            else f", window: skip {w['skip']:,}, warm-up {w['warmup']:,}, limit {w['limit'] or 'end'}"
        )
        return f"{short_trace(first.trace)} ({first.counters['accesses']:,} accesses{win})"

    def plot(self, path: str) -> None:
        """The headline figures per configuration as bar charts (one panel each, labelled axes,
        titled with the trace and its window), to a PNG. Needs matplotlib."""
        from xlat._optional import need_pyplot

        plt = need_pyplot()

        if not self:
            raise ValueError("no results to plot")
        labels = self.labels()
        fig, axes = plt.subplots(2, 2, figsize=(10, 6.5))
        for ax, (key, title) in zip(axes.flat, self.PLOT_FIGURES, strict=True):
            scale = 100.0 if key.endswith("fraction") else 1.0
            vals = [r.derived.get(key, float("nan")) * scale for r in self]
            ax.bar(range(len(vals)), vals, color="tab:blue")
            ax.set_title(title, fontsize=9)
            ax.set_xticks(range(len(vals)), labels, rotation=30, ha="right", fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle(self.title(), fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)

    def to_pandas(self, energy: Any = None, walk_loads: str = "l1"):
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        if not self:
            return pd.DataFrame()
        df = pd.concat([r.to_pandas(energy, walk_loads) for r in self], ignore_index=True)
        # An override or window some runs lack: a nullable typed column (3072 stays an integer).
        for col in [c for c in df.columns if c.startswith(("set.", "window."))]:
            df[col] = df[col].convert_dtypes()
        return df


def simulate_many(
    trace: str,
    runs: Iterable[Run],
    threads: int | None = None,
    progress: bool = False,
    *,
    skip: int = 0,
    warmup: int = 0,
    limit: int | None = None,
) -> SimResults:
    """Simulate ``trace`` (a trace file, text trace or ``workload:`` spec) under every run, in
    parallel on up to ``threads`` threads (default: all cores). The GIL is released.

    ``skip``, ``warmup`` and ``limit`` (accesses; :mod:`xlat.window`): pass over the first
    ``skip`` accesses (their side events kept), simulate ``warmup`` more without counting them,
    then count at most ``limit``."""
    from xlat.window import window

    win = window(skip, warmup, limit)
    runs = list(runs)
    if not runs:
        raise ConfigError("no configuration to simulate.")
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be >= 1, not {threads}")
    args = [r._native_args() for r in runs]
    out = _native.simulate(str(trace), args, threads, progress, win.native())
    results = SimResults()
    for run, (s, open_s, input_s, total_s) in zip(runs, out, strict=True):
        r = SimResult(json.loads(s))
        r.run = run
        r.timing = {"open_s": open_s, "input_s": input_s, "total_s": total_s}
        results.append(r)
    return results


def simulate(
    trace: str,
    cpu: str | None = None,
    config: str | None = None,
    set: Sequence[str] | Mapping[str, Any] = (),
    layout: str | None = None,
    progress: bool = False,
    *,
    policy: str | None = None,
    skip: int = 0,
    warmup: int = 0,
    limit: int | None = None,
) -> SimResult:
    """Simulate ``trace`` under one configuration; see :class:`Run` for the arguments and
    :func:`simulate_many` for the window (``skip``, ``warmup``, ``limit``). Without ``cpu`` or
    ``config`` the Skylake preset is used."""
    if cpu is None and config is None:
        cpu = "skylake"
    try:
        return simulate_many(
            trace,
            [
                Run(
                    cpu=cpu,
                    config=config,
                    set=set if isinstance(set, Mapping) else tuple(_overrides(set)),
                    layout=layout,
                    policy=policy,
                )
            ],
            progress=progress,
            skip=skip,
            warmup=warmup,
            limit=limit,
        )[0]
    except ConfigError as e:
        raise ConfigError(_api_wording(str(e))) from None


def _api_wording(message: str) -> str:
    """A configuration error in the words of the Python API: the core names an override as the
    command line gives it (``--set 'tlb.l2d.entries=3': ...``); from :func:`simulate` it was
    ``set=`` (``set= 'tlb.l2d.entries=3': ...``)."""
    return message.replace("--set '", "set= '")
