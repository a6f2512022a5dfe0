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
        ("accesses", f"{acc:,} ({info['loads']:,} loads, {info['stores']:,} stores, {info['ifetches']:,} ifetches)"),
        ("instructions", f"{info['instructions']:,}"),
        ("threads", ", ".join(f"{tid} ({t['accesses']:,} accesses)" for tid, t in info["threads"].items()) or "none"),
        ("syscalls", ", ".join(f"{k} {v:,}" for k, v in info["syscalls"].items()) or "none"),
        ("markers", ", ".join(f"{k} {v:,}" for k, v in info["markers"].items()) or "none"),
        ("footprint touched", f"{_human_bytes(info['touched_4k_pages'] * 4096)} ({info['touched_4k_pages']:,} 4KiB pages, "
         f"{info['touched_2m_regions']:,} 2MiB regions, {info['touched_1g_regions']:,} 1GiB regions)"),
        ("footprint mapped", f"{_human_bytes(info['mapped_bytes'])} at the end, {_human_bytes(info['peak_mapped_bytes'])} at peak"),
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
    r = convert(args.input, args.output, level=args.level, progress=_progress(args))
    if args.json:
        _print_json(r)
    else:
        per = r["bytes"] / r["accesses"] if r["accesses"] else float("nan")
        print(f"wrote {r['path']}: {r['accesses']:,} accesses, {_human_bytes(r['bytes'])} ({per:.2f} bytes/access)")
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from xlat import _native

    r = json.loads(_native.passthrough(args.trace, _progress(args)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2, sort_keys=True)
    c = r["counts"]
    print(f"model: {r['model']} (counts events; the MMU model is not built yet)")
    rate = c["accesses"] / r["seconds"] / 1e6 if r["seconds"] > 0 else float("nan")
    print(_table([
        ("accesses", f"{c['accesses']:,} ({c['loads']:,} loads, {c['stores']:,} stores, {c['ifetches']:,} ifetches)"),
        ("syscalls", f"{c['syscalls']:,}"),
        ("markers", f"{c['markers']:,}"),
        ("distinct 4KiB pages", f"{c['distinct_4k_pages']:,}"),
        ("rate", f"{rate:.1f} M accesses/s"),
    ]))
    return 0


DEMO_WORKLOADS = (
    "workload:gups?size=8GiB&accesses=4000000&seed=1",
    "workload:bfs?scale=18&accesses=4000000&seed=1",
    "workload:stream?size=1GiB&accesses=4000000",
)


def cmd_demo(args: argparse.Namespace) -> int:
    from xlat import _native
    from xlat.trace import convert, trace_info

    os.makedirs(args.out, exist_ok=True)
    print("xlat demo: generate synthetic workloads, write them as compressed traces, read them back,")
    print("and run them through the simulator pipeline (pass-through model until the MMU model lands).\n")
    header = f"{'workload':<10} {'accesses':>10} {'trace':>10} {'B/access':>9} {'touched':>11} {'mapped':>10} {'pages(sim)':>11}"
    print(header)
    print("-" * len(header))
    for spec in DEMO_WORKLOADS:
        name = spec.split(":")[1].split("?")[0]
        path = os.path.join(args.out, f"{name}.xlat")
        w = convert(spec, path, progress=_progress(args))
        info = trace_info(path)["info"]
        sim = json.loads(_native.passthrough(path, False))["counts"]
        if sim["accesses"] != w["accesses"] or info["touched_4k_pages"] != sim["distinct_4k_pages"]:
            raise CliError(f"the pipeline disagrees with itself on {path}")
        print(f"{name:<10} {w['accesses']:>10,} {_human_bytes(w['bytes']):>10} {w['bytes'] / w['accesses']:>9.2f} "
              f"{_human_bytes(info['touched_4k_pages'] * 4096):>11} {_human_bytes(info['mapped_bytes']):>10} "
              f"{sim['distinct_4k_pages']:>11,}")
    print(f"\ntraces are in {args.out}/; try: xlat trace-info {args.out}/bfs.xlat")
    return 0


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    g = common.add_mutually_exclusive_group()
    g.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar on stderr (default: when stderr is a terminal)")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="never show a progress bar")

    p = argparse.ArgumentParser(
        prog="xlat",
        description="xlat: trace programs, simulate address translation, model runtime, back programs with page mosaics.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"xlat {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("workloads", parents=[common], help="list the synthetic workloads and their parameters",
                       description="List the synthetic workloads. Use one wherever a trace is accepted, as "
                                   "workload:NAME?key=value&... (sizes take KiB/MiB/GiB suffixes).")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_workloads)

    s = sub.add_parser("trace-info", parents=[common], help="counts, threads, syscalls, footprint and duration of a trace",
                       description="Read a trace (or workload) once and summarise it: accesses by kind, instructions, "
                                   "threads, syscalls, markers, touched and mapped footprint, file size per access.")
    s.add_argument("trace", metavar="TRACE", help="trace file (.xlat), text trace (.txt) or workload:... spec")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_trace_info)

    s = sub.add_parser("convert", parents=[common], help="convert between the xlat format, the text form and workloads",
                       description="Write INPUT to OUTPUT. OUTPUT ending in .txt gets the plain text form; anything "
                                   "else the compressed xlat format. INPUT may be a trace, a text trace or a workload "
                                   "spec (which makes convert the way to save a workload as a trace).")
    s.add_argument("input", metavar="INPUT")
    s.add_argument("output", metavar="OUTPUT")
    s.add_argument("--level", type=int, default=3, help="zstd level, 1 (fastest) to 19 (smallest); default 3")
    s.add_argument("--json", action="store_true", help="print a JSON summary")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("sim", parents=[common], help="run a trace through the simulator pipeline",
                       description="Run a trace or workload through the simulator. Until the MMU model lands this is "
                                   "the pass-through model: it counts accesses, syscalls and distinct pages.")
    s.add_argument("trace", metavar="TRACE_OR_WORKLOAD")
    s.add_argument("--json", metavar="OUT", help="also write the result as JSON to OUT")
    s.set_defaults(func=cmd_sim)

    s = sub.add_parser("demo", parents=[common], help="the main job on built-in inputs (what the README runs first)",
                       description="Generate built-in workloads, write and re-read them as traces, and simulate them.")
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
