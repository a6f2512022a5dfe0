"""The cost of nested paging and of the hashed page tables (issue 39; docs/virtualisation.md and
docs/hashed-page-tables.md, "Cost"): ``xlat sim`` on gups with 4KB pages (nearly every access
walks) under the plain Skylake preset and under each design's configuration, runs alternated,
REPS rounds; medians of the simulation time ``xlat sim`` prints (input excluded) and each
design's ratio to the plain run. Issue 39's bar: at most 1.5x the plain configuration's time.

Run by hand: ``.venv/bin/python benches/translation_designs.py [REPS] [WORKLOAD]`` (`make bench`
runs it).
"""

from __future__ import annotations

import statistics
import sys

from _simtime import sim_timing

CONFIGS = {
    "plain (skylake)": ["--cpu", "skylake"],
    "nested, host THP": ["--config", "virt/skylake"],
    "nested, host 4KB": ["--config", "virt/skylake", "--set", "virt.host.policy=4k"],
    "elastic cuckoo": ["--config", "hashed/cuckoo"],
    "chained": ["--config", "hashed/chained"],
    "nested, guest cuckoo": ["--config", "virt/skylake", "--set", "psc=[]", "--set", "hashed_pt.kind=cuckoo"],
}


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    trace = sys.argv[2] if len(sys.argv) > 2 else "workload:gups?size=4GiB&accesses=10000000"
    runs: dict[str, list[float]] = {k: [] for k in CONFIGS}
    for _ in range(reps):
        for k, a in CONFIGS.items():
            runs[k].append(sim_timing(trace, a)[1])
    med = {k: statistics.median(v) for k, v in runs.items()}
    base = med["plain (skylake)"]
    print(f"{trace} (simulation seconds, medians of {reps}; ratio to the plain preset; bar 1.5x):")
    for k in CONFIGS:
        print(f"  {k:18s} {med[k]:7.3f} s  {med[k] / base:.3f}x")


if __name__ == "__main__":
    main()
