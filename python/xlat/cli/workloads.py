"""``xlat workloads``: the synthetic workloads, and ``xlat workloads real [NAME -o OUT]``: the
recipes that install and trace real programs (:mod:`xlat.real_workloads`)."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import CliError, progress
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.trace_report import process_lines


def cmd_workloads(args: argparse.Namespace) -> int:
    from xlat.trace import workloads

    ws = workloads()
    emit_json(args.json, ws, kind="workload")
    if to_stdout(args):
        return 0
    print("Synthetic workloads: use as workload:NAME?key=value&... wherever a trace is accepted.\n")
    for w in ws:
        print(f"{w['name']}: {w['help']}")
        for p in w["params"]:
            print(f"    {p['name']:<11} default {p['default']:<9} {p['help']}")
        print()
    return 0


def cmd_workloads_real(args: argparse.Namespace) -> int:
    from xlat import real_workloads as rw

    if args.name is None:
        if args.output:
            raise CliError("give the recipe to trace: xlat workloads real NAME -o OUT")
        rs = rw.recipes()
        emit_json(args.json, [r.__dict__ | {"script": r.script is not None} for r in rs], kind="recipe")
        if to_stdout(args):
            return 0
        print(
            "Real-program recipes: xlat workloads real NAME -o OUT installs what NAME needs and traces it.\n"
        )
        for r in rs:
            needs = ", ".join([*(f"pip {p}" for p in r.pip), *(f"apt {p}" for p in r.apt)]) or "nothing"
            print(f"{r.name}: {r.help}")
            print(f"    warm-up skip {r.skip:,} instructions ({r.skip_note})")
            print(f"    window {r.max_accesses:,} accesses")
            print(f"    needs {r.memory / (1 << 30):.1f} GiB of memory ({r.memory_note})")
            print(f"    footprint: {r.footprint_note}")
            print(f"    installs {needs}\n")
        return 0
    if not args.output:
        raise CliError(f"give the output: xlat workloads real {args.name} -o OUT")
    r = rw.run(args.name, args.output, skip=args.skip, max_accesses=args.max, progress=progress(args))
    for line in process_lines(r):
        print(line)
    return 0 if r["stopped_at_max"] else int(r["status"])


def cmd_dispatch(args: argparse.Namespace) -> int:
    """Plain ``xlat workloads`` lists the synthetic workloads; ``xlat workloads real ...`` the
    real-program recipes."""
    take_positional(args, "set", "", allowed=("real",))
    if args.set is None:
        if args.name or args.output:
            raise CliError("use xlat workloads real NAME -o OUT to trace a real program")
        return cmd_workloads(args)
    return cmd_workloads_real(args)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "workloads",
        parents=[common],
        help="list the synthetic workloads and their parameters",
        description="List the synthetic workloads. Use one wherever a trace is accepted, as "
        "workload:NAME?key=value&... (sizes take KiB/MiB/GiB suffixes).",
    )
    add_json_flag(s, "the list")
    s.add_argument("set", nargs="?", choices=["real"], help="real: list the real-program recipes")
    s.add_argument("name", nargs="?", metavar="NAME", help="with real: the recipe to install and trace")
    s.add_argument("-o", "--output", metavar="OUT", help="with real NAME: the trace to write")
    s.add_argument("--skip", type=int, default=None, help="with real NAME: override the warm-up skip")
    s.add_argument("--max", type=int, default=None, help="with real NAME: override the window (accesses)")
    s.set_defaults(func=cmd_dispatch, parser=s)
