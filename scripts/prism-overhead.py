#!/usr/bin/env python3
"""The registry-overhead table of docs/prism.md: each input simulated with PRISM (Skylake, THP
always, the metadata registry, 32 access + 32 dirty bits), the simulated MRE loads next to the
Table 4 model (`xlat.models.prism_overhead_of`), Markdown on stdout.

    PYTHONPATH=python .venv/bin/python scripts/prism-overhead.py [--traces DIR]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

from xlat.models import prism_overhead_of
from xlat.sim import Run, simulate_many

SYNTHETIC = {
    "gups": "workload:gups?size=8GiB&accesses=20000000",
    "bfs": "workload:bfs?scale=20&accesses=100000000",
    "zipf": "workload:zipf?size=1GiB&writes=0.3&accesses=50000000",
    "zipf-contig": "workload:zipf?size=1GiB&s=1.2&scatter=none&writes=0.3&accesses=50000000",
    "stream": "workload:stream?size=1GiB&kernel=triad&accesses=100000000",
}
REAL = ("xz", "numpy-gather", "dict-lookups")
SET = ("os.policy=thp", "os.thp=always", "os.metadata=registry", "prism.enabled=true")
#: The model's E: the bits cleared once per 100M instructions (the fidelity epoch).
EPOCH = 100_000_000


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--traces", default="/work/traces")
    a = p.parse_args()
    inputs = dict(SYNTHETIC)
    inputs.update({name: f"{a.traces}/{name}.xlat" for name in REAL})
    print(
        "| workload | 2MB walks | MRE loads | L1D / L2 / LLC / DRAM | MRE_access cyc | registry entries"
        " | E | O(MRE load) model | O(MRE load) simulated | O(+MRE update) model |"
    )
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, spec in inputs.items():
        t = time.time()
        r = simulate_many(spec, [Run(cpu="skylake", set=SET)], threads=1)[0]
        c = r.counters
        epochs = max(1, math.ceil(c["instructions"] / EPOCH))
        o = prism_overhead_of(r, epochs=epochs)
        lv = [int(c.get(f"prism.mre_loads.{x}", 0)) for x in ("L1D", "L2", "LLC", "DRAM")]
        print(f"{name}: {time.time() - t:.1f} s", file=sys.stderr)
        walks = int(c["prism.mre_loads"]) + int(c.get("prism.walks_2m_without_mre", 0))
        print(
            f"| {name} | {walks:,} | {int(o['mre_loads']):,} | {' / '.join(f'{x:,}' for x in lv)} "
            f"| {o['mre_access']:.1f} | {int(c['prism.registry_entries']):,} | {epochs} "
            f"| {100 * o['overhead_load']:.3f}% | {100 * o['overhead_load_sim']:.3f}% "
            f"| {100 * o['overhead_update']:.2f}% |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
