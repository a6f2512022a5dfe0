"""``xlat demo``: the main job on built-in inputs (what the README runs first)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from xlat.cli.common import progress
from xlat.cli.numfmt import LEGEND
from xlat.cli.sim import sim_table

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
    w = convert(DEMO_WORKLOAD, trace, progress=progress(args))
    print(f"trace: {trace} ({w['accesses']:,} accesses, {w['bytes'] / 2**20:.1f} MiB)\n")
    runs = [Run(cpu="skylake"), Run(cpu="skylake", set=("os.policy=thp",)), Run(cpu="skylake", layout=layout)]
    results = simulate_many(trace, runs)
    print(sim_table(results))
    print(LEGEND)
    base = results[0].derived["time.total_cycles"]
    print()
    for r in results[1:]:
        print(
            f"{r.label}: {r.derived['M'] / max(results[0].derived['M'], 1):.1%} of the 4KB walks, "
            f"additive-model speed-up {base / r.derived['time.total_cycles']:.2f}x over 4KB pages"
        )
    print("(the additive model charges every walk cycle in full; real cores overlap walks with other work:")
    print(
        " --set sim.data_through_caches=true --set time.model=overlap adds the overlap model, docs/time-model.md)"
    )
    print(f"\ntry: xlat sim --cpu haswell --policies 4k,thp --layout {layout} {trace}")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "demo",
        parents=[common],
        help="the main job on built-in inputs (what the README runs first)",
        description="Write the gups workload as a trace and simulate it on Skylake with 4KB "
        "pages, THP and a mosaic layout, side by side.",
    )
    s.add_argument("--out", default="out/demo", help="directory for the demo's traces (default out/demo)")
    s.set_defaults(func=cmd_demo)
