"""Hybrid DRAM/NVM configurations measured cold (docs/rainbow.md, "Speed"): ``xlat sim`` on gups
1 GiB from an empty machine, page faults included, each ``configs/rainbow/*.toml`` against the
plain configuration (the Skylake preset with data through the caches); issue 34's bar: at least
0.25x plain. The rate is the one ``xlat sim`` prints for its simulation (workload generation
excluded); configurations run in turn, REPS rounds, medians.

Run by hand: ``.venv/bin/python benches/hybrid_cold.py [REPS]`` (the installed ``xlat``; `make bench` runs it).
"""

from __future__ import annotations

import statistics
import sys

from _simtime import sim_timing

CONFIGS = {"plain": ["--cpu", "skylake", "--set", "sim.data_through_caches=true"]} | {
    n: ["--config", f"configs/rainbow/{n}.toml"]
    for n in ("flat-static", "hscc-4kb", "hscc-2mb", "rainbow", "dram-only-2mb")
}


def rate(workload: str, args: list[str]) -> float:
    """Simulated accesses per second (millions) of one cold run."""
    accesses, seconds = sim_timing(workload, args)
    return accesses / seconds / 1e6


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    for n in (1_000_000, 5_000_000):
        w = f"workload:gups?size=1GiB&accesses={n}"
        runs: dict[str, list[float]] = {k: [] for k in CONFIGS}
        for _ in range(reps):
            for k, a in CONFIGS.items():
                runs[k].append(rate(w, a))
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"gups 1GiB, {n:,} accesses, cold (M acc/s, ratio to plain; medians of {reps}):")
        for k in CONFIGS:
            print(f"  {k:14s} {med[k]:7.2f}  {med[k] / med['plain']:.2f}x")


if __name__ == "__main__":
    main()
