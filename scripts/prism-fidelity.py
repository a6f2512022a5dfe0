#!/usr/bin/env python3
"""The fidelity study of docs/prism.md: `xlat.fidelity.analyze` over synthetic workloads and
real traces, Markdown tables on stdout, plots in docs/img/ (or --out DIR).

    PYTHONPATH=python .venv/bin/python scripts/prism-fidelity.py [--epoch N] [--traces DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xlat.fidelity import DEFAULT_EPOCH, DEFAULT_SCALES, analyze, plot_loss

SYNTHETIC = {
    "gups": "workload:gups?size=32GiB&accesses=150000000",
    "bfs": "workload:bfs?scale=20&accesses=400000000",
    "zipf": "workload:zipf?size=4GiB&writes=0.3&accesses=100000000",
    "chase": "workload:chase?size=4GiB&accesses=200000000",
    "stream": "workload:stream?size=4GiB&kernel=triad&accesses=300000000",
    "zipf-contig": "workload:zipf?size=4GiB&s=1.2&scatter=none&writes=0.3&accesses=100000000",
}
REAL = ("xz", "numpy-gather", "dict-lookups")
SHOWN_G = (1, 2, 8, 32, 64, 128, 512)


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def plot_scales(results, path: Path, epoch: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (label, r) in enumerate(results.items()):
        sc = r.data["scales"]
        k = [s["k"] for s in sc]
        color = f"C{i}"
        ax.plot(k, [100 * s["spatial_accessed"][0] for s in sc], color=color, marker="o", ms=3, label=label)
        ax.plot(
            k, [100 * s["temporal_accessed_per_set_bit"] for s in sc], color=color, ls="--", marker="x", ms=3
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel(f"window (epochs of {epoch:,} instructions)")
    ax.set_ylabel("accessed-bit loss (%)")
    ax.set_title("spatial at 1 bit/2MB (solid) vs temporal per set bit (dashed)")
    ax.set_ylim(0, 100)
    ax.grid(True, lw=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--traces", default="/work/traces", help="directory of the real traces")
    p.add_argument("--out", default="docs/img", help="where the plots go")
    p.add_argument("--json", help="also write every result to this JSON file")
    p.add_argument("--epoch", type=int, default=DEFAULT_EPOCH, help="instructions per epoch")
    args = p.parse_args()
    specs = dict(SYNTHETIC)
    for name in REAL:
        t = Path(args.traces) / f"{name}.xlat"
        if t.exists():
            specs[name] = str(t)
        else:
            print(f"(skipping {name}: {t} not found)", file=sys.stderr)
    results = {}
    for name, spec in specs.items():
        print(f"analysing {name} ...", file=sys.stderr)
        results[name] = analyze(spec, epoch=args.epoch)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "" if args.epoch == DEFAULT_EPOCH else f"-{args.epoch}"
    plot_loss(results, out / f"prism-fidelity-loss{tag}.png")
    plot_scales(results, out / f"prism-spatial-temporal{tag}.png", args.epoch)
    if args.json:
        Path(args.json).write_text(json.dumps({k: r.to_json() for k, r in results.items()}, indent=1))

    print(
        "| workload | epochs | 2MB regions | samples | A loss % | A std % | A entropy | D loss % | D std % | D entropy |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        d = r.data
        a1, d1 = d["accessed"][0], d["dirty"][0]
        a512, d512 = d["accessed"][-1], d["dirty"][-1]
        print(
            f"| {name} | {d['epochs']} | {d['regions']:,} | {d['samples']:,} | {pct(a1['mean'])} | "
            f"{pct(a1['std'])} | {a512['entropy']:.1f} | {pct(d1['mean'])} | {pct(d1['std'])} | {d512['entropy']:.1f} |"
        )
    for kind in ("accessed", "dirty"):
        print(f"\nmean {kind}-bit fidelity loss (%) at G bits per 2MB page\n")
        print("| workload | " + " | ".join(f"G={g}" for g in SHOWN_G) + " |")
        print("|---|" + "---:|" * len(SHOWN_G))
        means = {g: [] for g in SHOWN_G}
        for name, r in results.items():
            vals = [r.loss(kind, g) for g in SHOWN_G]
            for g, v in zip(SHOWN_G, vals, strict=True):
                means[g].append(v)
            print(f"| {name} | " + " | ".join(pct(v) for v in vals) + " |")
        print("| **mean** | " + " | ".join(pct(sum(v) / len(v)) for v in means.values()) + " |")
    print(
        f"\nspatial (G=1) and temporal accessed-bit loss (%) by window (epochs of {args.epoch:,} instructions)\n"
    )
    ks = list(DEFAULT_SCALES)
    print("| workload | " + " | ".join(f"{k}: spatial / temporal / per set bit" for k in ks[1::2]) + " |")
    print("|---|" + "---:|" * len(ks[1::2]))
    for name, r in results.items():
        cells = []
        for s in r.data["scales"]:
            if s["k"] in ks[1::2]:
                cells.append(
                    f"{pct(s['spatial_accessed'][0])} / {pct(s['temporal_accessed'])} / "
                    f"{pct(s['temporal_accessed_per_set_bit'])}"
                )
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
