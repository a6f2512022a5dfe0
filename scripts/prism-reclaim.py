#!/usr/bin/env python3
"""The eviction study of docs/prism.md: `xlat.reclaim.analyze` (memory at a fraction of the
footprint, CLOCK over chunks of 2MB/G) over synthetic workloads and real traces, Markdown tables
on stdout.

    PYTHONPATH=python .venv/bin/python scripts/prism-reclaim.py [--fraction F] [--epoch N] [--traces DIR]
"""

from __future__ import annotations

import argparse
import sys
import time

from xlat.reclaim import DEFAULT_EPOCH, DEFAULT_FRACTION, analyze

SYNTHETIC = {
    "bfs": "workload:bfs?scale=20&accesses=100000000",
    "zipf": "workload:zipf?size=1GiB&writes=0.3&accesses=50000000",
    "zipf-contig": "workload:zipf?size=1GiB&s=1.2&scatter=none&writes=0.3&accesses=50000000",
    "stream": "workload:stream?size=1GiB&kernel=triad&accesses=100000000",
}
REAL = ("xz", "numpy-gather", "dict-lookups")
GS = (1, 8, 32, 512)


def mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fraction", type=float, default=DEFAULT_FRACTION)
    p.add_argument("--epoch", type=int, default=DEFAULT_EPOCH)
    p.add_argument("--traces", default="/work/traces")
    a = p.parse_args()
    inputs = dict(SYNTHETIC)
    inputs.update({name: f"{a.traces}/{name}.xlat" for name in REAL})
    results = {}
    for name, spec in inputs.items():
        t = time.time()
        results[name] = analyze(spec, fraction=a.fraction, granularities=GS, epoch=a.epoch)
        print(f"{name}: {time.time() - t:.1f} s", file=sys.stderr)

    print(f"memory = {a.fraction:g} of the footprint, accessed bits cleared every {a.epoch:,} instructions\n")
    print("| workload | 2MB pages | 4KB pages touched | memory MiB | clears |")
    print("|---|---:|---:|---:|---:|")
    for name, r in results.items():
        d = r.data
        print(
            f"| {name} | {d['regions']:,} | {d['touched_bytes'] // 4096:,} | {mib(d['capacity_bytes'])} | {d['clears']} |"
        )
    for title, key, fmt in (
        ("refaults", "refaults", lambda v: f"{v:,}"),
        ("MiB written back", "bytes_written_back", mib),
        ("MiB read in by refaults", "bytes_read_refault", mib),
    ):
        print(f"\n{title} at G bits per 2MB page\n")
        print("| workload | " + " | ".join(f"G={g}" for g in GS) + " |")
        print("|---|" + "---:|" * len(GS))
        for name, r in results.items():
            print(f"| {name} | " + " | ".join(fmt(r.at(g)[key]) for g in GS) + " |")
    print("\npaging time estimate, seconds (and relative to G=1)\n")
    print("| workload | " + " | ".join(f"G={g}" for g in GS) + " |")
    print("|---|" + "---:|" * len(GS))
    for name, r in results.items():
        base = r.at(1)["time_s"]
        cells = [f"{r.at(g)['time_s']:.3f} ({r.at(g)['time_s'] / base:.2f})" if base else "0" for g in GS]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
