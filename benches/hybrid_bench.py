"""Hybrid DRAM/NVM memory benchmark (docs/rainbow.md, "Speed"): the speed of each
``configs/rainbow/*.toml`` configuration (Rainbow and its four baselines) against the plain
configuration (the Skylake preset) with data through the caches, on synthetic gups and stream
traces, warm (every page mapped: the timed pass alone); the issue's bar: at least 0.25x plain.

Two measures:

- wall clock: simulated accesses per second, runs interleaved, medians of REPS;
- ``--cachegrind``: host instructions of the timed pass (``valgrind --tool=callgrind
  --toggle-collect='*timed_pass*'``: cachegrind's instruction count, restricted to one function,
  which Debian 12's cachegrind cannot do), which the machine's load does not disturb; the ratio
  is plain's instructions over the configuration's.

Run by hand: ``python3 benches/hybrid_bench.py [REPS] [--cachegrind]`` (builds the ``simfile``
example first).
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMFILE = ROOT / "target" / "release" / "examples" / "simfile"
WORKLOADS = {
    "gups 8GiB": "workload:gups?size=8GiB&accesses={n}",
    "stream 1GiB": "workload:stream?size=1GiB&accesses={n}",
}
#: Accesses per run: wall clock, cachegrind (slower: fewer).
ACCESSES, ACCESSES_CACHEGRIND = 3_000_000, 1_000_000
CONFIGS = ["skylake"] + [
    str(ROOT / "configs" / "rainbow" / f)
    for f in ("flat-static.toml", "hscc-4kb.toml", "hscc-2mb.toml", "rainbow.toml", "dram-only-2mb.toml")
]


def command(workload: str, config: str) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, XLAT_SIMFILE_WARM="1")
    return [str(SIMFILE), workload, config, "sim.data_through_caches=true"], env


def rate(workload: str, config: str) -> float:
    cmd, env = command(workload, config)
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return float(out.split(", ")[-1].split()[0])


def instructions(workload: str, config: str) -> int:
    cmd, env = command(workload, config)
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--toggle-collect=*timed_pass*"]
    err = subprocess.run(vg + cmd, env=env, check=True, capture_output=True, text=True).stderr
    m = re.search(r"Collected\s*:\s*([\d,]+)", err)
    if m is None:
        raise SystemExit(f"no instruction count from cachegrind:\n{err}")
    return int(m.group(1).replace(",", ""))


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps = int(args[0]) if args else 3
    subprocess.run(
        ["cargo", "build", "--release", "-p", "xlat-core", "--example", "simfile"], cwd=ROOT, check=True
    )
    if "--cachegrind" in sys.argv:
        print("host instructions of the timed pass (cachegrind); ratio: plain's / the configuration's")
        for name, spec in WORKLOADS.items():
            spec = spec.replace("{n}", str(ACCESSES_CACHEGRIND))
            counts = {c: instructions(spec, c) for c in CONFIGS}
            plain = counts["skylake"]
            for c in CONFIGS:
                print(f"{name:12} {Path(c).stem:16} {counts[c]:>15,}  {plain / counts[c]:5.2f}x plain")
        return
    print(f"load average {os.getloadavg()[0]:.2f}; M accesses/s, median of {reps}")
    for name, spec in WORKLOADS.items():
        spec = spec.replace("{n}", str(ACCESSES))
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
