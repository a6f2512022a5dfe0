"""Observation 1 of Rainbow (Wang et al. 2018) on any trace: how many 4KB pages of each 2MB
superpage a program touches per interval (the CDF of Figure 1), and the same counts in the
buckets of Table II.

The work is one pass in Rust (``xlat_core::analysis::touch``: a 512-bit map per 2MB-aligned
virtual region per interval); this module passes the interval, turns the histogram into the
CDF, the buckets and a plot. ``docs/rainbow.md`` describes the analysis.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlat import _native

__all__ = ["BUCKETS", "DEFAULT_INTERVAL", "TouchResult", "analyze", "plot_cdf"]

#: Instructions per interval: Rainbow (Wang et al. 2018) samples every 10^8 cycles (section III-C), taken as
#: 10^8 instructions (one cycle per instruction).
DEFAULT_INTERVAL = 100_000_000
#: Table II's ranges of 4KB pages per superpage.
BUCKETS = ((1, 32), (33, 64), (65, 128), (129, 256), (257, 384), (385, 512))

_U64 = 1 << 64


@dataclass
class TouchResult:
    """The analysis of one trace: ``data`` is the JSON object the Rust analysis returns
    (``interval``, ``intervals``, ``samples``: (superpage, interval) pairs, ``histogram[n]``:
    pairs with n touched 4KB pages, ``cdf[n]``: the fraction with at most n)."""

    trace: str
    data: dict[str, Any]

    @property
    def cdf(self) -> list[float]:
        return list(self.data["cdf"])

    @property
    def samples(self) -> int:
        return int(self.data["samples"])

    def buckets(self) -> list[dict[str, Any]]:
        """The share of (superpage, interval) pairs in each of Table II's ranges."""
        h, total = self.data["histogram"], max(self.samples, 1)
        return [{"pages": f"{lo}-{hi}", "share": sum(h[lo : hi + 1]) / total} for lo, hi in BUCKETS]

    def at_most(self, n: int) -> float:
        """The fraction of pairs with at most ``n`` touched 4KB pages."""
        return self.cdf[n]

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, **self.data, "buckets": self.buckets()}

    def to_pandas(self):
        """One row per touched-page count (1..512): pairs and the CDF."""
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        h = self.data["histogram"]
        return pd.DataFrame({"pages": range(1, 513), "pairs": h[1:], "cdf": self.cdf[1:]}).set_index("pages")

    def plot(self, path: str | Path, title: str | None = None) -> None:
        """The CDF (Figure 1's curve) to a PNG."""
        plot_cdf({title or self.trace: self}, path)


def analyze(
    trace_or_spec: str | Path,
    interval: int = DEFAULT_INTERVAL,
    progress: bool = False,
    *,
    skip: int = 0,
    limit: int | None = None,
) -> TouchResult:
    """Count the touched 4KB pages of every 2MB superpage per ``interval`` instructions of a
    trace file or ``workload:`` spec (the accesses ``skip``, ``limit`` of :mod:`xlat.window`).
    A bad interval raises ``ValueError`` with one sentence."""
    from xlat.window import window

    win = window(skip, 0, limit)
    if isinstance(interval, bool) or not isinstance(interval, int) or not 0 < interval < _U64:
        raise ValueError(f"the interval must be at least 1 instruction, not {interval}")
    spec = str(trace_or_spec)
    return TouchResult(spec, json.loads(_native.superpage_touch(spec, interval, progress, win.native())))


def plot_cdf(results: dict[str, TouchResult], path: str | Path) -> None:
    """The CDF of touched 4KB pages per superpage per interval, one line per result
    (``{label: result}``), to a PNG. Needs matplotlib."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, r in results.items():
        ax.step(range(0, 513), [100 * c for c in r.cdf], where="post", label=label)
    ax.set_xlim(0, 512)
    ax.set_xticks([0, 64, 128, 192, 256, 320, 384, 448, 512])
    ax.set_ylim(0, 100)
    ax.set_xlabel("touched 4KB pages in a 2MB superpage (per interval)")
    ax.set_ylabel("superpages (% at most that many)")
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
