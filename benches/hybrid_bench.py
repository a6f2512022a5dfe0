"""Hybrid DRAM/NVM memory benchmark (docs/rainbow.md, "Speed"): simulated accesses per second of
each ``configs/rainbow/*.toml`` configuration against the plain configuration (the Skylake preset)
with data through the caches, on synthetic gups and stream traces, warm (every page mapped), runs
interleaved; medians and the ratio to plain (the issue's bar: at least 0.25).

Run by hand: ``python3 benches/hybrid_bench.py [REPS]`` (builds the ``simfile`` example first).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMFILE = ROOT / "target" / "release" / "examples" / "simfile"
WORKLOADS = {
    "gups 8GiB": "workload:gups?size=8GiB&accesses=3000000",
    "stream 1GiB": "workload:stream?size=1GiB&accesses=3000000",
}
CONFIGS = ["skylake"] + [
    str(ROOT / "configs" / "rainbow" / f)
    for f in ("flat-static.toml", "hscc-4kb.toml", "hscc-2mb.toml", "dram-only-2mb.toml")
]


def rate(workload: str, config: str) -> float:
    env = dict(os.environ, XLAT_SIMFILE_WARM="1")
    cmd = [str(SIMFILE), workload, config, "sim.data_through_caches=true"]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return float(out.split(", ")[-1].split()[0])


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    subprocess.run(
        ["cargo", "build", "--release", "-p", "xlat-core", "--example", "simfile"],
        cwd=ROOT,
        check=True,
    )
    print(f"load average {os.getloadavg()[0]:.2f}; M accesses/s, median of {reps}")
    for name, spec in WORKLOADS.items():
        runs: dict[str, list[float]] = {c: [] for c in CONFIGS}
        for _ in range(reps):
            for c in CONFIGS:
                runs[c].append(rate(spec, c))
        plain = statistics.median(runs["skylake"])
        for c in CONFIGS:
            m = statistics.median(runs[c])
            print(f"{name:12} {Path(c).stem:16} {m:8.2f}  {m / plain:5.2f}x plain  (runs {runs[c]})")


if __name__ == "__main__":
    main()
