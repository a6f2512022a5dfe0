"""``xlat sim``: simulate a trace under one or several configurations and print a table of the
key metrics (``--json``/``--csv`` write every counter)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from xlat.cli.common import CliError, progress


def sim_runs(args: argparse.Namespace) -> list:
    """The configurations ``--cpu``/``--config`` x ``--policies``/``--layout`` ask for."""
    from xlat.sim import Run

    bases = [("cpu", c) for c in (args.cpu or [])] + [("config", c) for c in (args.config or [])]
    if not bases:
        bases = [("cpu", "skylake")]
    policies = [p.strip() for p in args.policies.split(",") if p.strip()] if args.policies else []
    for p in policies:
        if p not in ("4k", "thp"):
            raise CliError(f"--policies takes 4k and thp (mosaic comes from --layout), not '{p}'")
    runs = []
    for kind, name in bases:
        base = {kind: name, "set": tuple(args.set or ())}
        if not policies and not args.layout:
            runs.append(Run(**base))
        for p in policies:
            runs.append(Run(**{**base, "set": (f"os.policy={p}", *base["set"])}))
        for lay in args.layout or []:
            runs.append(Run(**base, layout=lay))
    return runs


def sim_table(results: list) -> str:
    """Key metrics, one column per configuration."""

    def fmt(v: float) -> str:
        return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:.3f}"

    def level_rows(r, key: str) -> float:
        return r.counters.get(key, 0)

    rows: list[tuple[str, list[str]]] = []

    def add(label: str, f) -> None:
        rows.append((label, [fmt(f(r)) for r in results]))

    nlev = max(len([k for k in r.derived if k.endswith(".mpki")]) for r in results)
    add("accesses", lambda r: r.counters["accesses"])
    add("instructions", lambda r: r.counters["instructions"])
    for lv in range(1, nlev + 1):
        add(
            f"TLB L{lv} misses (data+instr)",
            lambda r, lv=lv: (
                level_rows(r, f"tlb_level{lv}.data.misses")
                + level_rows(r, f"tlb_level{lv}.instruction.misses")
            ),
        )
        add(f"TLB L{lv} MPKI", lambda r, lv=lv: r.derived.get(f"tlb_level{lv}.mpki", 0.0))
    add("L2-TLB hits (H)", lambda r: r.derived["H"])
    add("walks (M)", lambda r: r.derived["M"])
    add("walk cycles (C)", lambda r: r.derived["C"])
    add("loads per walk", lambda r: r.derived["loads_per_walk"])
    add("cycles per walk", lambda r: r.derived["cycles_per_walk"])
    names = [k.split(".")[-1] for k in results[0].counters if k.startswith("walker.loads_hit.")]
    for n in names:
        add(f"walk loads hitting {n}", lambda r, n=n: r.counters.get(f"walker.loads_hit.{n}", 0))

    def by_size(prefix: str) -> list[str]:
        return [" / ".join(f"{r.counters[f'{prefix}_{s}']:,}" for s in ("4k", "2m", "1g")) for r in results]

    rows.append(("walks 4KB / 2MB / 1GB", by_size("walker.walks")))
    add("page faults", lambda r: r.counters["os.page_faults"])
    rows.append(("faults 4KB / 2MB / 1GB", by_size("os.faults")))
    add("shootdowns", lambda r: r.counters["shootdowns"])
    add("est. cycles", lambda r: r.derived["time.total_cycles"])
    # Two different costs, shown apart (time.translation_fraction is their sum).
    for label, key in (("walk cycles share", "walk_share"), ("L2-TLB hit cycles share", "tlb_hit_share")):
        rows.append((label, [f"{100 * r.derived[f'time.{key}']:.1f}%" for r in results]))
    head = ["", *[r.label for r in results]]
    widths = [max(len(x) for x in [head[0], *(k for k, _ in rows)])]
    for i in range(len(results)):
        widths.append(max(len(head[i + 1]), *(len(v[i]) for _, v in rows)))
    lines = [
        "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths, strict=True)))
    ]
    for k, vals in rows:
        lines.append(
            "  ".join([k.ljust(widths[0]), *(v.rjust(w) for v, w in zip(vals, widths[1:], strict=True))])
        )
    return "\n".join(lines)


def write_csv(path: str, results: list) -> None:
    import csv

    dicts = [r.to_dict() for r in results]
    keys = list(dicts[0])
    for d in dicts[1:]:
        keys += [k for k in d if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(dicts)


def cmd_sim(args: argparse.Namespace) -> int:
    import time

    from xlat.sim import simulate_many

    runs = sim_runs(args)
    t = time.perf_counter()
    bar = progress(args) and len(runs) == 1
    results = simulate_many(args.trace, runs, threads=args.threads, progress=bar)
    secs = time.perf_counter() - t
    if args.json:
        doc = results[0].data if len(results) == 1 else {"results": [r.data for r in results]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
    if args.csv:
        write_csv(args.csv, results)
    print(f"trace: {args.trace}")
    print(sim_table(results))
    acc = sum(r.counters["accesses"] for r in results)
    print(
        f"\nsimulated {acc:,} accesses in {secs:.2f} s ({acc / secs / 1e6:.1f} M accesses/s over "
        f"{len(results)} configuration(s))",
        file=sys.stderr,
    )
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "sim",
        parents=[common],
        help="simulate the address-translation path of a trace",
        description="Simulate a trace or workload through a CPU's TLBs, paging-structure "
        "caches, page walker and caches, with an OS model (VMAs, buddy allocator, "
        "page tables, "
        "4KB/THP/hugetlb/mosaic pages). Prints a table; --json/--csv write every "
        "counter. Several --cpu/--config/--policies/--layout values make several "
        "configurations, simulated in parallel.",
    )
    s.add_argument("trace", metavar="TRACE_OR_WORKLOAD")
    s.add_argument(
        "--cpu",
        action="append",
        metavar="PRESET",
        help="CPU preset (sandybridge, haswell, broadwell, skylake, sapphirerapids, zen4); repeatable",
    )
    s.add_argument("--config", action="append", metavar="FILE", help="configuration TOML file; repeatable")
    s.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a configuration field, e.g. tlb.stlb.entries=2048 or os.policy=thp; repeatable",
    )
    s.add_argument(
        "--policies", metavar="LIST", help="run each configuration with these page policies: 4k,thp"
    )
    s.add_argument(
        "--layout",
        action="append",
        metavar="FILE",
        help="mosaic layout TOML (selects the mosaic policy); repeatable",
    )
    s.add_argument("--json", metavar="OUT", help="write the result(s) as JSON (docs/simulator.md)")
    s.add_argument("--csv", metavar="OUT", help="write one CSV row of counters per configuration")
    s.add_argument(
        "--threads", type=int, default=None, help="threads for several configurations (default: all cores)"
    )
    s.set_defaults(func=cmd_sim)
