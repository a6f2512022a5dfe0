"""Benchmark of the mosaic allocator (``make bench`` runs ``python benches/mosaic_bench.py``).

1. Allocator throughput on a malloc-heavy program (benches/mosaic_progs/malloc_bench.c), 1 and 2
   threads: glibc malloc, libxlat_mosaic.so (all-4KB layout), and for reference the two proven cores
   considered for it, Debian's jemalloc 5.3 and mimalloc 2.0.9 preloaded as-is.  Target: the mosaic
   allocator within 10% of glibc (it is well above it).  Then the CPU time of two malloc-heavy
   real programs (tests/mosaic_progs/mt_alloc.c and a python3 dict build), glibc against mosaic.
2. Time per dependent random read over a 2 GiB region (benches/mosaic_progs/chase.c) under layouts
   that put the region on 4KB, 2MB and 1GB pages, plus plain mmap without the library.

Prints medians over repetitions.  Needs cc; 2MB/1GB rows need root to reserve huge pages (what this
script reserves it releases at the end).  ``--quick`` makes a shorter run for smoke tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from xlat import mosaic  # noqa: E402
from xlat.layout import parse_layout  # noqa: E402

PROGS = Path(__file__).resolve().parent / "mosaic_progs"
DEBIAN_LIBS = {
    "jemalloc 5.3 (Debian, as-is)": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
    "mimalloc 2.0.9 (Debian, as-is)": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
}
REGION_MIB = 2048


def build(tmp: Path) -> dict[str, str]:
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        sys.exit("mosaic_bench: no C compiler found (apt-get install gcc).")
    r = subprocess.run(["make", "-s", "-C", str(ROOT / "native" / "mosaic")], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"mosaic_bench: building the mosaic library failed:\n{r.stderr}")
    out = {}
    sources = {
        "malloc_bench": PROGS / "malloc_bench.c",
        "chase": PROGS / "chase.c",
        "mt_alloc": ROOT / "tests" / "mosaic_progs" / "mt_alloc.c",
    }
    for name, src in sources.items():
        exe = tmp / name
        subprocess.run([cc, "-O2", "-pthread", "-o", str(exe), str(src)], check=True)
        out[name] = str(exe)
    return out


def plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("XLAT_MOSAIC_")}


def values(stdout: str, key: str) -> list[float]:
    return [float(line.split()[1]) for line in stdout.splitlines() if line.startswith(key + " ")]


def run_env(argv: list[str], env: dict[str, str]) -> str:
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{argv[0]} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def malloc_table(exe: str, reps: int, ops: int) -> None:
    all4k = parse_layout('version = 1\nname = "all-4KB"\n')
    configs = {
        "glibc malloc": plain_env(),
        "xlat mosaic (all-4KB)": mosaic.mosaic_env(all4k, base=plain_env()),
    }
    for name, lib in DEBIAN_LIBS.items():
        if os.path.exists(lib):
            configs[name] = dict(plain_env(), LD_PRELOAD=lib)
    print(
        f"Allocator throughput: malloc_bench, {ops // 10**6}M malloc+free per thread, median of {reps} runs,"
    )
    print("  in million malloc+free per second of CPU time (all threads; wall time on a shared machine")
    print("  also counts other processes)")
    print(f"  {'allocator':34} {'1 thread':>12} {'vs glibc':>9} {'2 threads':>12} {'vs glibc':>9}")
    base = {}
    for name, env in configs.items():
        row = []
        for threads in (1, 2):
            mops = statistics.median(
                values(run_env([exe, str(threads), str(ops)], env), "cpu_mops")[0] for _ in range(reps)
            )
            base.setdefault(threads, mops)
            row.append(f"{mops:9.1f} M/s {mops / base[threads] - 1:+8.0%}")
        print(f"  {name:34} {row[0]:>22} {row[1]:>22}")
    print()


PY_DICT = "d = {str(i): [i] for i in range(1_500_000)}; print(sum(len(k) for k in d))"


def programs_table(mt_alloc: str, reps: int) -> None:
    """CPU time (user + system, all threads) of malloc-heavy real programs: glibc against the mosaic
    allocator (all-4KB).  CPU time rather than wall time, because this machine is shared."""
    import resource

    all4k = parse_layout('version = 1\nname = "all-4KB"\n')
    envs = {"glibc": plain_env(), "xlat mosaic": mosaic.mosaic_env(all4k, base=plain_env())}
    progs = {
        "mt_alloc, 2 threads x 1M ops": [mt_alloc, "2", "1000000"],
        "python3: dict of 1.5M lists": [sys.executable, "-c", PY_DICT],
    }
    print(f"Real programs: CPU time (user+sys), median of {reps} runs")
    print(f"  {'program':34} {'glibc':>9} {'mosaic':>9} {'mosaic vs glibc':>16}")
    for name, argv in progs.items():
        t = {}
        for alloc, env in envs.items():
            samples = []
            for _ in range(reps):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                run_env(argv, env)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                samples.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            t[alloc] = statistics.median(samples)
        print(
            f"  {name:34} {t['glibc']:8.2f}s {t['xlat mosaic']:8.2f}s {t['xlat mosaic'] / t['glibc'] - 1:+15.0%}"
        )
    print()


def chase_layout(page: str) -> str:
    """Anon pool whose first 2 GiB (where the benchmark's region lands) is one window of ``page``."""
    win = (
        ""
        if page == "4KB"
        else (f'windows = [{{ offset = "0", length = "{REGION_MIB}MiB", page = "{page}" }}]')
    )
    return (
        f'version = 1\nname = "chase-{page}"\n[heap]\nsize = "1GiB"\n'
        f'[anon]\nsize = "{REGION_MIB + 64}MiB"\n{win}\n[file]\nsize = "1GiB"\n'
    )


def chase_table(exe: str, procs: int, steps: int, reps: int) -> None:
    print(
        f"Dependent random reads over a {REGION_MIB // 1024} GiB region: ns per read, median of "
        f"{procs} runs x {reps} walks of {steps // 10**6}M steps"
    )
    print(f"  {'backing':34} {'cpu time':>11} {'wall time':>11}")
    argv = [exe, str(REGION_MIB), str(steps), str(reps)]
    samples, wall = [], []
    for _ in range(procs):
        text = run_env(argv, plain_env())
        samples += values(text, "cpu_ns")
        wall += values(text, "ns")
    print(
        f"  {'plain mmap, no preload (4KB)':34} {statistics.median(samples):8.1f} ns "
        f"{statistics.median(wall):8.1f} ns"
    )
    added: dict[str, int] = {"2MB": 0, "1GB": 0}
    try:
        for page in ("4KB", "2MB", "1GB"):
            lay = parse_layout(chase_layout(page))
            need = lay.huge_pages_needed().get(page, 0)
            if need:
                have = mosaic.status().get(page, {}).get("available", 0)
                if have < need:
                    try:
                        added[page] += mosaic.reserve(need - have, page)
                    except mosaic.MosaicError as err:
                        print(f"  {'xlat mosaic, region on ' + page:34} skipped: {err}")
                        continue
            samples, wall, verified = [], [], True
            for _ in range(procs):
                reports: list = []
                with tempfile.TemporaryFile() as out, open(os.devnull, "w") as quiet:
                    rc = mosaic.run(lay, argv, verify=True, reports=reports, report_to=quiet, stdout=out)
                    out.seek(0)
                    text = out.read().decode()
                if rc:
                    raise RuntimeError(f"chase under {page} failed with status {rc}")
                verified &= reports[0].honoured
                samples += values(text, "cpu_ns")
                wall += values(text, "ns")
            note = "verified from smaps" if verified else "LAYOUT NOT HONOURED"
            print(
                f"  {'xlat mosaic, region on ' + page:34} {statistics.median(samples):8.1f} ns "
                f"{statistics.median(wall):8.1f} ns   ({note})"
            )
    finally:
        for page, n in added.items():
            if n:
                mosaic.release(n, page)
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer and shorter runs")
    args = ap.parse_args()
    # on SIGTERM, unwind so that huge pages reserved here are released (the finally blocks)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory() as tmp:
        exes = build(Path(tmp))
        if args.quick:
            malloc_table(exes["malloc_bench"], reps=1, ops=2_000_000)
            programs_table(exes["mt_alloc"], reps=1)
            chase_table(exes["chase"], procs=1, steps=1_000_000, reps=1)
        else:
            malloc_table(exes["malloc_bench"], reps=5, ops=10_000_000)
            programs_table(exes["mt_alloc"], reps=5)
            chase_table(exes["chase"], procs=2, steps=4_000_000, reps=3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
