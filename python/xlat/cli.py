"""The ``xlat`` command line: one entry point, one subcommand per job.

Errors a user can cause print one sentence (``xlat: error: ...``) and exit with status 1;
usage errors exit with 2 (argparse's convention).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from xlat import __version__

EXAMPLES = """\
examples:
  xlat workloads
  xlat trace-info workload:gups?size=64GiB&accesses=1000000
  xlat convert workload:bfs?scale=18 bfs.xlat
  xlat convert bfs.xlat bfs.txt          # the plain text form
  xlat trace-info bfs.xlat --json
  xlat sim bfs.xlat
  xlat sim --cpu skylake --policies 4k,thp bfs.xlat --json out.json
"""


class CliError(Exception):
    """A user error detected by the CLI itself (reported like the library's errors)."""


def _human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _progress(args: argparse.Namespace) -> bool:
    if args.progress is not None:
        return args.progress
    return sys.stderr.isatty()


def _print_json(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


def _table(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def cmd_workloads(args: argparse.Namespace) -> int:
    from xlat.trace import workloads

    ws = workloads()
    if args.json:
        _print_json(ws)
        return 0
    print("Synthetic workloads: use as workload:NAME?key=value&... wherever a trace is accepted.\n")
    for w in ws:
        print(f"{w['name']}: {w['help']}")
        for p in w["params"]:
            print(f"    {p['name']:<11} default {p['default']:<9} {p['help']}")
        print()
    return 0


def cmd_trace_info(args: argparse.Namespace) -> int:
    from xlat.trace import trace_info

    r = trace_info(args.trace, progress=_progress(args))
    if args.json:
        _print_json(r)
        return 0
    info, header = r["info"], r["header"]
    acc = info["accesses"]
    rows = [
        ("source", r["source"]),
        ("producer", header.get("producer", "")),
        ("command", " ".join(header.get("command", []))),
        (
            "accesses",
            f"{acc:,} ({info['loads']:,} loads, {info['stores']:,} stores, {info['ifetches']:,} ifetches)",
        ),
        ("instructions", f"{info['instructions']:,}"),
        (
            "threads",
            ", ".join(f"{tid} ({t['accesses']:,} accesses)" for tid, t in info["threads"].items()) or "none",
        ),
        ("syscalls", ", ".join(f"{k} {v:,}" for k, v in info["syscalls"].items()) or "none"),
        ("markers", ", ".join(f"{k} {v:,}" for k, v in info["markers"].items()) or "none"),
        (
            "footprint touched",
            f"{_human_bytes(info['touched_4k_pages'] * 4096)} ({info['touched_4k_pages']:,} 4KiB pages, "
            f"{info['touched_2m_regions']:,} 2MiB regions, {info['touched_1g_regions']:,} 1GiB regions)",
        ),
        (
            "footprint mapped",
            f"{_human_bytes(info['mapped_bytes'])} at the end, {_human_bytes(info['peak_mapped_bytes'])} at peak",
        ),
    ]
    if info["min_addr"] is not None:
        rows.append(("address range", f"{info['min_addr']:#x} .. {info['max_addr']:#x}"))
    if r["file_bytes"] is not None:
        per = r["file_bytes"] / acc if acc else float("nan")
        rows.append(("file size", f"{_human_bytes(r['file_bytes'])} ({per:.2f} bytes/access)"))
    print(_table(rows))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from xlat.trace import convert

    if not 1 <= args.level <= 19:
        raise CliError(f"--level must be between 1 and 19, not {args.level}")
    r = convert(
        args.input,
        args.output,
        level=args.level,
        progress=_progress(args),
        format_version=args.format_version,
    )
    if args.json:
        _print_json(r)
    else:
        per = r["bytes"] / r["accesses"] if r["accesses"] else float("nan")
        print(
            f"wrote {r['path']}: {r['accesses']:,} accesses, {_human_bytes(r['bytes'])} ({per:.2f} bytes/access)"
        )
    return 0


def _sim_runs(args: argparse.Namespace) -> list:
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


def _sim_table(results: list) -> str:
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
    share = [f"{100 * r.derived['time.translation_fraction']:.1f}%" for r in results]
    rows.append(("translation share", share))
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


def _write_csv(path: str, results: list) -> None:
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

    runs = _sim_runs(args)
    t = time.perf_counter()
    bar = _progress(args) and len(runs) == 1
    results = simulate_many(args.trace, runs, threads=args.threads, progress=bar)
    secs = time.perf_counter() - t
    if args.json:
        doc = results[0].data if len(results) == 1 else {"results": [r.data for r in results]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")
    if args.csv:
        _write_csv(args.csv, results)
    print(f"trace: {args.trace}")
    print(_sim_table(results))
    acc = sum(r.counters["accesses"] for r in results)
    print(
        f"\nsimulated {acc:,} accesses in {secs:.2f} s ({acc / secs / 1e6:.1f} M accesses/s over "
        f"{len(results)} configuration(s))",
        file=sys.stderr,
    )
    return 0


DEMO_WORKLOAD = "workload:gups?size=8GiB&accesses=4000000&seed=1"

# Half of gups' 8 GiB table (the program's first anonymous mapping, so offset 0 of the anon pool)
# on huge pages: 2 GiB of 1GB pages, then 2 GiB of 2MB pages; the rest 4KB.
DEMO_LAYOUT = """\
version = 1
name = "half-huge"
description = "xlat demo: the first 4 GiB of the anonymous pool on 1GB and 2MB pages"
[heap]
size = "1GiB"
[anon]
size = "16GiB"
windows = [
  { offset = "0", length = "2GiB", page = "1GB" },
  { offset = "2GiB", length = "2GiB", page = "2MB" },
]
[file]
size = "1GiB"
"""


def cmd_demo(args: argparse.Namespace) -> int:
    from xlat.sim import Run, simulate_many
    from xlat.trace import convert

    os.makedirs(args.out, exist_ok=True)
    trace = os.path.join(args.out, "gups.xlat")
    layout = os.path.join(args.out, "half-huge.toml")
    with open(layout, "w") as f:
        f.write(DEMO_LAYOUT)
    print("xlat demo: gups (random read-modify-write over an 8 GiB table) on a simulated Skylake core,")
    print("with 4KB pages only, with transparent huge pages, and with a mosaic layout that backs half")
    print(f"the table with 1GB and 2MB pages ({layout}).\n")
    w = convert(DEMO_WORKLOAD, trace, progress=_progress(args))
    print(f"trace: {trace} ({w['accesses']:,} accesses, {w['bytes'] / 2**20:.1f} MiB)\n")
    runs = [Run(cpu="skylake"), Run(cpu="skylake", set=("os.policy=thp",)), Run(cpu="skylake", layout=layout)]
    results = simulate_many(trace, runs)
    print(_sim_table(results))
    base = results[0].derived["time.total_cycles"]
    print()
    for r in results[1:]:
        print(
            f"{r.label}: {r.derived['M'] / max(results[0].derived['M'], 1):.1%} of the 4KB walks, "
            f"additive-model speed-up {base / r.derived['time.total_cycles']:.2f}x over 4KB pages"
        )
    print("(the additive model charges every walk cycle in full; real cores overlap walks with other work)")
    print(f"\ntry: xlat sim --cpu haswell --policies 4k,thp --layout {layout} {trace}")
    return 0


def add_progress_flags(p: argparse.ArgumentParser) -> None:
    """--progress / --no-progress (default: a progress bar when stderr is a terminal)."""
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add_progress_flags(common)

    p = argparse.ArgumentParser(
        prog="xlat",
        description="xlat: trace programs, simulate address translation, model runtime, back programs with page mosaics.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"xlat {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser(
        "workloads",
        parents=[common],
        help="list the synthetic workloads and their parameters",
        description="List the synthetic workloads. Use one wherever a trace is accepted, as "
        "workload:NAME?key=value&... (sizes take KiB/MiB/GiB suffixes).",
    )
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_workloads)

    s = sub.add_parser(
        "trace-info",
        parents=[common],
        help="counts, threads, syscalls, footprint and duration of a trace",
        description="Read a trace (or workload) once and summarise it: accesses by kind, instructions, "
        "threads, syscalls, markers, touched and mapped footprint, file size per access.",
    )
    s.add_argument(
        "trace", metavar="TRACE", help="trace file (.xlat), text trace (.txt) or workload:... spec"
    )
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_trace_info)

    s = sub.add_parser(
        "convert",
        parents=[common],
        help="convert between the xlat format, the text form and workloads",
        description="Write INPUT to OUTPUT. OUTPUT ending in .txt gets the plain text form; anything "
        "else the compressed xlat format. INPUT may be a trace, a text trace or a workload "
        "spec (which makes convert the way to save a workload as a trace).",
    )
    s.add_argument("input", metavar="INPUT")
    s.add_argument("output", metavar="OUTPUT")
    s.add_argument("--level", type=int, default=3, help="zstd level, 1 (fastest) to 19 (smallest); default 3")
    from xlat.trace import FORMAT_VERSIONS

    s.add_argument(
        "--format-version",
        choices=FORMAT_VERSIONS,
        default=FORMAT_VERSIONS[-1],
        help="trace format version to write: 1.1 (default) or 1.0, readable by xlat builds that "
        "predate 1.1's repeat records",
    )
    s.add_argument("--json", action="store_true", help="print a JSON summary")
    s.set_defaults(func=cmd_convert)

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

    s = sub.add_parser(
        "demo",
        parents=[common],
        help="the main job on built-in inputs (what the README runs first)",
        description="Write the gups workload as a trace and simulate it on Skylake with 4KB "
        "pages, THP and a mosaic layout, side by side.",
    )
    s.add_argument("--out", default="out/demo", help="directory for the demo's traces (default out/demo)")
    s.set_defaults(func=cmd_demo)

    try:  # the mosaic allocator's commands (run, hugepages), when that part is present
        from xlat import mosaic
    except ImportError:
        mosaic = None
    if mosaic is not None:
        mosaic.register_cli(sub)
    from xlat import tracing  # trace (real programs under QEMU) and import (lackey, ChampSim)

    tracing.register_cli(sub)
    from xlat import experiment  # experiment mosmodel (real runs against simulated metrics)

    experiment.register_cli(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from xlat._native import XlatError

    try:
        return int(args.func(args) or 0)
    except (XlatError, CliError, ValueError) as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 141
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"xlat: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("xlat: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
