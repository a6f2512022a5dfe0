#!/usr/bin/env python3
"""The energy table and figure of docs/lite.md: chapter 5's configurations (configs/lite) on six
synthetic workloads, Table 5.3's model under Table 5.2's values (xlat.energy).

    PYTHONPATH=python python3 scripts/energy-table.py [ACCESSES] [OUT.png]
"""

from __future__ import annotations

import sys
from pathlib import Path

import xlat.energy as en
import xlat.sim as sim

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ("4k", "thp", "rmm", "rmm-l1")
WORKLOADS = {
    "gups 8GiB": "workload:gups?size=8GiB",
    "chase 1GiB": "workload:chase?size=1GiB",
    "zipf 4GiB": "workload:zipf?size=4GiB",
    "bfs scale 20": "workload:bfs?scale=20",
    "stride 4GiB 4KiB": "workload:stride?size=4GiB&stride=4096",
    "stream triad 1GiB": "workload:stream?size=1GiB",
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    png = sys.argv[2] if len(sys.argv) > 2 else None
    runs = [sim.Run(config=str(ROOT / "configs" / "lite" / f"{c}.toml")) for c in CONFIGS]
    print(
        "| workload | L1 MPKI 4k | "
        + " | ".join(f"{c} pJ/ki" for c in CONFIGS)
        + " | "
        + " | ".join(f"{c} T5.3 cyc/ki" for c in CONFIGS)
        + " | walk share 4k | L1-TLB share thp |"
    )
    print("|---" * (3 + 2 * len(CONFIGS) + 1) + "|")
    bars: dict[str, en.Report] = {}
    for name, spec in WORKLOADS.items():
        rs = sim.simulate_many(f"{spec}&accesses={n}", runs, threads=1)
        es = [r.energy() for r in rs]
        mpki = rs[0].derived["tlb_level1.mpki"]
        walk = sum(s.dynamic_pj for s in es[0].structures if s.name.startswith("walk.")) / es[0].dynamic_pj
        l1 = sum(s.dynamic_pj for s in es[1].structures if s.name.startswith("l1d-")) / es[1].dynamic_pj
        cyc = [e.lite_cycles * 1000 / e.instructions for e in es]
        print(
            f"| {name} | {mpki:.1f} | "
            + " | ".join(f"{e.per_ki(e.dynamic_pj):,.0f}" for e in es)
            + " | "
            + " | ".join(f"{c:,.1f}" for c in cyc)
            + f" | {100 * walk:.0f}% | {100 * l1:.0f}% |"
        )
        for c, e in zip(CONFIGS, es, strict=True):
            bars[f"{name.split()[0]}/{c}"] = e
    if png:
        en.plot(bars, png)


if __name__ == "__main__":
    main()
