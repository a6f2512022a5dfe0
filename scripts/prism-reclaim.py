#!/usr/bin/env python3
"""The eviction study of docs/prism.md: `xlat.reclaim.analyze` (memory at a fraction of the
footprint, CLOCK over chunks of 2MB/G) over synthetic workloads and real traces, Markdown tables
on stdout, a plot (written-back bytes and paging time against G) to --plot.

    PYTHONPATH=python .venv/bin/python scripts/prism-reclaim.py [--fraction F] [--epoch N] [--traces DIR]
        [--plot docs/img/prism-reclaim.png]
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


def plot(results, path: str, fraction: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for name, r in results.items():
        axes[0].plot(
            GS, [max(r.at(g)["bytes_written_back"], 1) / (1 << 20) for g in GS], marker="o", ms=3, label=name
        )
        base = r.at(1)["time_s"] or 1.0
        axes[1].plot(GS, [r.at(g)["time_s"] / base for g in GS], marker="o", ms=3, label=name)
    axes[0].set_yscale("log")
    axes[0].set_ylabel("MiB written back")
    axes[1].set_yscale("log")
    axes[1].set_ylabel("paging time relative to 1 bit")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(GS), [str(g) for g in GS])
        ax.set_xlabel("bits per 2MB page (G)")
        ax.grid(True, lw=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle(
        f"eviction with memory at {fraction:g} of the footprint (CLOCK over 2MB/G chunks)", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fraction", type=float, default=DEFAULT_FRACTION)
    p.add_argument("--epoch", type=int, default=DEFAULT_EPOCH)
    p.add_argument("--traces", default="/work/traces")
    p.add_argument("--plot", metavar="OUT.png")
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
    if a.plot:
        plot(results, a.plot, a.fraction)
    return 0


if __name__ == "__main__":
    sys.exit(main())
