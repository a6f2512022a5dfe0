"""Miss-ratio curve benchmark: the cost of one pass of ``xlat mrc`` (every fully associative LRU
TLB size up to 64K entries, every page size) against one single-configuration ``xlat sim`` (the
skylake preset) of the same trace; the goal (issue 23) is at most 3x.

Traces: a real one (``XLAT_MRC_TRACE``, else the first of /work/traces/xz.xlat,
/work/traces/dict-lookups.xlat, /work/traces/numpy-gather.xlat and out/bench/xz.xlat that
exists; else ``make out/bench/xz.xlat`` records it under QEMU), and two synthetic workloads:
STREAM (sequential, three arrays) and GUPS (random pages: the worst case, see docs/mrc.md).

Run with ``make bench`` or ``.venv/bin/python benches/mrc_bench.py [--repeat N]``; prints the
median wall seconds of N runs (default 3) of each and their ratio. The machine may be shared:
quote medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = [
    Path("/work/traces/xz.xlat"),
    Path("/work/traces/dict-lookups.xlat"),
    Path("/work/traces/numpy-gather.xlat"),
    ROOT / "out" / "bench" / "xz.xlat",
]
SYNTHETIC = [
    "workload:stream?size=1GiB&accesses=50000000",
    "workload:gups?size=8GiB&accesses=10000000",
]


def real_trace() -> str | None:
    env = os.environ.get("XLAT_MRC_TRACE")
    if env:
        return env
    for p in CANDIDATES:
        if p.exists():
            return str(p)
    r = subprocess.run(["make", "-s", "-C", str(ROOT), "out/bench/xz.xlat"], capture_output=True, text=True)
    if r.returncode == 0 and CANDIDATES[-1].exists():
        return str(CANDIDATES[-1])
    print(f"no real trace (make out/bench/xz.xlat failed: {r.stderr.strip()[:200]})", file=sys.stderr)
    return None


def median_time(f, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-entries", type=int, default=65536)
    args = ap.parse_args()
    import xlat
    import xlat.sim as sim

    traces = [t for t in [real_trace()] if t] + SYNTHETIC
    print(
        f"load average {os.getloadavg()[0]:.2f}; median of {args.repeat} runs; mrc: sets 1, up to {args.max_entries:,} entries"
    )
    print(f"{'trace':58} {'accesses':>12} {'sim s':>8} {'mrc s':>8} {'mrc/sim':>8}")
    for t in traces:
        n = sim.simulate(t, cpu="skylake").counters["accesses"]
        s = median_time(lambda t=t: sim.simulate(t, cpu="skylake"), args.repeat)
        m = median_time(lambda t=t: xlat.mrc(t, sets=[1], max_entries=args.max_entries), args.repeat)
        print(f"{t[-58:]:58} {n:>12,} {s:>8.2f} {m:>8.2f} {m / s:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
