"""xlat sweep's throughput: points per minute on a LocalCluster of 1 and 2 worker processes, with
each point decoding its trace itself (``--decode-once never``), with every task's configurations
fed from one decoding (``always``) and with the default (``auto``); and, in one process without
Dask, the same configurations simulated one by one against ``_native.simulate_shared``.

    .venv/bin/python benches/sweep_bench.py [--accesses N] [--repeats R]

Medians of R runs (the machine is shared and noisy). Results go to docs/sweep.md by hand.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from pathlib import Path

SWEEP = """\
traces = ["gups.xlat", "chase.xlat"]
cpus = ["skylake"]
[axes]
"tlb.stlb.entries" = [384, 768, 1536, 3072]
"os.policy" = ["4k", "thp"]
"psc.pde.entries" = [16, 32]
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--accesses", type=int, default=300_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from distributed import Client, LocalCluster
    from xlat import _native
    from xlat.sweep import load, run_sweep

    tmp = Path(tempfile.mkdtemp(prefix="xlat-sweep-bench-"))
    _native.convert(f"workload:gups?size=1GiB&accesses={args.accesses}", str(tmp / "gups.xlat"))
    _native.convert(f"workload:chase?size=256MiB&accesses={args.accesses}", str(tmp / "chase.xlat"))
    (tmp / "sweep.toml").write_text(SWEEP)
    sweep = load(str(tmp / "sweep.toml"))
    n = len(sweep.points)
    print(f"sweep: {n} points, 2 traces of {args.accesses:,} accesses, skylake; medians of {args.repeats}")

    # In one process: 16 configurations of one trace, one by one against one decoding.
    gups = str(tmp / "gups.xlat")
    cfgs = [p.run()._native_args() for p in sweep.points if p.trace == gups]
    sep, shared = [], []
    for _ in range(args.repeats):
        t = time.perf_counter()
        for c in cfgs:
            _native.simulate(gups, [c], 1, False)
        sep.append(time.perf_counter() - t)
        t = time.perf_counter()
        _native.simulate_shared(gups, cfgs)
        shared.append(time.perf_counter() - t)
    print(
        f"one process, {len(cfgs)} configurations of gups.xlat: one by one {statistics.median(sep):.2f} s, "
        f"one decoding {statistics.median(shared):.2f} s"
    )
    r = _native.simulate(gups, [cfgs[0]], 1, False)[0]
    print(f"decoding's share of one run: {r[2] / r[3]:.1%} (auto shares from 50%)")

    run = 0
    for workers in (1, 2):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        with Client(cluster) as client:
            for mode in ("never", "always", "auto"):
                rates = []
                for _ in range(args.repeats):
                    run += 1
                    out = run_sweep(
                        sweep,
                        str(tmp / f"res{run}"),
                        scheduler=client.scheduler.address,
                        group=8,
                        decode_once=mode,
                    )
                    assert out.ran == n and not out.failed, out
                    rates.append(out.ran / out.seconds * 60)
                print(
                    f"{workers} worker(s), decode-once {mode:6}: {statistics.median(rates):7.0f} points/min"
                )
        cluster.close()


if __name__ == "__main__":
    main()
