#!/usr/bin/env python3
"""The comparison of docs/rainbow.md: `xlat.rainbow.compare` (Flat-static, HSCC-4KB-mig,
HSCC-2MB-mig, Rainbow, DRAM-only with 2MB pages) over three synthetic workloads and three
traces of real programs, memory scaled down (default 256 MiB DRAM + 2 GiB NVM, the paper's 1:8)
so that the traces' footprints exceed DRAM; Markdown tables on stdout, the rows as JSON to
--json, the bars to --plot, Observation 1's CDFs to --touch-plot (intervals of --touch-interval
instructions, default 2,000,000: about 10^8 cycles of the time model at these workloads' IPCs;
--touch-only: that alone).

    PYTHONPATH=python .venv/bin/python scripts/rainbow-study.py [--dram 256MiB] [--nvm 2GiB]
        [--traces out/rainbow] [--json docs/img/rainbow-results.json]
        [--plot docs/img/rainbow-comparison.png] [--touch-plot docs/img/rainbow-touch.png]

The real traces are `xlat workloads real NAME -o DIR/NAME.xlat --max 100000000` (numpy-gather,
dict-lookups, csgraph-bfs).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from xlat import rainbow, touch

SYNTHETIC = {
    "gups": "workload:gups?size=1GiB&accesses=40000000",
    "bfs": "workload:bfs?scale=21&accesses=60000000",
    "zipf": "workload:zipf?size=1GiB&writes=0.3&accesses=60000000",
}
REAL = ("numpy-gather", "dict-lookups", "csgraph-bfs")


def gmean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def per_config(results: dict[str, list[dict]], key: str, fmt) -> str:
    names = [r["label"] for r in next(iter(results.values()))]
    rows = [[w, *(fmt(r[key]) for r in rows)] for w, rows in results.items()]
    return table(["workload", *names], rows)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dram", default="256MiB")
    ap.add_argument("--nvm", default="2GiB")
    ap.add_argument("--traces", default="out/rainbow")
    ap.add_argument("--json")
    ap.add_argument("--plot")
    ap.add_argument("--touch-plot")
    ap.add_argument("--touch-interval", type=int, default=2_000_000)
    ap.add_argument("--touch-only", action="store_true")
    ap.add_argument("--only", help="comma-separated workloads to run")
    args = ap.parse_args()
    specs = dict(SYNTHETIC)
    for name in REAL:
        p = Path(args.traces) / f"{name}.xlat"
        if p.exists():
            specs[name] = str(p)
        else:
            print(f"(skipping {name}: no {p})", file=sys.stderr)
    if args.only:
        keep = args.only.split(",")
        specs = {k: v for k, v in specs.items() if k in keep}
    if args.touch_only:
        touches = {name: touch.analyze(spec, args.touch_interval) for name, spec in specs.items()}
        if args.touch_plot:
            touch.plot_cdf(touches, args.touch_plot)
        head = ["workload", "intervals", "<= 32", "<= 64", "<= 128", "<= 256", "<= 511"]
        rows = [
            [w, f"{r.data['intervals']:,}", *(f"{100 * r.at_most(n):.1f}%" for n in (32, 64, 128, 256, 511))]
            for w, r in touches.items()
        ]
        print(f"superpages with at most n touched 4KB pages per {args.touch_interval:,} instructions\n")
        print(table(head, rows))
        return 0
    cmps, results, touches = {}, {}, {}
    for name, spec in specs.items():
        t = time.time()
        c = rainbow.compare(spec, dram=args.dram, nvm=args.nvm)
        cmps[name] = c
        results[name] = c.rows()
        print(f"({name}: {time.time() - t:.0f} s)", file=sys.stderr)
        if args.touch_plot:
            touches[name] = touch.analyze(spec, args.touch_interval)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"dram": args.dram, "nvm": args.nvm, "results": results}, indent=1)
        )
    if args.plot:
        rainbow.plot_many(cmps, args.plot)
    if args.touch_plot:
        touch.plot_cdf(touches, args.touch_plot)
    pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
    num = lambda v: f"{v:.3g}"  # noqa: E731
    print(f"memory: {args.dram} DRAM + {args.nvm} NVM (DRAM-only: their sum, all DRAM)\n")
    print("TLB misses per kilo-instruction (page walks)\n")
    print(per_config(results, "tlb_mpki", num))
    print("\n% of cycles in translation (TLB hits below L1, walks, bitmap cache, pointer reads)\n")
    print(per_config(results, "translation_share", pct))
    print("\nIPC relative to Flat-static (additive time model: every latency in series)\n")
    print(per_config(results, "ipc_vs_flat", lambda v: f"{v:.3f}"))
    print("\nIPC relative to Flat-static (overlap time model, docs/time-model.md)\n")
    print(per_config(results, "ipc_overlap_vs_flat", lambda v: f"{v:.3f}"))
    for key, what in (("ipc_vs_flat", "additive"), ("ipc_overlap_vs_flat", "overlap")):
        g = gmean([next(x for x in rs if x["config"] == "rainbow")[key] for rs in results.values()])
        print(f"\nRainbow / Flat-static, geometric mean ({what} model): {g:.3f} (seed 003: 1.727)")
    print("\nmigration traffic / footprint (4KB pages touched)\n")
    print(per_config(results, "migration_vs_footprint", num))
    print("\nmemory energy relative to Flat-static\n")
    print(per_config(results, "energy_vs_flat", lambda v: f"{v:.3f}"))
    print("\nRainbow's translation cases (% of translations), remaps, bitmap-cache misses\n")
    rows = []
    for w, rs in results.items():
        r = next(x for x in rs if x["config"] == "rainbow")
        n = sum(r[f"case{i}"] for i in range(1, 5)) or 1
        rows.append(
            [
                w,
                *(pct(r[f"case{i}"] / n) for i in range(1, 5)),
                f"{r['remaps']:,}",
                f"{r['bitmap_misses']:,}",
                f"{r.get('promotions', 0):,}",
                f"{r.get('demotions', 0):,}",
                f"{r.get('intervals', 0):,}",
            ]
        )
    head = [
        "workload",
        "case 1",
        "case 2",
        "case 3",
        "case 4",
        "remaps",
        "bitmap misses",
        "cached",
        "uncached",
    ]
    print(table([*head, "intervals"], rows))
    print("\nTranslation breakdown (% of all cycles): STLB hits / walks / 4KB below / bitmap / pointer\n")
    rows = []
    for w, rs in results.items():
        rows.append([w] + [" / ".join(pct(r[f"share_{p}"]) for p in rainbow.TRANSLATION_PARTS) for r in rs])
    print(table(["workload", *(r["label"] for r in next(iter(results.values())))], rows))
    print("\nsummary (geometric means over the workloads)\n")
    by = {c: [next(r for r in rs if r["config"] == c) for rs in results.values()] for c in rainbow.CONFIGS}
    rb, h4, h2 = by["rainbow"], by["hscc-4kb"], by["hscc-2mb"]
    mpki_cut = 1 - sum(r["tlb_mpki"] for r in rb) / max(sum(r["tlb_mpki"] for r in h4), 1e-9)
    print(
        f"- Rainbow's TLB misses against HSCC-4KB-mig: {100 * mpki_cut:.1f}% fewer (summed over the workloads)"
    )
    ipc = [a["ipc"] / b["ipc"] for a, b in zip(rb, h4, strict=True)]
    print(f"- Rainbow's IPC / HSCC-4KB-mig: geometric mean {gmean(ipc):.3f}, max {max(ipc):.2f}")
    ipc2 = [a["ipc"] / b["ipc"] for a, b in zip(h2, h4, strict=True)]
    print(f"- HSCC-2MB-mig's IPC / HSCC-4KB-mig: {', '.join(f'{x:.2f}' for x in ipc2)}")
    tr = [
        a["migration_bytes"] / b["migration_bytes"]
        for a, b in zip(rb, h2, strict=True)
        if b["migration_bytes"]
    ]
    print(f"- Rainbow's migration traffic / HSCC-2MB-mig's: {', '.join(f'{x:.3f}' for x in tr)}")
    up = [a["ipc"] / b["ipc"] for a, b in zip(rb, by["dram-only-2mb"], strict=True)]
    print(f"- Rainbow's IPC / DRAM-only: geometric mean {gmean(up):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
