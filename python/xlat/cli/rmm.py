"""``xlat rmm``: Redundant Memory Mappings (Karakostas 2016, chapter 4) against its baselines on one
trace: page walks, the share the range TLB removes, the Table 4.5 overheads beside xlat's
additive estimate, and the contiguity of the simulated memory (Table 4.7)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xlat.cli.common import CliError, add_window_flags, name_list, progress, window_kw
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import still_running


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


ROWS = [
    ("page walks", "walks"),
    ("walks removed vs 4KB", "walks_removed"),
    ("range TLB hits", "range_tlb_hits"),
    ("range-table walks (background)", "range_walks"),
    ("  their loads (no cycles)", "range_walk_loads"),
    ("clustered TLB hits", "cluster_tlb_hits"),
    ("direct segment hits", "direct_segment_hits"),
    ("Table 4.5 Over_SIM", "over_sim"),
    ("additive estimate (walk/base cycles)", "additive_overhead"),
    ("cycles (overlap model)", "overlap_cycles"),
    ("speed-up vs 4KB (overlap model)", "overlap_speedup_vs_4k"),
    ("ranges (>= threshold)", "contiguity.ranges"),
    ("coverage by ranges", "contiguity.coverage"),
    ("footprint outside the range table", "outside_ranges"),
    ("median range (pages)", "contiguity.median_pages"),
    ("average range (pages)", "contiguity.average_pages"),
    ("largest run (pages)", "contiguity.max_pages"),
    ("runs for 99% of memory", "contiguity.ranges_for_99"),
    ("largest run's share", "contiguity.largest_share"),
    ("page-table leaf entries", "contiguity.page_entries"),
    ("frames in use", "frames_in_use"),
]


def print_columns(rows: list[dict[str, Any]], labels: list[tuple[str, str]]) -> None:
    """One column per design (``rows``), one line per (label, key) some row has."""
    lines = [("", [r["design"] for r in rows])]
    for label, key in labels:
        if any(key in r for r in rows):
            lines.append((label, [_fmt(r.get(key, "-")) for r in rows]))
    w0 = max(len(k) for k, _ in lines)
    ws = [max(len(line[1][i]) for line in lines) for i in range(len(rows))]
    for k, vals in lines:
        print(f"{k:<{w0}}  " + "  ".join(f"{v:>{w}}" for v, w in zip(vals, ws, strict=True)))


def cmd_rmm(args: argparse.Namespace) -> int:
    from xlat.rmm import DESIGNS, evaluate

    take_positional(args, "trace", "TRACE_OR_WORKLOAD")
    named = name_list(args.designs, "--designs", "design (4KB, THP, RMM, ...)")
    designs = DESIGNS if named is None else tuple(named)
    if args.threshold < 1:
        raise CliError(f"--threshold must be at least 1 page, not {args.threshold}")
    with still_running(f"simulating {args.trace} under {len(designs)} designs", enabled=not progress(args)):
        ev = evaluate(
            args.trace,
            cpu=args.cpu,
            designs=designs,
            extra=tuple(args.set or ()),
            progress=progress(args),
            threshold=args.threshold,
            overlap=args.time == "overlap",
            **window_kw(args),
        )
    emit_json(
        args.json,
        ev.rows,
        trace=args.trace,
        window=window_kw(args),
        config=[ev.results[r["design"]].config for r in ev.rows],
    )
    if args.csv:
        ev.to_pandas().to_csv(args.csv, index=False)
    if args.plot:
        ev.plot(args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    if to_stdout(args):
        return 0
    if "over_4k" in ev.rows[0]:
        print(
            f"Table 4.5 from the 4KB and THP runs: Over_4K = {ev.rows[0]['over_4k']:.4g}, "
            f"Over_2M = {ev.rows[0]['over_2m']:.4g} (walk cycles / ideal cycles)"
        )
    print_columns(ev.rows, ROWS)
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "rmm",
        parents=[common],
        help="Redundant Memory Mappings against 4KB and THP paging on one trace",
        description="Simulate a trace under 4KB demand paging, THP and RMM (eager paging, range "
        "table, a 32-entry range TLB beside the L2 TLB; Karakostas 2016, chapter 4) and print page walks, "
        "the share of walks the range TLB removes, the Table 4.5 overheads beside xlat's additive "
        "estimate, and the contiguity of the memory at the end (ranges, coverage, sizes).",
    )
    s.add_argument("trace", nargs="?", metavar="TRACE_OR_WORKLOAD")
    s.add_argument("--cpu", default="skylake", metavar="PRESET", help="CPU preset (default skylake)")
    s.add_argument(
        "--designs",
        metavar="LIST",
        help=(
            "comma-separated designs among 4KB, THP, 1GB, RMM, RMM+THP, RMM+files, CTLB, DS, demand+THP, eager"
            " (default 4KB,THP,RMM)"
        ),
    )
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a field for every design")
    s.add_argument(
        "--threshold", type=int, default=8, metavar="PAGES", help="smallest range, in 4KB pages (default 8)"
    )
    s.add_argument(
        "--time",
        choices=("additive", "overlap"),
        default="additive",
        help="overlap: also run the overlap time model (data through the caches; slower) and print each "
        "design's cycles and speed-up over 4KB (docs/time-model.md)",
    )
    add_json_flag(s, "every figure")
    s.add_argument("--csv", metavar="OUT", help="write one CSV row of every figure per design")
    s.add_argument("--plot", metavar="OUT.png", help="page walks and walks removed per design, to a PNG")
    add_window_flags(s)
    s.set_defaults(func=cmd_rmm, parser=s)
