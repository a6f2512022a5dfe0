"""Generation speed of the Mach client/server benchmark (``workload:clientserver``, seed 001
section 4.5): accesses per CPU second of the generator with the trace statistics pass
(``xlat.trace.trace_info``), median of 5 runs, for a few shapes of the benchmark.

Run with ``make bench`` or ``.venv/bin/python benches/clientserver_bench.py``.
"""

from __future__ import annotations

import statistics
import time

from xlat.trace import trace_info

N = 2_000_000
SPECS = [
    f"workload:clientserver?servers=4&words=30&granularity=fine&accesses={N}",
    f"workload:clientserver?servers=10&words=50&granularity=fine&accesses={N}",
    f"workload:clientserver?servers=4&words=30&granularity=coarse&accesses={N}",
    f"workload:clientserver?clients=3&servers=4&words=30&granularity=medium&accesses={N}",
]


def main() -> int:
    print(f"clientserver generation, {N:,} accesses, median of 5 (CPU seconds of this process)")
    for spec in SPECS:
        secs = []
        for _ in range(5):
            t = time.process_time()
            info = trace_info(spec)
            secs.append(time.process_time() - t)
        med = statistics.median(secs)
        ipcs = info["info"]["markers"].get("ipc-send", 0)
        print(f"  {spec.split('?')[1]:<60} {med:6.3f} s  {N / med / 1e6:6.1f} M accesses/s  {ipcs:,} IPCs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
