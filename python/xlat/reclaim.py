"""Eviction under memory pressure with access/dirty bits at G bits per 2MB page (PRISM,
Ausavarungnirun et al. 2020, Section 6.5): physical memory set to a fraction of the footprint,
a CLOCK reclaim policy that sees one accessed and one dirty bit per 2MB/G chunk and evicts
whole chunks, on any trace.

The work is two passes in Rust (``xlat_core::analysis::reclaim``: the footprint, then one engine
per G); this module passes the options and turns the result into tables. ``docs/prism.md``
defines every figure and where each default comes from.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlat import _native

__all__ = [
    "DEFAULT_BANDWIDTH",
    "DEFAULT_EPOCH",
    "DEFAULT_FAULT_US",
    "DEFAULT_FRACTION",
    "DEFAULT_GRANULARITIES",
    "ReclaimResult",
    "analyze",
]

#: "we configure the GPU memory to 90% of its application's memory footprint" (Ausavarungnirun
#: et al. 2020, Section 5).
DEFAULT_FRACTION = 0.9
#: Figure 10's metadata granularities: 1 bit (THP), PRISM 8 and 32 bits, 512 (4KB mappings).
DEFAULT_GRANULARITIES = (1, 8, 32, 512)
#: Accessed bits cleared once per 100M instructions (Ausavarungnirun et al. 2020, Section 2, Figure 1).
DEFAULT_EPOCH = 100_000_000
#: Median swap-in fault, "50% of the swap fault is under 20us" (linux-mm, Chris Li, 2023-12-21).
DEFAULT_FAULT_US = 20.0
#: PCIe 3.0 x16 (the paper's GTX 1080, Section 5): 8 GT/s x 16 lanes x 128/130, bytes/s.
DEFAULT_BANDWIDTH = 8e9 * 16 * 128 / 130 / 8

_U32, _U64 = 1 << 32, 1 << 64


@dataclass
class ReclaimResult:
    """The study of one trace: ``data`` is the JSON object the Rust analysis returns (footprint,
    capacity, and per G in ``granularities``: faults, refaults, evictions, bytes read in and
    written back, the paging-time estimate)."""

    trace: str
    data: dict[str, Any]

    def rows(self) -> list[dict[str, Any]]:
        """One row per G, with the time relative to the first G's (1 bit by default)."""
        gs = self.data["granularities"]
        base = gs[0]["time_s"] if gs else 0.0
        return [{**g, "time_vs_first": (g["time_s"] / base if base else float("nan"))} for g in gs]

    def to_pandas(self):
        """The per-G table (:meth:`rows`) indexed by g."""
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        return pd.DataFrame(self.rows()).set_index("g")

    def to_json(self) -> dict[str, Any]:
        return {"trace": self.trace, **self.data}

    def at(self, g: int) -> dict[str, Any]:
        """The counters of granularity ``g``."""
        return next(r for r in self.data["granularities"] if r["g"] == g)


def analyze(
    trace_or_spec: str | Path,
    fraction: float = DEFAULT_FRACTION,
    granularities: tuple[int, ...] | list[int] = DEFAULT_GRANULARITIES,
    epoch: int = DEFAULT_EPOCH,
    fault_us: float = DEFAULT_FAULT_US,
    read_bandwidth: float = DEFAULT_BANDWIDTH,
    write_bandwidth: float = DEFAULT_BANDWIDTH,
    progress: bool = False,
    *,
    skip: int = 0,
    limit: int | None = None,
) -> ReclaimResult:
    """Replay a trace file or ``workload:`` spec (read twice) against memory of ``fraction`` of
    its footprint, once per granularity. Bad values raise ``ValueError`` or ``xlat.ConfigError``
    with one sentence. ``skip``, ``limit``: the accesses read (:mod:`xlat.window`)."""
    from xlat.window import window

    win = window(skip, 0, limit)
    spec = str(trace_or_spec)
    if not isinstance(fraction, (int, float)) or not (0 < fraction <= 1):
        raise ValueError(
            "the memory fraction must be above 0 and at most 1 (physical memory as a share of the "
            f"footprint), not {fraction}"
        )
    if not isinstance(epoch, int) or not 0 < epoch < _U64:
        raise ValueError(f"the epoch must be at least 1 instruction, not {epoch}")
    for g in granularities:
        if not isinstance(g, int) or not 0 <= g < _U32:
            raise ValueError(
                f"granularity {g} is not a power of two from 1 to 512 (bits per 2MB page: 1, 2, 4, ..., 512)"
            )
    for name, v in (
        ("fault cost", fault_us),
        ("read bandwidth", read_bandwidth),
        ("write bandwidth", write_bandwidth),
    ):
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"the {name} must be a finite number >= 0, not {v}")
    raw = _native.reclaim(
        spec,
        float(fraction),
        [int(g) for g in granularities],
        int(epoch),
        float(fault_us),
        float(read_bandwidth),
        float(write_bandwidth),
        progress,
        win.native(),
    )
    return ReclaimResult(spec, json.loads(raw))
