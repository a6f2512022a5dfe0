"""``xlat mrc``: one-pass LRU miss-ratio curves of a single-level TLB of every size, per page
size, after the OS model has chosen page sizes (docs/mrc.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xlat.cli.common import (
    CliError,
    add_window_flags,
    grid,
    int_arg,
    int_list,
    not_empty,
    progress,
    window_kw,
)
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import noting
from xlat.cli.numfmt import count, ratio


def _sizes(text: str) -> list[str]:
    from xlat.missratio import PAGE_SIZES

    out = []
    for x in text.split(","):
        x = x.strip()
        if not x:
            continue
        norm = x.upper().replace("KIB", "KB").replace("MIB", "MB").replace("GIB", "GB")
        if norm not in PAGE_SIZES:
            raise CliError(f"unknown page size '{x}' (known: 4KB, 2MB, 1GB)")
        if norm in out:
            raise CliError(f"--page-sizes names {norm} twice; give each page size once (4KB, 2MB, 1GB)")
        out.append(norm)
    if not out:
        raise CliError("--page-sizes needs at least one page size (4KB, 2MB, 1GB)")
    return out


def curve_table(d: dict[str, Any]) -> str:
    """Misses and MPKI at power-of-two entry counts: one row per entry count, one column pair
    per (page size, sets) curve with accesses."""
    curves = [c for c in d["curves"] if c["accesses"]] or d["curves"]
    ins = d["instructions"]
    entries = sorted({w * c["sets"] for c in curves for w in range(1, len(c["misses"]) + 1)})
    entries = [e for e in entries if e & (e - 1) == 0]
    header = ["entries"]
    for c in curves:
        label = f"{c['page_size']} " + ("FA" if c["sets"] == 1 else f"{c['sets']}s")
        header += [f"{label} misses", f"{label} MPKI"]
    rows = []
    for e in entries:
        row = [count(e)]
        for c in curves:
            w = e // c["sets"]
            if e % c["sets"] or not 1 <= w <= len(c["misses"]):
                row += ["", ""]
                continue
            m = c["misses"][w - 1]
            row += [count(m), ratio(1000 * m / ins) if ins else "n/a"]
        rows.append(row)
    return grid(header, rows)


def cmd_mrc(args: argparse.Namespace) -> int:
    from xlat.missratio import DEFAULT_MAX_ENTRIES, mrc

    take_positional(args, "trace", "TRACE")
    if args.plot:
        from xlat._optional import need_pyplot

        need_pyplot("--plot")  # before the run, not after it
    if args.policy is not None and args.policy not in ("4k", "thp"):
        raise CliError(f"--policy takes 4k or thp (mosaic comes from --layout), not '{args.policy}'")
    if args.cpu and args.config:
        raise CliError("give at most one of --cpu and --config")
    sizes = None if args.page_sizes is None else _sizes(args.page_sizes)  # '' is no size, not all
    not_empty(args.sets, "--sets", "number of sets (1 for fully associative)")
    r = noting(
        f"computing miss-ratio curves of {args.trace}",
        progress(args),
        mrc,
        args.trace,
        cpu=args.cpu,
        config=args.config,
        set=list(args.set or ()),
        layout=args.layout,
        policy=args.policy,
        sets=args.sets or [1],
        max_entries=DEFAULT_MAX_ENTRIES if args.max_entries is None else args.max_entries,
        page_sizes=["4KB", "2MB", "1GB"] if sizes is None else sizes,
        progress=progress(args),
        **window_kw(args),
    )
    if args.plot:
        rng = args.entries_range
        if rng is not None and (len(rng) != 2 or not 1 <= rng[0] <= rng[1]):
            raise CliError(f"--entries-range takes LO,HI with 1 <= LO <= HI, not {','.join(map(str, rng))}")
        r.plot(
            args.plot,
            metric="misses" if args.misses else "mpki",
            yscale=args.yscale,
            entries=None if rng is None else (rng[0], rng[1]),
        )
        print(f"plot written to {args.plot}", file=sys.stderr)
    emit_json(args.json, r.data, trace=args.trace, window=window_kw(args), config=r.run.check())
    if to_stdout(args):
        return 0
    d = r.data
    print(
        f"{d['trace']}: {d['accesses']:,} accesses, {d['instructions']:,} instructions, "
        f"policy {d['policy']} ({d['config']}); LRU, one TLB per page size"
    )
    by_size = {}
    for c in d["curves"]:
        by_size[c["page_size"]] = c["accesses"]
    print("accesses by page size: " + ", ".join(f"{p} {n:,}" for p, n in by_size.items()))
    print(curve_table(d))
    print("FA: fully associative; Ns: N sets (entries = ways x sets). See docs/mrc.md.")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "mrc",
        parents=[common],
        help="LRU miss-ratio curves of a TLB of every size, in one pass",
        description="Read a trace (or workload) once, run the OS model (page sizes from its policy: "
        "4KB, THP, a mosaic layout), and count the misses of a single-level LRU TLB of every size "
        "up to --max-entries, one TLB per page size: fully associative (Mattson stack distances) "
        "and, per --sets value, set-associative at every associativity. Exact: each point equals "
        "`xlat sim` of the single-level configuration it models (docs/mrc.md).",
    )
    s.add_argument("trace", nargs="?", metavar="TRACE", help="trace file (.xlat, .txt) or workload:... spec")
    s.add_argument(
        "--cpu", metavar="NAME", help="preset whose OS and memory sections apply (default skylake)"
    )
    s.add_argument("--config", metavar="FILE", help="configuration TOML file instead of a preset")
    s.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a configuration field (repeatable), e.g. os.asid=false, memory.size=8GiB",
    )
    s.add_argument("--policy", metavar="4k|thp", help="the OS page-size policy (os.policy); mosaic: --layout")
    s.add_argument("--layout", metavar="FILE", help="a mosaic layout (selects the mosaic policy)")
    s.add_argument(
        "--page-sizes",
        metavar="LIST",
        help="page sizes to report, e.g. 4KB,2MB (default all three; every size is tracked)",
    )
    s.add_argument(
        "--sets",
        type=int_list,
        metavar="N1,N2,...",
        help="set counts, powers of two (1: fully associative; default 1)",
    )
    s.add_argument(
        "--max-entries",
        type=int_arg,
        metavar="N",
        help="largest TLB reported (default 65536; ways up to N / sets)",
    )
    add_json_flag(s, "every curve")
    s.add_argument("--plot", metavar="OUT.png", help="plot MPKI against entries (log2 axis) to a PNG")
    s.add_argument("--misses", action="store_true", help="plot misses instead of MPKI")
    s.add_argument(
        "--yscale", choices=("log", "linear"), default="log", help="the plot's y axis (default: log)"
    )
    s.add_argument(
        "--entries-range",
        metavar="LO,HI",
        type=int_list,
        help="plot only TLBs of LO to HI entries (e.g. 16,4096)",
    )
    add_window_flags(s, warmup=False)
    s.set_defaults(func=cmd_mrc, parser=s)
