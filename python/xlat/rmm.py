"""Redundant Memory Mappings (RMM, Karakostas 2016, chapter 4) as configurations of the one
simulator, and their evaluation: which share of the page walks the range TLB removes, the
Table 4.5 performance model beside xlat's additive estimate, and the contiguity of the simulated memory
under demand paging with THP and under eager paging (Tables 4.2 and 4.7).

RMM is not a separate simulator: it is eager paging (``os.allocation = "eager"``), a range
table per address space (``os.ranges = "contiguous"``, ``os.range_threshold``) and a range
TLB in the miss path (``[[range_tlb]]``), all plain configuration keys.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xlat.contiguity import range_stats
from xlat.models import rmm_performance_model
from xlat.sim import Run, SimResult, preset, short_trace, simulate_many

__all__ = [
    "DESIGNS",
    "RANGE_THRESHOLD_PAGES",
    "RANGE_TLB_ENTRIES",
    "Evaluation",
    "contiguity",
    "design_runs",
    "evaluate",
    "sizes_of",
    "summarize",
]

#: Section 4.7: a 32-entry fully associative range TLB, probed in parallel with the L2 TLB.
RANGE_TLB_ENTRIES = 32
#: Section 4.4: ranges of at least 8 pages (32 KB), so that small ranges do not thrash the
#: range TLB (Table 4.7's coverage uses the same threshold).
RANGE_THRESHOLD_PAGES = 8
#: The designs `evaluate` knows, in the order it reports them.
DESIGNS = ("4KB", "THP", "RMM")


def _l2_latency(cpu: str) -> int:
    """The latency of the preset's level-2 page TLB (the range TLB is probed beside it, so it
    gets the same latency: section 4.7 sizes it to meet the L2 TLB's timing)."""
    tlbs = tomllib.loads(preset(cpu)).get("tlb", [])
    lat = [t.get("latency", 0) for t in tlbs if t.get("level") == 2]
    return max(lat) if lat else 0


def range_tlb_set(cpu: str, entries: int = RANGE_TLB_ENTRIES, stage: int = 2) -> str:
    """The ``--set`` that adds RMM's range TLB to preset ``cpu``."""
    return _range_tlb(entries, stage, _l2_latency(cpu))


def _range_tlb(entries: int, stage: int, latency: int) -> str:
    return f'range_tlb=[{{name="range", entries={entries}, stage={stage}, latency={latency}}}]'


def design_runs(
    cpu: str = "skylake", designs: tuple[str, ...] = DESIGNS, extra: tuple[str, ...] = ()
) -> dict:
    """Name -> :class:`Run` for each design on preset ``cpu`` (``extra``: more ``--set``s for
    all). 4KB: demand paging, 4KB pages; THP: demand paging with transparent huge pages; 1GB:
    demand paging with 1GB pages where they fit (then 2MB, then 4KB); RMM:
    eager paging, range table, a 32-entry range TLB beside the L2 TLB, 4KB pages (section 4.7
    evaluates RMM without huge pages); RMM+THP: the same with THP (chapter 5's RMM, ranges
    redundant to paging that keeps its 2MB pages); CTLB and DS: section 4.8's Clustered TLB and direct
    segment (``configs/rmm/`` has the same on the Table 4.4 core)."""
    lat = _l2_latency(cpu)
    sets = {
        "4KB": ("os.policy=4k",),
        "THP": ("os.policy=thp",),
        # Section 4.8's 1GB baseline: 1GB pages wherever one fits, else 2MB, else 4KB.
        "1GB": ("os.policy=1g",),
        "RMM": (
            "os.policy=4k",
            "os.allocation=eager",
            "os.ranges=contiguous",
            _range_tlb(RANGE_TLB_ENTRIES, 2, lat),
        ),
        # Chapter 5's RMM: ranges redundant to paging that keeps THP's 2MB pages (eager blocks
        # aligned so that they fit, os.eager_placement's default).
        "RMM+THP": (
            "os.policy=thp",
            "os.allocation=eager",
            "os.ranges=contiguous",
            _range_tlb(RANGE_TLB_ENTRIES, 2, lat),
        ),
        # RMM with file mappings backed eagerly too, so that ranges can cover them (os.eager_files).
        "RMM+files": (
            "os.policy=4k",
            "os.allocation=eager",
            "os.eager_files=true",
            "os.ranges=contiguous",
            _range_tlb(RANGE_TLB_ENTRIES, 2, lat),
        ),
        # Section 4.8's baselines: the Clustered TLB (512 entries of 8-page clusters, with eager
        # paging as the section uses it) and the ideal direct segment (the largest range).
        "CTLB": (
            "os.policy=4k",
            "os.allocation=eager",
            "cluster_tlb.enabled=true",
            f"cluster_tlb.latency={lat}",
        ),
        "DS": (
            "os.policy=4k",
            "os.allocation=eager",
            "os.ranges=contiguous",
            "direct_segment.enabled=true",
            f"direct_segment.latency={lat}",
        ),
        # Contiguity only (Table 4.7): the ranges demand paging with THP and eager paging form.
        "demand+THP": ("os.policy=thp", "os.ranges=contiguous"),
        "eager": ("os.policy=4k", "os.allocation=eager", "os.ranges=contiguous"),
    }
    unknown = [d for d in designs if d not in sets]
    if unknown:
        raise ValueError(f"unknown design {unknown[0]!r}: choose among {', '.join(sets)}")
    # An override of a field that makes a design what it is would run another design under its
    # name (--set os.policy=thp turned the 4KB column into a second THP one): refuse it.
    for e in extra:
        key = e.split("=", 1)[0].strip()
        owners = [d for d in designs if any(x.split("=", 1)[0] == key for x in sets[d])]
        if owners:
            raise ValueError(
                f"--set {e} would change what design {owners[0]} is ({key} is part of its definition); "
                f"choose designs with --designs instead (among {', '.join(sets)})."
            )
    return {d: Run(cpu=cpu, set=(*sets[d], *extra)) for d in designs}


def summarize(
    runs: Any, entries: dict[str, int] | None = None, threshold: int = RANGE_THRESHOLD_PAGES
) -> dict:
    """Table 4.2 and 4.7 figures from maximal contiguous runs, flat (computed by
    :func:`xlat.contiguity.range_stats`, the one implementation live and simulated analyses share).

    ``runs``: ``[(size_in_pages, count), ...]`` (the simulator's ``contiguity.runs``) or an
    array of run sizes. ``entries``: page-table entries by size (``entries_4k`` ...), for the
    "translation entries with pages" column. ``ranges``, ``coverage`` and the median/average
    size are of the runs at least ``threshold`` pages long (the ranges the OS creates, Table
    4.7); ``runs``, ``max_pages``, ``ranges_for_99`` and ``largest_share`` count every run (ideal
    RMM, Table 4.2)."""
    arr = np.asarray(runs, dtype=np.int64)
    if arr.ndim == 2:
        sizes = np.repeat(arr[:, 0], arr[:, 1]) if arr.size else np.zeros(0, np.int64)
    else:
        sizes = arr
    if np.any(sizes <= 0):
        raise ValueError("run sizes must be positive page counts")
    st = range_stats(sizes, threshold)
    kept = st["threshold_range_pages"]
    out: dict[str, Any] = {
        "pages": st["present_pages"],
        "runs": st["ranges"],
        "ranges": st["threshold_ranges"],
        "threshold_pages": threshold,
        "coverage": st["threshold_covered_pct"] / 100.0,
        "median_pages": float(kept["median"]),
        "average_pages": float(kept["average"]),
        "max_pages": st["range_pages"]["max"],
        "ranges_for_99": st["ranges_to_cover_99pct"],
        "largest_share": st["largest_range_pct"] / 100.0,
    }
    if entries is not None:
        out["page_entries"] = int(sum(entries.get(k, 0) for k in ("entries_4k", "entries_2m", "entries_1g")))
    return out


def sizes_of(result: SimResult) -> np.ndarray:
    """Every run size (pages) of a result simulated with ``sim.contiguity=true``."""
    runs = np.asarray(_contiguity_of(result)["runs"], dtype=np.int64).reshape(-1, 2)
    return np.repeat(runs[:, 0], runs[:, 1])


def _contiguity_of(result: SimResult) -> dict:
    c = result.data.get("contiguity")
    if c is None:
        raise ValueError(
            f"{result.label}: simulated without sim.contiguity=true, so no contiguity was measured"
        )
    return c


def contiguity(result: SimResult, threshold: int = RANGE_THRESHOLD_PAGES) -> dict:
    """:func:`summarize` of a result simulated with ``sim.contiguity=true``."""
    c = _contiguity_of(result)
    return summarize(c["runs"], c, threshold)


@dataclass
class Evaluation:
    """The designs' results over one trace, and the figures of chapter 4."""

    trace: str
    results: dict[str, SimResult]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def to_pandas(self):
        """One row per design, ``design`` a column like the others (a tidy frame)."""
        from xlat._optional import need_pandas

        pd = need_pandas("to_pandas()")

        return pd.DataFrame(self.rows)

    def plot(self, path: str) -> None:
        """Page walks per design and the share of the first design's walks each removes, two
        panels, titled with the trace, to a PNG. Needs matplotlib."""
        from xlat._optional import need_pyplot

        plt = need_pyplot()

        names = [r["design"] for r in self.rows]
        fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
        a.bar(names, [r["walks"] for r in self.rows], color="tab:blue")
        a.set_title("page walks", fontsize=9)
        a.set_ylabel("walks")
        removed = [
            100.0 * r["walks_removed"] if r.get("walks_removed") is not None else 0.0 for r in self.rows
        ]
        b.bar(names, removed, color="tab:green")
        b.set_title("walks removed against the 4KB design (%)", fontsize=9)
        b.set_ylabel("%")
        for ax in (a, b):
            ax.tick_params(axis="x", labelrotation=30, labelsize=8)
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle(f"RMM against its baselines: {short_trace(self.trace)}", fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)


def _walks(r: SimResult) -> int:
    return r.counters["walker.walks"]


def evaluate(
    trace: str,
    cpu: str = "skylake",
    designs: tuple[str, ...] = DESIGNS,
    extra: tuple[str, ...] = (),
    threads: int | None = None,
    progress: bool = False,
    threshold: int = RANGE_THRESHOLD_PAGES,
    overlap: bool = False,
    *,
    skip: int = 0,
    warmup: int = 0,
    limit: int | None = None,
) -> Evaluation:
    """Simulate ``trace`` under each design (and, for the contiguity columns, with
    ``sim.contiguity=true``) and compute, per design: page walks, the share of the 4KB design's
    walks removed, the Table 4.5 overheads (``Over_4K``, ``Over_2M``, ``Over_SIM`` with the
    4KB run's average walk cost; needs the 4KB and THP designs) beside xlat's additive
    estimate (walk cycles over base cycles of the design's own run), and the contiguity of the
    memory at the end (ranges of at least ``threshold`` pages, coverage, ranges for 99%...).
    With ``overlap``, every design also runs the overlap time model (data through the caches;
    docs/time-model.md): its cycles and the speed-up over the 4KB design. ``skip``, ``warmup``
    and ``limit``: the window of the trace (:mod:`xlat.window`)."""
    # Checked before simulating, not when the figures are computed after every run.
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError(f"the range threshold must be at least 1 page, not {threshold!r}")
    timing = ("sim.data_through_caches=true", "time.model=overlap") if overlap else ()
    runs = design_runs(cpu, designs, (*timing, *extra, "sim.contiguity=true"))
    results = dict(
        zip(
            runs,
            simulate_many(
                trace,
                runs.values(),
                threads=threads,
                progress=progress,
                skip=skip,
                warmup=warmup,
                limit=limit,
            ),
            strict=True,
        )
    )
    ev = Evaluation(trace=trace, results=results)
    base = results.get("4KB")
    model = None
    if base is not None and "THP" in results and _walks(base) > 0:
        thp = results["THP"]
        model = {
            "t_2m": thp.derived["time.total_cycles"],
            "c_2m": thp.derived["time.walk_cycles"],
            "c_4k": base.derived["time.walk_cycles"],
            "m_4k": _walks(base),
        }
    for name, r in results.items():
        row: dict[str, Any] = {
            "design": name,
            "accesses": r.counters["accesses"],
            "l1_misses": r.counters.get("tlb_level1.data.misses", 0)
            + r.counters.get("tlb_level1.instruction.misses", 0),
            "walks": _walks(r),
            "range_tlb_hits": r.counters.get("range_tlb.range.hits", 0),
            # Section 4.4.3: range-table walks run in the background (loads counted, no cycles).
            "range_walks": r.counters.get("range_walk.walks", 0),
            "range_walk_loads": r.counters.get("range_walk.loads", 0),
            "cluster_tlb_hits": r.counters.get("cluster_tlb.hits", 0),
            "direct_segment_hits": r.counters.get("direct_segment.hits", 0),
            "additive_overhead": r.derived["time.walk_cycles"] / r.derived["time.base_cycles"]
            if r.derived["time.base_cycles"]
            else 0.0,
        }
        if base is not None and _walks(base):
            row["walks_removed"] = 1.0 - _walks(r) / _walks(base)
        if "time.overlap.total_cycles" in r.derived:
            row["overlap_cycles"] = r.derived["time.overlap.total_cycles"]
            if base is not None:
                row["overlap_speedup_vs_4k"] = (
                    base.derived["time.overlap.total_cycles"] / row["overlap_cycles"]
                )
        if model is not None:
            m = rmm_performance_model(m_sim=_walks(r), **model)
            row["over_4k"] = m["overhead_4k"]
            row["over_2m"] = model["c_2m"] / m["ideal"]
            row["over_sim"] = m["overhead_sim"]
        stats = contiguity(r, threshold)
        row.update({f"contiguity.{k}": v for k, v in stats.items()})
        # The share of the mapped pages no range-table entry covers (designs with a range table;
        # file mappings stay outside unless os.eager_files).
        if "os.range_frames" in r.counters and stats.get("pages"):
            row["outside_ranges"] = max(0.0, 1.0 - r.counters["os.range_frames"] / stats["pages"])
        row["frames_in_use"] = r.counters["os.frames_in_use"]
        ev.rows.append(row)
    return ev
