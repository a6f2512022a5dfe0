"""One-pass miss-ratio curves: the misses of a single-level LRU TLB of every size, per page size,
in one pass over a trace, with the OS model choosing each access's page size.

The work is one pass in Rust (``xlat_core::analysis::mrc``); this module passes the options and
turns the result into tables and plots. ``docs/mrc.md`` says exactly what a curve models::

    >>> import xlat
    >>> r = xlat.mrc("workload:gups?size=64MiB&accesses=20000", sets=[1, 16], max_entries=1024)
    >>> df = r.to_pandas()       # one row per (page size, sets, ways)
    >>> int(r.misses("4KB", entries=1024)) <= int(r.misses("4KB", entries=64))
    True

Every point equals the misses of ``xlat sim`` of the configuration :func:`single_level_config`
returns, sized with ``--set tlb.mrc-4k.entries=N --set tlb.mrc-4k.ways=W`` (and ``mrc-2m``,
``mrc-1g``): its ``walker.walks_4k`` (``_2m``, ``_1g``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xlat import _native
from xlat.sim import Run

__all__ = ["DEFAULT_MAX_ENTRIES", "PAGE_SIZES", "TLB_NAMES", "MrcResult", "mrc", "single_level_config"]

#: Most entries by default: every size up to 64K entries (issue 23).
DEFAULT_MAX_ENTRIES = 65536
PAGE_SIZES = ("4KB", "2MB", "1GB")
#: The TLBs of :func:`single_level_config`, by page size.
TLB_NAMES = {"4KB": "mrc-4k", "2MB": "mrc-2m", "1GB": "mrc-1g"}


@dataclass
class MrcResult:
    """The curves of one trace: ``data`` is the JSON object of the Rust analysis (``curves``: per
    page size and set count, ``misses[w - 1]`` for ``w`` ways, i.e. ``w * sets`` entries)."""

    data: dict[str, Any]

    @property
    def instructions(self) -> int:
        return int(self.data["instructions"])

    def curve(self, page_size: str = "4KB", sets: int = 1) -> dict[str, Any]:
        for c in self.data["curves"]:
            if c["page_size"] == page_size and c["sets"] == sets:
                return c
        raise KeyError(f"no curve for page size {page_size} with {sets} sets in this result")

    def misses(self, page_size: str = "4KB", entries: int = 64, sets: int = 1) -> int:
        """Misses of the ``page_size`` TLB of ``entries`` entries in ``sets`` sets."""
        c = self.curve(page_size, sets)
        if entries % sets or not 1 <= entries // sets <= len(c["misses"]):
            raise KeyError(f"{entries} entries in {sets} sets is not a point of this curve")
        return int(c["misses"][entries // sets - 1])

    def rows(self, every: bool = True) -> list[dict[str, Any]]:
        """One row per (page size, sets, ways); ``every=False``: ways that make a power-of-two
        entry count only (the CLI's table)."""
        out = []
        ins = self.instructions
        for c in self.data["curves"]:
            for w, m in enumerate(c["misses"], start=1):
                e = w * c["sets"]
                if not every and e & (e - 1):
                    continue
                out.append(
                    {
                        "page_size": c["page_size"],
                        "sets": c["sets"],
                        "ways": w,
                        "entries": e,
                        "accesses": c["accesses"],
                        "misses": m,
                        "miss_ratio": m / c["accesses"] if c["accesses"] else 0.0,
                        "mpki": 1000 * m / ins if ins else 0.0,
                    }
                )
        return out

    def to_pandas(self):
        """Every point (:meth:`rows`) as a tidy DataFrame: one row per (page_size, sets,
        entries), those three as columns like the rest (no index of its own, so
        ``to_csv(index=False)`` keeps them; issue 37, item 4)."""
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        return pd.DataFrame(self.rows())

    def plot(
        self, path: str, metric: str = "mpki", yscale: str = "log", entries: tuple[int, int] | None = None
    ) -> None:
        """Misses (``metric="misses"``) or MPKI against entries (log2 axis), one line per page
        size and set count with any access, to a PNG. ``yscale``: "log" (default: the 1-entry
        TLB's misses no longer flatten the rest) or "linear"; ``entries``: the (lowest, highest)
        TLB size shown."""
        if yscale not in ("log", "linear"):
            raise ValueError(f"yscale is log or linear, not {yscale!r}")
        from xlat._optional import need_pyplot

        plt = need_pyplot()

        fig, ax = plt.subplots(figsize=(7, 4.5))
        ins = self.instructions
        for c in self.data["curves"]:
            if not c["accesses"]:
                continue
            xs = [w * c["sets"] for w in range(1, len(c["misses"]) + 1)]
            ys = c["misses"] if metric == "misses" else [1000 * m / ins if ins else 0.0 for m in c["misses"]]
            label = f"{c['page_size']}, " + ("fully assoc." if c["sets"] == 1 else f"{c['sets']} sets")
            if entries is not None:
                keep = [i for i, x in enumerate(xs) if entries[0] <= x <= entries[1]]
                xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
            if yscale == "log":  # a zero cannot be drawn on a log axis: those points are left out
                keep = [i for i, y in enumerate(ys) if y > 0]
                xs, ys = [xs[i] for i in keep], [ys[i] for i in keep]
            ax.plot(xs, ys, label=label, drawstyle="steps-post")
        ax.set_xscale("log", base=2)
        ax.set_yscale(yscale)
        ax.set_xlabel("TLB entries")
        ax.set_ylabel("misses" if metric == "misses" else "misses per 1000 instructions")
        ax.set_title(f"LRU miss curve: {self.data['trace']} ({self.data['policy']})", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def mrc(
    trace: str,
    *,
    cpu: str | None = None,
    config: str | None = None,
    set: Sequence[str] = (),
    layout: str | None = None,
    policy: str | None = None,
    sets: Sequence[int] = (1,),
    max_entries: int = DEFAULT_MAX_ENTRIES,
    page_sizes: Sequence[str] = PAGE_SIZES,
    progress: bool = False,
    skip: int = 0,
    limit: int | None = None,
) -> MrcResult:
    """The curves of ``trace`` (a file or ``workload:`` spec) under the OS model of a preset
    (``cpu``, default skylake) or a TOML file (``config``) with ``--set``-style overrides and
    optionally a mosaic ``layout``; ``policy`` (``4k``, ``thp``) is ``os.policy``. ``sets``: set
    counts, powers of two (1: fully associative); ``max_entries``: the largest TLB reported;
    ``skip``, ``limit``: the accesses read (:mod:`xlat.window`)."""
    from xlat.window import window

    win = window(skip, 0, limit)
    if cpu is None and config is None:
        cpu = "skylake"
    if policy is not None and policy not in ("4k", "thp"):
        raise _native.ConfigError(f"policy takes 4k or thp (mosaic comes from a layout), not '{policy}'.")
    sizes = list(page_sizes)
    twice = next((p for i, p in enumerate(sizes) if p in sizes[:i]), None)
    if twice is not None:
        raise _native.ConfigError(f"page size {twice} is given twice; give each page size once.")
    overrides = list(set) + ([f"os.policy={policy}"] if policy else [])
    run = Run(cpu=cpu, config=config, set=tuple(overrides), layout=layout)
    out = _native.mrc(trace, run._native_args(), list(sets), int(max_entries), sizes, progress, win.native())
    res = MrcResult(json.loads(out))
    res.run = run
    return res


def single_level_config(cpu: str | None = None, config: str | None = None) -> str:
    """The TOML of the configuration a curve models: the preset's (or file's) TLBs replaced by
    one unified level-1 LRU TLB per page size (:data:`TLB_NAMES`), without range TLBs, the
    clustered TLB, the direct segment, PRISM or Lite; OS, memory, caches and PSCs kept."""
    if cpu is not None and config is not None:
        raise _native.ConfigError("give at most one of cpu= (a preset name) and config= (a TOML file).")
    if config is None:
        cpu = cpu or "skylake"
    text = _native.preset(cpu) if cpu is not None else open(str(config), encoding="utf-8").read()
    return _native.mrc_single_level(text)
