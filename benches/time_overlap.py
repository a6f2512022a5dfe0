"""The overlap time model's cost (docs/time-model.md, "Cost"): ``xlat sim`` with the data
through the caches, the additive model alone against the overlap model on the same run, on gups
(4KB pages: nearly every access walks and misses) and on a real trace (xz -9, `make bench`'s
out/bench/xz.xlat, or the traces given). Issue 35's bar: the overlap model at most 1.2x the
additive model's simulation time. The plain additive run (no data caches) is shown too, for
scale. Runs alternate, REPS rounds; medians of the simulation time ``xlat sim`` prints (input
excluded) and the ratio.

Run by hand: ``.venv/bin/python benches/time_overlap.py [REPS] [TRACE...]`` (`make bench` runs it).
"""

from __future__ import annotations

import os
import statistics
import sys

from _simtime import sim_timing

DATA = ["--set", "sim.data_through_caches=true"]
MODES = {
    "additive, no data": [],
    "additive": DATA,
    "overlap": [*DATA, "--set", "time.model=overlap"],
}


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    traces = sys.argv[2:] or ["workload:gups?size=1GiB&accesses=5000000", "out/bench/xz.xlat"]
    for t in traces:
        if not t.startswith("workload:") and not os.path.exists(t):
            print(f"{t}: missing (make bench writes it); skipped")
            continue
        runs: dict[str, list[float]] = {k: [] for k in MODES}
        for _ in range(reps):
            for k, a in MODES.items():
                runs[k].append(sim_timing(t, ["--cpu", "zen4", *a])[1])
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{t} (zen4; simulation seconds, medians of {reps}; ratio to 'additive' with the data caches):")
        for k in MODES:
            print(f"  {k:18s} {med[k]:7.3f} s  {med[k] / med['additive']:.3f}x")


if __name__ == "__main__":
    main()
