"""``xlat superpage-touch``: Observation 1 of Wang et al. 2018 (Rainbow), touched 4KB pages per 2MB
superpage per interval (Figure 1's CDF and Table II's ranges), on one trace or workload."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import add_window_flags, grid, int_arg, progress, table, window_kw
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import noting

#: The CDF points printed.
POINTS = (1, 8, 16, 32, 64, 128, 256, 384, 511, 512)


def cmd_touch(args: argparse.Namespace) -> int:
    from xlat import touch

    take_positional(args, "trace", "TRACE")
    r = noting(
        f"counting touched pages of {args.trace}",
        progress(args),
        touch.analyze,
        args.trace,
        interval=touch.DEFAULT_INTERVAL if args.interval is None else args.interval,
        progress=progress(args),
        **window_kw(args),
    )
    emit_json(args.json, r.to_json(), trace=args.trace, window=window_kw(args))
    if args.plot:
        r.plot(args.plot)
    if to_stdout(args):
        return 0
    d = r.data
    print(
        table(
            [
                ("trace", r.trace),
                ("interval", f"{d['interval']:,} instructions ({d['intervals']:,} intervals)"),
                ("(superpage, interval) pairs", f"{r.samples:,}"),
            ]
        )
    )
    print("\nsuperpages with at most n touched 4KB pages (Figure 1's CDF)")
    print(grid(["n", "share"], [[str(n), f"{100 * r.at_most(n):.2f}%"] for n in POINTS]))
    print("\nsuperpages by touched 4KB pages (Table II's ranges)")
    print(grid(["pages", "share"], [[b["pages"], f"{100 * b['share']:.2f}%"] for b in r.buckets()]))
    if args.plot:
        print(f"\nplot: {args.plot}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "superpage-touch",
        parents=[common],
        help="touched 4KB pages per 2MB superpage per interval (Rainbow's Observation 1)",
        description="Read a trace (or workload) once and count, per interval of N instructions, the "
        "4KB pages touched in every 2MB-aligned virtual region (a superpage under THP): the CDF over "
        "(superpage, interval) pairs is Figure 1 of the Rainbow paper (Wang et al. 2018), the shares in 1-32, 33-64, ..., "
        "385-512 pages its Table II's ranges. Regions of all address spaces are counted together "
        "(for single-process traces). See docs/rainbow.md.",
    )
    s.add_argument(
        "trace", nargs="?", metavar="TRACE", help="trace file (.xlat), text trace (.txt) or workload:... spec"
    )
    s.add_argument(
        "--interval",
        type=int_arg,
        metavar="N",
        help="instructions per interval (default 100,000,000: the 10^8-cycle interval of Wang et al. 2018 (Rainbow) at one cycle per instruction)",
    )
    s.add_argument("--plot", metavar="PNG", help="write the CDF to this PNG file")
    add_json_flag(s, "the histogram, CDF and ranges")
    add_window_flags(s, warmup=False)
    s.set_defaults(func=cmd_touch)
