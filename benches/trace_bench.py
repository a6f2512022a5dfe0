"""Tracing benchmark: record real programs end to end with ``xlat trace`` and report the rate
(accesses per second, wall clock and per CPU second), bytes per access of the compressed trace,
and the slowdown against the native run (and against plain qemu-x86_64 without the plugin).

Run with ``make bench`` or ``.venv/bin/python benches/trace_bench.py``; results also go to
``out/bench/trace_bench.json``. The machine may be shared: the load average is printed, and CPU
seconds (the recorder plus QEMU, from rusage) are reported next to wall-clock times.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out" / "bench"
XLAT = [sys.executable, "-m", "xlat"]


def make_inputs(d: Path) -> dict[str, Path]:
    rng = random.Random(42)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        for _ in range(5000)
    ]
    text = d / "words.txt"
    with text.open("w") as f:
        for _ in range(50_000):
            f.write(" ".join(rng.choice(words) for _ in range(6)) + "\n")
    lines = d / "lines.txt"
    with lines.open("w") as f:
        for _ in range(200_000):
            f.write(f"{rng.randrange(10**9):09d} {rng.choice(words)}\n")
    return {"text": text, "lines": lines}


def timed(argv: list[str], **kw) -> tuple[float, float, subprocess.CompletedProcess]:
    """Wall seconds, CPU seconds (user + sys of the finished children) and the result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r


def best(argv: list[str], n: int = 3) -> tuple[float, float]:
    runs = [timed(argv)[:2] for _ in range(n)]
    return min(w for w, _ in runs), min(c for _, c in runs)


def main() -> int:
    if shutil.which("qemu-x86_64") is None:
        print("trace_bench: skipped: qemu-x86_64 is missing (apt-get install qemu-user)")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    inputs = make_inputs(OUT)
    numpy_gather = (
        "import numpy as np; rng = np.random.default_rng(1); t = np.arange(8 << 20, dtype=np.int64); "
        "i = rng.integers(0, t.size, 2_000_000); print(int(t[i].sum()))"
    )
    programs = {
        "xz -9": ["xz", "-9", "-c", str(inputs["text"])],
        "sort": ["sort", str(inputs["lines"])],
        "numpy gather": [sys.executable, "-c", numpy_gather],
    }
    load = os.getloadavg()
    print(f"trace_bench: load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs")
    header = (
        f"{'program':<13} {'accesses':>13} {'trace':>9} {'B/acc':>6} {'rate wall':>11} {'rate CPU':>10} "
        f"{'native':>8} {'qemu':>7} {'traced':>8} {'slowdown':>9} {'vs qemu':>8}"
    )
    print(header)
    print("-" * len(header))
    results = []
    for name, argv in programs.items():
        native_wall, native_cpu = best(argv)
        qemu_wall, _ = best(["qemu-x86_64", shutil.which(argv[0]) or argv[0], *argv[1:]])
        out = OUT / f"{name.replace(' ', '_')}.xlat"
        summary = OUT / "summary.json"
        wall, cpu, r = timed(
            [*XLAT, "trace", "--no-progress", "--json", str(summary), "-o", str(out), "--", *argv]
        )
        if r.returncode != 0:
            print(f"trace_bench: tracing {name} failed: {r.stderr.strip()}", file=sys.stderr)
            return 1
        (s,) = json.loads(summary.read_text())["results"]  # the results document (docs/results-schema.md)
        p = s["processes"][0]
        acc, size = p["accesses"], p["bytes"]
        row = {
            "program": name,
            "argv": argv,
            "accesses": acc,
            "trace_bytes": size,
            "bytes_per_access": size / acc,
            "traced_wall_s": wall,
            "traced_cpu_s": cpu,
            "rate_wall_maccesses_s": acc / wall / 1e6,
            "rate_cpu_maccesses_s": acc / cpu / 1e6,
            "native_wall_s": native_wall,
            "native_cpu_s": native_cpu,
            "qemu_plain_wall_s": qemu_wall,
            "slowdown_vs_native": wall / native_wall,
            "slowdown_vs_qemu": wall / qemu_wall,
        }
        results.append(row)
        print(
            f"{name:<13} {acc:>13,} {size / 2**20:>7.1f}Mi {size / acc:>6.2f} {acc / wall / 1e6:>9.1f}M/s "
            f"{acc / cpu / 1e6:>8.1f}M/s {native_wall:>7.2f}s {qemu_wall:>6.2f}s {wall:>7.2f}s "
            f"{wall / native_wall:>8.1f}x {wall / qemu_wall:>7.1f}x"
        )
        out.unlink()
    (OUT / "trace_bench.json").write_text(json.dumps({"load_average": load, "results": results}, indent=2))
    print("rate wall = accesses / wall seconds of xlat trace (QEMU + plugin + recorder + zstd, end to end);")
    print("rate CPU = accesses / CPU seconds of the same; slowdown = traced wall / best native wall of 3.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
