"""``xlat sim``: simulate a trace under one or several configurations and print a table of the
key metrics (``--json``/``--csv`` write every counter)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import Any

from xlat.cli.common import CliError, add_window_flags, name_list, progress, window_kw
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import still_running
from xlat.cli.numfmt import LEGEND, count, ratio, share
from xlat.cli.simsets import check_sets, sets_for


def sim_runs(args: argparse.Namespace) -> list:
    """The configurations ``--cpu``/``--config`` x ``--policies``/``--layout`` ask for."""
    from xlat.sim import Run

    bases = [("cpu", c) for c in (args.cpu or [])] + [("config", c) for c in (args.config or [])]
    if not bases:
        bases = [("cpu", "skylake")]
    policies = name_list(args.policies, "--policies", "page policy (4k, thp)") or []
    for p in policies:
        if p not in ("4k", "thp"):
            raise CliError(f"--policies takes 4k and thp (mosaic comes from --layout), not '{p}'")
    runs, labels = [], []
    for (kind, name), sets in zip(bases, sets_for(list(args.set or ()), bases), strict=True):
        base = {kind: name, "set": sets}
        if not policies and not args.layout:
            runs.append(Run(**base))
        for p in policies:
            runs.append(Run(**{**base, "set": (f"os.policy={p}", *base["set"])}))
        for lay in args.layout or []:
            runs.append(Run(**base, layout=lay))
        labels += [name] * (len(runs) - len(labels))
    check_sets(runs, labels)
    return runs


def sim_table(results: list, reports: list | None = None) -> str:
    """Key metrics, one column per configuration (with ``reports``, the energy rows too)."""

    def level_rows(r, key: str) -> float:
        return r.counters.get(key, 0)

    rows: list[tuple[str, list[str]]] = []

    def add(label: str, f, fmt=count) -> None:
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
        add(f"TLB L{lv} MPKI", lambda r, lv=lv: r.derived.get(f"tlb_level{lv}.mpki", 0.0), ratio)
    add("L2-TLB hits (H)", lambda r: r.derived["H"])
    add("walks (M)", lambda r: r.derived["M"])
    add("walk cycles (C)", lambda r: r.derived["C"])
    add("loads per walk", lambda r: r.derived["loads_per_walk"], ratio)
    add("cycles per walk", lambda r: r.derived["cycles_per_walk"], ratio)
    names = [k.split(".")[-1] for k in results[0].counters if k.startswith("walker.loads_hit.")]
    # In the hierarchy's order (L1D, L2, LLC, then DRAM), not the counters' alphabetical one.
    order = [c["name"] for c in results[0].config.get("cache", [])] + ["DRAM"]
    names.sort(key=lambda n: order.index(n) if n in order else len(order))
    for n in names:
        add(f"walk loads hitting {n}", lambda r, n=n: r.counters.get(f"walker.loads_hit.{n}", 0))

    def by_size(prefix: str) -> list[str]:
        return [" / ".join(f"{r.counters[f'{prefix}_{s}']:,}" for s in ("4k", "2m", "1g")) for r in results]

    rows.append(("walks 4KB / 2MB / 1GB", by_size("walker.walks")))
    if any("virt.vm_exits" in r.counters for r in results):
        add_virt_rows(add, ratio)
    add("page faults", lambda r: r.counters["os.page_faults"])
    rows.append(("faults 4KB / 2MB / 1GB", by_size("os.faults")))
    add("shootdowns", lambda r: r.counters["shootdowns"])
    mach = any("mach.misses" in r.counters for r in results)
    if mach:
        add_mach_rows(add, ratio)
    # The Mach machine's additive estimate has no data-cache miss time; eq. 5.1 (above) has.
    add(
        "est. cycles (additive, no data-cache misses)" if mach else "est. cycles (additive)",
        lambda r: r.derived["time.total_cycles"],
    )
    if any("time.overlap.total_cycles" in r.derived for r in results):
        add_overlap_rows(add, ratio)
    # Two different costs, shown apart (time.translation_fraction is their sum).
    for label, key in (("walk cycles share", "walk_share"), ("L2-TLB hit cycles share", "tlb_hit_share")):
        rows.append((label, [share(r.derived[f"time.{key}"]) for r in results]))
    if reports:
        add_energy_rows(rows, results, reports, ratio)
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


def add_virt_rows(add, fmt) -> None:
    """Nested paging's rows (`[virt]`, docs/virtualisation.md): each dimension's loads, the host
    walks the nested TLB left, the VM exits (their cycles are in the estimated total, not in C)."""
    nan = float("nan")

    def per_walk(key: str):
        return lambda r: (
            r.counters.get(key, nan) / r.counters["walker.walks"] if r.counters["walker.walks"] else nan
        )

    add("guest loads per walk", per_walk("walker.loads.guest"), fmt)
    add("host loads per walk", per_walk("walker.loads.host"), fmt)
    add("host walks", lambda r: r.counters.get("virt.host_walks", nan))
    add(
        "nested TLB hit ratio",
        lambda r: (
            r.counters["virt.ntlb.hits"] / r.counters["virt.ntlb.accesses"]
            if r.counters.get("virt.ntlb.accesses")
            else nan
        ),
        fmt,
    )
    add("VM exits (host faults)", lambda r: r.counters.get("virt.vm_exits", nan))


def add_overlap_rows(add, fmt) -> None:
    """The overlap time model's rows (`time.model = "overlap"`, docs/time-model.md)."""
    get = lambda k: lambda r: r.derived.get(f"time.overlap.{k}", float("nan"))  # noqa: E731
    add("est. cycles (overlap model)", get("total_cycles"))
    add("overlap: interval stall cycles", get("interval_stall_cycles"))
    add("overlap: fetch and serial stall cycles", get("fetch_stall_cycles"))
    add(
        "overlap: full store/write buffer cycles",
        lambda r: get("store_buffer_stall_cycles")(r) + get("write_buffer_stall_cycles")(r),
    )
    add("overlap: misses per interval", get("events_per_interval"), fmt)
    add("overlap: IPC", lambda r: r.counters["instructions"] / r.derived["time.overlap.total_cycles"], fmt)


TIME_NOTE = (
    "est. cycles (additive): base CPI x instructions plus every L2-TLB hit and walk in series, no "
    "data-cache misses; est. cycles (overlap model): misses overlapping within the reorder window "
    "(docs/time-model.md). Compare runtimes with the overlap model; the additive figure is kept for "
    "the documents' own formulas."
)


ENERGY_TIME_NOTE = (
    "Table 5.3 TLB-miss cycles: the formula of Karakostas 2016 (7 cycles per L1-TLB miss, 50 per L2-TLB miss), "
    "for comparing with its tables; additive TLB-miss cycles: this run's simulated L2-TLB "
    'hit and walk cycles. Neither is a runtime: for that, turn on time.model = "overlap" '
    "(docs/time-model.md)."
)


def add_mach_rows(add, fmt) -> None:
    """The software-managed TLB's rows (`[mach]`, docs/mach.md)."""
    for t in ("l1u", "l1k", "l2", "l3", "invalid"):
        add(f"mach {t} misses", lambda r, t=t: r.counters.get(f"mach.misses.{t}", 0))
        add(f"mach {t} cascaded", lambda r, t=t: r.counters.get(f"mach.cascaded.{t}", 0))
        add(f"mach {t} cycles", lambda r, t=t: r.counters.get(f"mach.cycles.{t}", 0))
    add("mach kernel misses (L1K+L2+L3)", lambda r: r.counters.get("mach.kernel_misses", 0))
    add("mach kernel miss cycles", lambda r: r.counters.get("mach.kernel_cycles", 0))
    add("mach TLB-handling cycles", lambda r: r.counters.get("mach.cycles", 0))
    add("mach STLB hits", lambda r: r.counters.get("mach.stlb.hits", 0))
    add("mach STLB hit rate", lambda r: r.derived.get("mach.stlb.hit_rate", 0.0), fmt)
    add("mach PTLB prefetches", lambda r: r.counters.get("mach.ptlb.prefetches", 0))
    add("mach PTLB cycles", lambda r: r.counters.get("mach.ptlb.cycles", 0))
    add("mach eq. 5.1 runtime R (T_C = 24)", mach_runtime)


def mach_runtime(r) -> float:
    """The runtime of Bala 1995, chapter 5 (equation 5.1) from the run's counters: the additive estimate
    plus the cache-miss time of the trace's own accesses (T_C cycles each); 0 when the counters
    do not give its inputs."""
    from xlat import mach_model as mm

    try:
        return mm.runtime(mm.inputs_from_counts(r.counters))
    except (KeyError, ValueError):
        return 0.0


def mach_notes(results: list) -> list[str]:
    """What a Mach run did not do that its configuration asks for, one sentence each."""
    out = []
    for r in results:
        m = (r.config or {}).get("mach") or {}
        if m.get("ptlb") and r.counters.get("markers", 0) == 0:
            out.append(
                f"{r.label}: the trace has no IPC markers, so the PTLB prefetched nothing "
                "(docs/mach.md: workload:clientserver or a trace with send/receive markers)"
            )
    return out


def add_energy_rows(rows: list, results: list, reports: list, fmt) -> None:
    """Table 5.3's energy and cycles per configuration (docs/lite.md)."""
    names: list[str] = []
    for e in reports:
        names += [s.name for s in e.structures if s.name not in names]
    for n in names:
        rows.append(
            (
                f"dyn. energy {n} (pJ)",
                [fmt(sum(s.dynamic_pj for s in e.structures if s.name == n)) for e in reports],
            )
        )
    rows.append(("dyn. energy (pJ)", [fmt(e.dynamic_pj) for e in reports]))
    rows.append(("dyn. energy per kilo-instr. (pJ)", [fmt(e.per_ki(e.dynamic_pj)) for e in reports]))
    rows.append(("leakage energy (pJ)", [fmt(e.leakage_pj) for e in reports]))
    rows.append(("total energy (pJ)", [fmt(e.total_pj) for e in reports]))
    rows.append(("Table 5.3 TLB-miss cycles", [count(e.lite_cycles) for e in reports]))
    # Lite runs: Table 5.5's share of each resized TLB's lookups per active way count.
    lite = sorted(
        {(n, x.ways) for e in reports for n, st in e.lite.items() for x in st}, key=lambda k: (k[0], -k[1])
    )
    for n, w in lite:
        pct = [e.lookup_shares(n).get(w) if n in e.lite else None for e in reports]
        rows.append((f"{n} lookups at {w} ways (%)", ["" if p is None else f"{p:.1f}" for p in pct]))
    rows.append(
        (
            "additive TLB-miss cycles",
            [count(r.derived["time.stlb_hit_cycles"] + r.derived["time.walk_cycles"]) for r in results],
        )
    )


def write_csv(path: str, results: list, energy_set=None, walk_loads: str = "l1") -> None:
    import csv

    dicts = [r.to_dict(energy_set, walk_loads) for r in results]
    keys = list(dicts[0])
    for d in dicts[1:]:
        keys += [k for k in d if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(dicts)


def rate_line(trace: str, results: list, wall: float) -> str:
    """Where the time went: the input (generating a workload, decoding a trace) apart from the
    simulation, whose rate is accesses per second of simulation alone."""
    acc = sum(r.counters["accesses"] for r in results)
    input_s = sum(r.timing["input_s"] for r in results)
    sim_s = sum(r.timing["total_s"] - r.timing["input_s"] for r in results)
    what = "generating the workload" if trace.startswith("workload:") else "reading the trace"
    rate = f"{acc / sim_s / 1e6:.1f} M accesses/s" if sim_s > 0 else "too fast to time"
    line = f"\nsimulated {acc:,} accesses in {wall:.2f} s: {what} {input_s:.2f} s, simulating {sim_s:.2f} s ({rate})"
    if len(results) > 1:
        line += f"; times summed over {len(results)} configurations run in parallel"
    return line


def _not_an_energy_set(value: str) -> bool:
    """Whether ``--energy``'s value cannot be an energy set (a name of one, or a TOML file)."""
    from pathlib import Path

    from xlat.energy import sets

    return value not in sets() and not (value.endswith(".toml") and Path(value).is_file())


def cmd_sim(args: argparse.Namespace) -> int:
    import time

    from xlat.sim import simulate_many

    if args.trace is None and args.energy is not None and _not_an_energy_set(args.energy):
        # `--energy TRACE`: the optional value took the positional (the default set was meant).
        args.trace, args.energy = args.energy, "cacti-32nm"
    take_positional(args, "trace", "TRACE_OR_WORKLOAD")
    if args.plot or args.energy_plot:
        from xlat._optional import need_pyplot

        need_pyplot("--plot" if args.plot else "--energy-plot")  # before the run, not after it
    runs = sim_runs(args)
    eset = None
    if args.energy or args.energy_plot:
        from xlat.energy import energy_set

        eset = energy_set(args.energy)  # a bad set fails before the simulation
    t = time.perf_counter()
    bar = progress(args)
    # A workload may take seconds to build before the first access is simulated: say so.
    msg = f"simulating {args.trace} under {len(runs)} configuration(s); this may take a while"
    with still_running(msg, enabled=not bar):
        results = simulate_many(args.trace, runs, threads=args.threads, progress=bar, **window_kw(args))
    secs = time.perf_counter() - t
    reports = None
    if eset is not None:
        reports = [r.energy(eset, args.walk_energy, args.l1_lookups) for r in results]
        for r, e in zip(results, reports, strict=True):
            r.data["energy"] = e.to_json()
        if args.energy_plot:
            from xlat.energy import plot

            plot(
                dict(zip(results.labels(), reports, strict=True)),
                args.energy_plot,
                title=f"dynamic energy of address translation ({eset.name})\n{results.title()}",
            )
    if args.json:
        emit_json(
            args.json,
            [r.data for r in results],
            trace=args.trace,
            window=results[0].window,
            config=[r.config for r in results],
        )
    if args.csv:
        write_csv(args.csv, results, eset, args.walk_energy)
    if args.plot:
        results.plot(args.plot)
        print(f"plot written to {args.plot}", file=sys.stderr)
    if not to_stdout(args):
        print(f"trace: {args.trace}")
        w = results[0].window
        if w:
            lim = "to the end" if w["limit"] is None else f"{w['limit']:,} accesses"
            print(f"window  skip {w['skip']:,}, warm-up {w['warmup']:,} (not counted), counted {lim}")
        print(sim_table(results, reports))
        print(LEGEND)
        if any("time.overlap.total_cycles" in r.derived for r in results):
            print(textwrap.fill(TIME_NOTE, width=100))
        if reports:
            print(textwrap.fill(ENERGY_TIME_NOTE, width=100))
    for note in mach_notes(results):
        print(f"xlat: note: {note}", file=sys.stderr)
    print(rate_line(args.trace, results, secs), file=sys.stderr)
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
    s.add_argument("trace", nargs="?", metavar="TRACE_OR_WORKLOAD")
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
        metavar="[NAME:]KEY=VALUE",
        help="override a configuration field, e.g. tlb.stlb.entries=2048 or os.policy=thp, in every "
        "configuration, or with NAME: (a --cpu preset or --config file name) in that one only, e.g. "
        "zen4:tlb.l2d.entries=4096; a whole structure takes an inline table, to add one "
        "('tlb.l3={level = 3, entries = 8192, ...}') or remove one ('tlb.l1i-2m={remove = true}'); "
        "repeatable (docs/config.md)",
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
    s.add_argument(
        "--energy",
        nargs="?",
        const="cacti-32nm",
        metavar="SET",
        help="add the energy of address translation (Karakostas 2016, Table 5.3) under an energy set: a name in "
        "configs/energy or a TOML file (default: cacti-32nm, Table 5.2); docs/lite.md",
    )
    s.add_argument(
        "--walk-energy",
        choices=("l1", "levels"),
        default="l1",
        help="charge page-walk loads as L1 data-cache reads (l1, the choice of Karakostas 2016) or at every cache "
        "level they looked up (levels; the set needs those levels)",
    )
    s.add_argument(
        "--l1-lookups",
        choices=("masked", "all"),
        default="masked",
        help="charge an L1 TLB of huge pages only in a process that maps pages of its size (masked, "
        "section 5.3.1's assumption) or on every access (all); docs/lite.md",
    )
    s.add_argument("--energy-plot", metavar="PNG", help="stacked bar of dynamic energy per configuration")
    add_json_flag(s, "every counter of the result(s) (docs/simulator.md)")
    s.add_argument("--csv", metavar="OUT", help="write one CSV row of counters per configuration")
    s.add_argument(
        "--plot",
        metavar="OUT.png",
        help="bar charts of the headline figures per configuration (MPKI per TLB level, cycles per "
        "walk, translation share) to a PNG",
    )
    s.add_argument(
        "--threads", type=int, default=None, help="threads for several configurations (default: all cores)"
    )
    add_window_flags(s)
    s.set_defaults(func=cmd_sim, parser=s)
