"""``xlat workloads``: the synthetic workloads."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import print_json


def cmd_workloads(args: argparse.Namespace) -> int:
    from xlat.trace import workloads

    ws = workloads()
    if args.json:
        print_json(ws)
        return 0
    print("Synthetic workloads: use as workload:NAME?key=value&... wherever a trace is accepted.\n")
    for w in ws:
        print(f"{w['name']}: {w['help']}")
        for p in w["params"]:
            print(f"    {p['name']:<11} default {p['default']:<9} {p['help']}")
        print()
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "workloads",
        parents=[common],
        help="list the synthetic workloads and their parameters",
        description="List the synthetic workloads. Use one wherever a trace is accepted, as "
        "workload:NAME?key=value&... (sizes take KiB/MiB/GiB suffixes).",
    )
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_workloads)
