"""``xlat fidelity``: how well G access/dirty bits per 2MB page approximate the 4KB bits
(PRISM, Ausavarungnirun et al. 2020, Section 3), per epoch, on one trace or workload."""

from __future__ import annotations

import argparse
import os
import shutil
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
    table,
    window_kw,
)
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import noting


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def summary_rows(d: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("trace", d["trace"]),
        ("accesses", f"{d['accesses']:,} ({d['stores']:,} stores)"),
        ("instructions", f"{d['instructions']:,}"),
        (
            "epoch",
            f"{d['epoch']:,} instructions: {d['epochs']:,} epochs, {d['active_epochs']:,} with accesses",
        ),
        ("2MB regions touched", f"{d['regions']:,}"),
        ("samples (region, epoch)", f"{d['samples']:,} ({d['dirty_samples']:,} with a dirty bit)"),
    ]


def loss_table(d: dict[str, Any]) -> str:
    header = ["G bits/2MB", "A loss %", "A std %", "A entropy", "D loss %", "D std %", "D entropy"]
    rows = []
    for a, dd in zip(d["accessed"], d["dirty"], strict=True):
        rows.append(
            [
                str(a["g"]),
                _pct(a["mean"]),
                _pct(a["std"]),
                f"{a['entropy']:.2f}",
                _pct(dd["mean"]),
                _pct(dd["std"]),
                f"{dd['entropy']:.2f}",
            ]
        )
    return grid(header, rows)


def scale_table(d: dict[str, Any]) -> str:
    gs = d["granularities"]
    j = gs.index(1) if 1 in gs else 0
    g = gs[j]
    header = [
        "window (instr)",
        "samples",
        f"A spatial % (G={g})",
        "A temporal %",
        "A temp/set bit %",
        f"D spatial % (G={g})",
        "D temporal %",
    ]
    rows = [
        [
            f"{s['epoch']:,}",
            f"{s['samples']:,}",
            _pct(s["spatial_accessed"][j]),
            _pct(s["temporal_accessed"]),
            _pct(s["temporal_accessed_per_set_bit"]),
            _pct(s["spatial_dirty"][j]),
            _pct(s["temporal_dirty"]),
        ]
        for s in d["scales"]
    ]
    return grid(header, rows)


def _is_live(args: argparse.Namespace) -> bool:
    """`--pid`, or a program after `--`: several words, or one that is no trace (a workload: spec,
    a .xlat/.txt name, or an existing file that is not executable) but a program."""
    if args.pid is not None or len(args.trace) > 1:
        return True
    if not args.trace:
        raise CliError("give a trace, --pid PID, or -- PROGRAM ARGS")
    t = args.trace[0]
    if t.startswith("workload:") or t.endswith((".xlat", ".txt")) or t == "-":
        return False
    if os.path.isfile(t):
        return os.access(t, os.X_OK)
    if shutil.which(t):
        return True
    raise CliError(f"there is no trace file or program named {t!r}")


def cmd_live(args: argparse.Namespace) -> int:
    from xlat.softdirty import SoftDirtyError, measure

    if args.pid is not None and args.trace:
        raise CliError("give either --pid PID or a program after --, not both")
    command = None if args.pid is not None else list(args.trace)
    try:
        r = measure(pid=args.pid, command=command, interval=args.interval, count=args.count)
    except SoftDirtyError as e:
        raise CliError(str(e)) from None
    d = r.to_json()
    emit_json(args.json, d, kind="fidelity live")
    if to_stdout(args):
        return 0
    print(
        table(
            [
                ("process", d["target"]),
                (
                    "intervals",
                    f"{d['intervals']:,} of {d['interval_s']:g} s (soft-dirty bits cleared at each)",
                ),
                ("2MB regions", f"{d['regions']:,} (writable mappings with a present page)"),
                ("samples (region, interval)", f"{d['samples']:,} ({d['dirty_samples']:,} with a dirty bit)"),
            ]
        )
    )
    print("\ndirty-bit fidelity loss per granularity (soft-dirty bits of present 4KB pages)")
    rows = [[str(x["g"]), _pct(x["mean"]), _pct(x["std"]), f"{x['entropy']:.2f}"] for x in d["dirty"]]
    print(grid(["G bits/2MB", "D loss %", "D std %", "D entropy"], rows))
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    from xlat.fidelity import DEFAULT_EPOCH, GRANULARITIES, analyze

    take_positional(args, "trace", "")
    if _is_live(args):
        return cmd_live(args)
    if args.plot:
        from xlat._optional import need_pyplot

        need_pyplot("--plot")  # before the run, not after it
    not_empty(args.granularities, "--granularities", "granularity (bits per 2MB page: 1, 2, 4, ..., 512)")
    epoch = DEFAULT_EPOCH if args.epoch is None else args.epoch
    r = noting(
        f"measuring access/dirty-bit fidelity of {args.trace[0]}",
        progress(args),
        analyze,
        args.trace[0],
        epoch=epoch,
        granularities=args.granularities or GRANULARITIES,
        epochs=args.epochs,
        progress=progress(args),
        **window_kw(args),
    )
    for w in r.warnings():
        print(f"xlat: warning: {w}.", file=sys.stderr)
    if args.plot:
        r.plot(args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    d = r.to_json()
    emit_json(args.json, d, trace=args.trace[0], window=window_kw(args))
    if to_stdout(args):
        return 0
    print(table(summary_rows(d)))
    print("\nfidelity loss per granularity (A: accessed bits, D: dirty bits; entropy: log2 distinct vectors)")
    print(loss_table(d))
    if d["scales"]:
        print("\nspatial and temporal loss over longer windows (bits accumulated over the window)")
        print(scale_table(d))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "fidelity",
        parents=[common],
        help="fidelity loss of access/dirty bits kept at G bits per 2MB page (PRISM)",
        description="Read a trace (or workload) once and, per epoch of N instructions and per 2MB "
        "region touched, compare the 512 accessed and dirty bits of its 4KB pages with G bits per "
        "2MB page (each the OR of 512/G 4KB bits), G = 1, 2, 4, ..., 512: the mean and standard "
        "deviation of the fraction of 4KB bits the G bits get wrong, and the entropy (log2 of the "
        "distinct bit vectors); then the spatial and temporal loss of bits accumulated over longer "
        "windows (PRISM: Ausavarungnirun et al. 2020, Section 3). See docs/prism.md.",
    )
    s.add_argument(
        "trace",
        nargs="*",
        metavar="TRACE",
        help="trace file (.xlat), text trace (.txt) or workload:... spec; or -- PROGRAM ARGS to run a "
        "program and measure its live dirty bits (soft-dirty: needs a kernel with CONFIG_MEM_SOFT_DIRTY, and root)",
    )
    s.add_argument(
        "--pid",
        type=int_arg,
        metavar="PID",
        help="measure the live dirty bits of a running process from its soft-dirty bits (root)",
    )
    s.add_argument(
        "--interval",
        type=float,
        default=0.1,
        metavar="S",
        help="live mode: seconds between clearings of the soft-dirty bits (default 0.1: Figure 3's 100 ms base)",
    )
    s.add_argument(
        "--count",
        type=int_arg,
        metavar="N",
        help="live mode: stop after N intervals (default: until the process exits)",
    )
    s.add_argument(
        "--epoch",
        type=int_arg,
        metavar="N",
        help="instructions per epoch (default 100,000,000: Ausavarungnirun et al. 2020 (PRISM), Section 3.1)",
    )
    s.add_argument(
        "--epochs",
        type=int_list,
        metavar="N1,N2,...",
        help="window lengths in instructions for the spatial/temporal study, multiples of --epoch "
        "(default: the epoch times 1, 2, 4, ..., 128)",
    )
    s.add_argument(
        "--granularities",
        type=int_list,
        metavar="G1,G2,...",
        help="bits per 2MB page to report, powers of two from 1 to 512 (default all ten)",
    )
    add_json_flag(s, "every figure")
    s.add_argument("--plot", metavar="OUT.png", help="plot loss against G (accessed and dirty) to a PNG")
    add_window_flags(s, warmup=False)
    s.set_defaults(func=cmd_fidelity, parser=s)
