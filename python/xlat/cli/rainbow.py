"""``xlat rainbow``: Rainbow (Wang et al. 2018) and its four baselines on one trace: TLB misses, the
share of cycles in translation and its parts, IPC, migration traffic against the footprint, and
memory energy, one column per configuration (``configs/rainbow/``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from xlat.cli.common import CliError, add_window_flags, grid, human_bytes, name_list, progress, window_kw
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import still_running


def _pct(v: float) -> str:
    return f"{100 * v:.2f}%"


def _num(v: float) -> str:
    return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"


#: (label, key, format) of the lines printed.
LINES = [
    ("TLB misses / kilo-instruction", "tlb_mpki", _num),
    ("cycles in translation", "translation_share", _pct),
    ("  TLB hits below L1", "share_stlb_hit", _pct),
    ("  page walks", "share_walk", _pct),
    ("  4KB TLB below a superpage hit", "share_tlb4k", _pct),
    ("  bitmap cache", "share_bitmap", _pct),
    ("  pointer reads (remap)", "share_pointer", _pct),
    ("cycles migrating (copy+clflush+shootdown+remap)", "migration_share", _pct),
    ("IPC (additive: every latency in series)", "ipc", _num),
    ("IPC / Flat-static (additive)", "ipc_vs_flat", _num),
    ("IPC / HSCC-4KB-mig (additive)", "ipc_vs_hscc4k", _num),
    ("IPC (overlap model)", "ipc_overlap", _num),
    ("IPC / Flat-static (overlap)", "ipc_overlap_vs_flat", _num),
    ("IPC / HSCC-4KB-mig (overlap)", "ipc_overlap_vs_hscc4k", _num),
    ("memory reads from DRAM", "dram_read_share", _pct),
    ("pages moved to DRAM", "promotions", lambda v: f"{v:,}"),
    ("pages moved back", "demotions", lambda v: f"{v:,}"),
    ("Rainbow copies made / ever read", "copies_pair", str),
    ("Rainbow stale remaps (bit set, page since unmapped)", "stale_remaps", lambda v: f"{v:,}"),
    ("migration traffic", "migration_bytes", human_bytes),
    ("migration traffic / footprint", "migration_vs_footprint", _num),
    ("memory energy (mJ)", "energy_mj", _num),
    ("energy / Flat-static", "energy_vs_flat", _num),
]


def rows_for_print(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        r = dict(r)
        r["migration_share"] = sum(r[f"share_{p}"] for p in ("migration", "clflush", "shootdown", "remap"))
        r["energy_mj"] = r["energy_nj"] / 1e6
        if "copies_made" in r:
            r["copies_pair"] = f"{r['copies_made']:,} / {r['copies_used']:,}"
        out.append(r)
    return out


def columns(rows: list[dict[str, Any]]) -> str:
    """One column per configuration, one line per figure some configuration has."""
    lines = [
        [label, *(fmt(r[key]) if key in r else "-" for r in rows)]
        for label, key, fmt in LINES
        if any(key in r for r in rows)
    ]
    return grid(["", *(r["label"] for r in rows)], lines)


def cmd_rainbow(args: argparse.Namespace) -> int:
    from xlat import rainbow

    take_positional(args, "trace", "TRACE_OR_WORKLOAD")
    named = name_list(args.configs, "--configs", f"configuration ({', '.join(rainbow.CONFIGS)})")
    configs = rainbow.CONFIGS if named is None else tuple(named)
    unknown = [c for c in configs if c not in rainbow.CONFIGS]
    if unknown:
        raise CliError(f"unknown configuration '{unknown[0]}' (known: {', '.join(rainbow.CONFIGS)})")
    # The sizes before any simulation, named as typed (a bad one failed inside the first
    # configuration, as memory.size, a key nobody typed).
    sizes = rainbow.memory_sizes(args.dram, args.nvm, names=("--dram", "--nvm"))
    if sizes["dram"] > sizes["nvm"] and any(c != "dram-only-2mb" for c in configs):
        print(
            f"xlat: warning: DRAM ({human_bytes(sizes['dram'])}) is larger than NVM "
            f"({human_bytes(sizes['nvm'])}): Rainbow and HSCC take NVM as the large, slow tier and DRAM "
            "as its cache (the Rainbow paper, Wang et al. 2018: 4 GB of DRAM, 32 GB of NVM); running anyway",
            file=sys.stderr,
        )
    with still_running(
        f"simulating {args.trace} under {len(configs)} hybrid-memory configurations",
        enabled=not progress(args),
    ):
        cmp = rainbow.compare(
            args.trace,
            dram=args.dram,
            nvm=args.nvm,
            sets=args.set or (),
            configs=configs,
            progress=progress(args),
            **window_kw(args),
        )
    rows = [{**r, "dram": cmp.dram, "nvm": cmp.nvm} for r in cmp.rows()]
    emit_json(
        args.json,
        rows,
        trace=args.trace,
        window=window_kw(args),
        config=[cmp.results[r["config"]].config for r in rows],
    )
    if args.plot:
        rainbow.plot_many({args.trace: cmp}, args.plot, title=f"Rainbow against its baselines: {args.trace}")
    if to_stdout(args):
        return 0
    scaled = [f"{k} {v}" for k, v in (("DRAM", args.dram), ("NVM", args.nvm)) if v]
    dram = f" (memory scaled: {', '.join(scaled)})" if scaled else ""
    print(f"{args.trace}: the five configurations of configs/rainbow{dram}\n")
    print(columns(rows_for_print(cmp.rows())))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "rainbow",
        parents=[common],
        help="Rainbow (hybrid DRAM/NVM with superpages) against its four baselines",
        description="Simulate a trace (or workload) under the five configurations of "
        "configs/rainbow (Flat-static, HSCC-4KB-mig, HSCC-2MB-mig, Rainbow, DRAM-only with 2MB "
        "pages; the Rainbow paper, Wang et al. 2018, section IV-A) and print, per configuration, TLB misses per "
        "kilo-instruction, the share of cycles in translation and its parts, IPC (also against "
        "Flat-static and HSCC-4KB-mig), migration traffic against the footprint and memory "
        "energy. See docs/rainbow.md.",
    )
    s.add_argument("trace", nargs="?", metavar="TRACE_OR_WORKLOAD", help="trace file or workload:... spec")
    s.add_argument(
        "--dram",
        metavar="SIZE",
        help="scale the hybrid configurations' DRAM (e.g. 256MiB; default 4GiB as in Wang et al. 2018); "
        "DRAM-only's DRAM becomes DRAM + NVM, and a scaled DRAM keeps its static power per byte",
    )
    s.add_argument("--nvm", metavar="SIZE", help="scale the hybrid configurations' NVM (default 32GiB)")
    s.add_argument(
        "--configs",
        metavar="A,B,...",
        help="which configurations (default: all five, flat-static,hscc-4kb,hscc-2mb,rainbow,dram-only-2mb)",
    )
    s.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="a configuration key for every run (repeatable)"
    )
    s.add_argument("--plot", metavar="PNG", help="write the comparison's bars to this PNG file")
    add_json_flag(s, "one row per configuration")
    add_window_flags(s)
    s.set_defaults(func=cmd_rainbow)
