"""``xlat model mach``: the analytical model of TLB miss handling of Bala's thesis (1995,
chapter 5) from a run's counts, or the chapter's own numbers from its own inputs
(``--document``)."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import CliError, grid, load_counts, table
from xlat.cli.jsonopt import add_json_flag, emit_json, to_stdout


def _pct(v: float) -> str:
    return f"{100 * v:.2f}%"


def cmd_mach(args: argparse.Namespace) -> int:
    from xlat import mach_model as mm

    if args.document:
        doc = mm.document_chapter5()
        emit_json(args.json, {"document": doc, "inputs": mm.DOC}, kind="model mach document")
        if not to_stdout(args):
            print(
                "Bala 1995, chapter 5, from its own inputs (S_T = 0.5, I_A = 0.5 R, I_T = 0.06 R, M_T = 0.07, M_A = 0.02):"
            )
            print(table([(k, f"{v:.5g}") for k, v in doc.items()]))
        return 0
    if not args.counts:
        raise CliError("give --counts FILE.json (a run's counters) or --document")
    base = load_counts(args.counts)
    if args.scheme:
        S_T = mm.speedup_of_scheme(base, load_counts(args.scheme), args.tc)
    elif args.st is not None:
        S_T = args.st
    else:
        raise CliError("give --scheme FILE.json (the run with a scheme) or --st S_T (the TLB time it saves)")
    x = mm.with_split(mm.inputs_from_counts(base, args.tc), args.split)
    out = mm.chapter5(x, S_T)
    out["split"] = args.split
    flat = mm.flatten_counts(base)
    out["misses"] = {k: flat[k] for k in mm.MISS_COUNTERS if k in flat}
    for name in ("mach.handler_cycles", "mach.cycles"):  # (given, or the Mach machine's own)
        if name in flat:
            out["handler_cycles_simulated"] = flat[name]
    if args.plot:
        mm.plot_predictions(x, S_T, args.plot)
    emit_json(
        args.json,
        out,
        inputs=[
            f.rsplit(":", 1)[0] if ":" in f and not f.endswith(".json") else f
            for f in (args.counts, args.scheme)
            if f
        ],
    )
    if to_stdout(args):
        return 0
    i = out["inputs"]
    print(
        table(
            [
                ("I_A / I_T", f"{i['I_A']:,.0f} / {i['I_T']:,.0f}"),
                ("M_A / M_T (misses per instruction)", f"{i['M_A']:.4g} / {i['M_T']:.4g}"),
                ("T_C (cycles)", f"{i['T_C']:g}"),
                ("R (eq. 5.1, cycles)", f"{out['R']:,.0f}"),
                ("TLB handling (cycles)", f"{out['tlb_cycles']:,.0f}"),
                ("time in TLB handling", _pct(out["tlb_fraction"])),
                ("S_T", f"{S_T:.4g}"),
                ("delta (eq. 5.2)", _pct(out["delta"])),
            ]
        )
    )
    rows = [
        [
            r["scenario"],
            f"{r['T_C']:g}",
            _pct(r["tlb_fraction"]),
            _pct(r["delta"]),
            f"{100 * r['delta_increase']:+.2f}",
        ]
        for r in out["scenarios"]
    ]
    print()
    print(grid(["faster processor", "T_C", "TLB time", "delta", "change (points)"], rows))
    if args.split == "counted" and i["M_T"] < i["M_A"]:
        print(
            f"\nM_T < M_A: the handlers miss the cache less often than the program, so a faster processor "
            f"lowers delta (equation 5.7). The machine models only the handlers' page-table, STLB and PTLB "
            f"loads; the rest of each handler's Table 2.1 cost counts as instructions. --split document "
            f"uses the document's split (I_T half the TLB time, M_T = 1/T_C = {1 / i['T_C']:.4g}): "
            f"docs/mach-benchmark.md"
        )
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    m = sub.add_parser(
        "model",
        help="analytical models of the reference documents (mach: Bala 1995, chapter 5)",
        description="Analytical models of the reference documents.",
    )
    msub = m.add_subparsers(dest="model", metavar="MODEL", required=True)
    s = msub.add_parser(
        "mach",
        parents=[common],
        help="TLB handling time on faster processors (Bala 1995, chapter 5)",
        description="The analytical model of Bala 1995, chapter 5: R = I_A(1 + M_A T_C) + I_T(1 + M_T T_C) (eq. 5.1), the time in TLB handling, the "
        "runtime a scheme saves (delta, eq. 5.2) and its change on faster processors (eqs. 5.7, 5.11) "
        "from a run's counters (docs/mach-benchmark.md lists the counter names), or the chapter's own "
        "numbers (--document).",
    )
    s.add_argument(
        "--counts",
        metavar="FILE",
        help="counters of the unmodified (Mach) run: flat JSON or xlat sim --json (FILE:NAME picks configuration NAME of a several-configuration file)",
    )
    s.add_argument(
        "--split",
        choices=("counted", "document"),
        default="counted",
        help="TLB time into handler instructions and misses: counted (the machine's modelled misses; the "
        "rest of each handler's cost as instructions) or document (Bala 1995, section 5.4: I_T half the TLB time, "
        "M_T = 1/T_C)",
    )
    s.add_argument(
        "--scheme",
        metavar="FILE",
        help="counters of the run with a scheme (gives S_T); FILE:NAME as for --counts",
    )
    s.add_argument(
        "--st", type=float, metavar="S_T", help="fraction of TLB handling time a scheme saves (0..1)"
    )
    s.add_argument(
        "--tc",
        type=float,
        default=24.0,
        metavar="CYCLES",
        help="cache miss time of the run (default 24, the R3000)",
    )
    s.add_argument("--plot", metavar="PNG", help="plot delta and the TLB time against T_C")
    s.add_argument("--document", action="store_true", help="Bala 1995, chapter 5, from its own inputs")
    add_json_flag(s, "the model's figures")
    s.set_defaults(func=cmd_mach, parser=s)
