"""``xlat reclaim``: eviction under memory pressure with access/dirty bits at G bits per 2MB
page (PRISM, Ausavarungnirun et al. 2020, Section 6.5), on one trace or workload."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import (
    CliError,
    add_window_flags,
    grid,
    human_bytes,
    int_arg,
    int_list,
    progress,
    table,
    window_kw,
)
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import noting


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, not {text!r}") from None


def summary_rows(d: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("trace", d["trace"]),
        ("accesses", f"{d['accesses']:,} ({d['stores']:,} stores)"),
        ("instructions", f"{d['instructions']:,}"),
        ("footprint", f"{d['regions']:,} 2MB pages, {human_bytes(d['footprint_bytes'])}"),
        ("4KB pages touched", human_bytes(d["touched_bytes"])),
        ("memory", f"{human_bytes(d['capacity_bytes'])} ({d['fraction']:g} of the footprint)"),
        ("accessed bits cleared", f"every {d['epoch']:,} instructions ({d['clears']:,} times)"),
        (
            "costs",
            f"{d['fault_us']:g} us a fault, {d['read_bandwidth'] / 1e9:.2f} GB/s in, "
            f"{d['write_bandwidth'] / 1e9:.2f} GB/s out",
        ),
    ]


def reclaim_table(rows: list[dict[str, Any]]) -> str:
    header = [
        "G bits/2MB",
        "chunk",
        "faults",
        "refaults",
        "evictions",
        "written back",
        "read in",
        "refault reads",
        "time s",
        "vs first",
    ]
    out = [
        [
            str(r["g"]),
            human_bytes(r["chunk_bytes"]),
            f"{r['faults']:,}",
            f"{r['refaults']:,}",
            f"{r['evictions']:,}",
            human_bytes(r["bytes_written_back"]),
            human_bytes(r["bytes_read"]),
            human_bytes(r["bytes_read_refault"]),
            f"{r['time_s']:.4f}",
            f"{r['time_vs_first']:.3f}",
        ]
        for r in rows
    ]
    return grid(header, out)


def cmd_reclaim(args: argparse.Namespace) -> int:
    from xlat import reclaim as rc

    take_positional(args, "trace", "TRACE")
    if args.granularities == []:  # `--granularity ''`: no value, not the default ones
        raise CliError("--granularity needs at least one granularity (bits per 2MB page: 1, 2, 4, ..., 512)")
    bw = rc.DEFAULT_BANDWIDTH if args.bandwidth is None else args.bandwidth * 1e9
    r = noting(
        f"simulating eviction on {args.trace}",
        progress(args),
        rc.analyze,
        args.trace,
        fraction=rc.DEFAULT_FRACTION if args.fraction is None else args.fraction,
        granularities=rc.DEFAULT_GRANULARITIES if args.granularities is None else args.granularities,
        epoch=rc.DEFAULT_EPOCH if args.epoch is None else args.epoch,
        fault_us=rc.DEFAULT_FAULT_US if args.fault_us is None else args.fault_us,
        read_bandwidth=bw,
        write_bandwidth=bw,
        progress=progress(args),
        **window_kw(args),
    )
    emit_json(args.json, {**r.to_json(), "rows": r.rows()}, trace=args.trace, window=window_kw(args))
    if to_stdout(args):
        return 0
    print(table(summary_rows(r.to_json())))
    print("\nper granularity (time: paging-time estimate; vs first: against the first G)")
    print(reclaim_table(r.rows()))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "reclaim",
        parents=[common],
        help="eviction under memory pressure with access/dirty bits at G bits per 2MB page (PRISM)",
        description="Read a trace (or workload) twice: first its footprint (the 2MB pages it "
        "touches), then replay it against physical memory of a fraction of that footprint, once "
        "per granularity G: a CLOCK reclaim policy sees one accessed and one dirty bit per 2MB/G "
        "chunk (accessed bits cleared every epoch) and evicts whole chunks, writing back dirty "
        "ones and dropping clean ones. Reports faults, refaults, bytes written back and read in, "
        "and a paging-time estimate. The PRISM paper's study (Ausavarungnirun et al. 2020, Section 6.5) is GPU demand "
        "paging; this runs it on CPU traces. See docs/prism.md.",
    )
    s.add_argument(
        "trace", nargs="?", metavar="TRACE", help="trace file (.xlat), text trace (.txt) or workload:... spec"
    )
    s.add_argument(
        "--fraction",
        type=_float,
        metavar="F",
        help="physical memory as a share of the footprint, above 0 and at most 1 (default 0.9: Ausavarungnirun et al. 2020 (PRISM), Section 5)",
    )
    s.add_argument(
        "--granularity",
        "--granularities",
        dest="granularities",
        type=int_list,
        metavar="G1,G2,...",
        help="bits per 2MB page, powers of two from 1 to 512 (default 1,8,32,512: Figure 10)",
    )
    s.add_argument(
        "--epoch",
        type=int_arg,
        metavar="N",
        help="instructions between clearings of the accessed bits (default 100,000,000)",
    )
    s.add_argument(
        "--fault-us", type=_float, metavar="US", help="cost of one fault in microseconds (default 20)"
    )
    s.add_argument(
        "--bandwidth",
        type=_float,
        metavar="GB/s",
        help="transfer bandwidth each way in GB/s (default 15.75: PCIe 3.0 x16)",
    )
    add_json_flag(s, "every figure")
    add_window_flags(s, warmup=False)
    s.set_defaults(func=cmd_reclaim)
