#!/usr/bin/env python3
"""Lite's results of docs/lite.md (thesis seed 000 chapter 5, Tables 5.5 and 5.6, Figure
5.10): THP, TLB_Lite, RMM, RMM_Lite and TLB_PP (configs/lite) on synthetic workloads (ACCESSES
accesses each) and on traces of real programs (whole: each is its recipe's window); dynamic
energy under Table 5.2's values (xlat.energy, each Lite interval at its active ways), L1/L2 TLB
misses, the share of lookups per active way count and of L1 hits per L1 TLB.

    python benches/lite/run.py [ACCESSES] [OUTDIR]
    python benches/lite/run.py OUTDIR/results.json [OUTDIR]     (tables and figures again)

Environment: XLAT_LITE_TRACES, the directory of the real traces (default /work/traces; those of
REAL that exist there are run, the others are named on stderr and skipped); XLAT_LITE_SET,
overrides given to every configuration, separated by spaces (``xlat sim --set`` syntax: e.g.
``os.eager_placement=any`` or ``lite.reference=minimum`` for an ablation); XLAT_LITE_PLOTS=0
skips the figures. Writes OUTDIR/results.json and results.md (OUTDIR defaults to this directory)
and, with the default OUTDIR, docs/img/lite-energy.png (dynamic energy per configuration,
relative to THP) and docs/img/lite-ways.png (active ways per interval).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import xlat.sim as sim

ROOT = Path(__file__).resolve().parents[2]
LITE = ROOT / "configs" / "lite"
CONFIGS = {
    "4KB": "4k",
    "THP": "thp",
    "TLB_Lite": "tlb-lite",
    "RMM": "rmm",
    "RMM_Lite": "rmm-lite",
    "TLB_PP": "tlb-pp",
}
SYNTHETIC = {
    "gups 8GiB": "workload:gups?size=8GiB",
    "zipf 4GiB": "workload:zipf?size=4GiB",
    "bfs scale 20": "workload:bfs?scale=20",
    "stream 1GiB": "workload:stream?size=1GiB",
}
# Trace file names under XLAT_LITE_TRACES; docs/lite.md says how each was recorded.
REAL = {
    "perl": "perl.xlat",
    "xz": "xz.xlat",
    "sqlite": "sqlite.xlat",
    "cc1": "cc1.xlat",
    "numpy-gather": "numpy-gather.xlat",
    "dict-lookups": "dict-lookups.xlat",
}


def l1_hits(r: sim.SimResult) -> dict[str, int]:
    """Hits per level-1 data structure (page TLBs and L1-range TLB) that was looked up."""
    c = r.counters
    out = {
        t["name"]: c[f"tlb.{t['name']}.hits"]
        for t in r.config["tlb"]
        if t["level"] == 1 and t["role"] == "data"
    }
    for t in r.config.get("range_tlb") or []:
        if t.get("stage", 2) == 1:
            out[t["name"]] = c[f"range_tlb.{t['name']}.hits"]
    return out


def run(n: int) -> dict:
    sets = os.environ.get("XLAT_LITE_SET", "").split()
    runs = [sim.Run(config=str(LITE / f"{f}.toml"), set=sets) for f in CONFIGS.values()]
    specs = {k: f"{v}&accesses={n}" for k, v in SYNTHETIC.items()}
    traces = Path(os.environ.get("XLAT_LITE_TRACES", "/work/traces"))
    for k, v in REAL.items():
        if (traces / v).exists():
            specs[k] = str(traces / v)
        else:
            print(f"{traces / v}: no such trace, {k} skipped", file=sys.stderr)
    out: dict = {}
    for w, spec in specs.items():
        t0 = time.perf_counter()
        rs = sim.simulate_many(spec, runs, threads=1)
        row = {}
        for label, r in zip(CONFIGS, rs, strict=True):
            e = r.energy()
            c = r.counters
            row[label] = {
                "instructions": c["instructions"],
                "accesses": c["accesses"],
                "l1_misses": e.l1_misses,
                "l2_misses": e.l2_misses,
                "l1_mpki": r.derived["tlb_level1.mpki"],
                "dynamic_pj": e.dynamic_pj,
                "dynamic_pj_per_ki": e.per_ki(e.dynamic_pj),
                "by_structure": {s.name: s.dynamic_pj for s in e.structures},
                "table53_cycles": e.lite_cycles,
                "lookup_shares": {k: e.lookup_shares(k) for k in e.lite},
                "l1_hits": l1_hits(r),
                "intervals": len(((r.data.get("epochs") or {}).get("lite") or {}).get("rows") or []),
                "growth_enables": c.get("epoch.lite.growth_enables", 0),
                "random_enables": c.get("epoch.lite.random_enables", 0),
                "ways_series": {
                    k.removesuffix(".ways"): [row_[i] for row_ in r.data["epochs"]["lite"]["rows"]]
                    for i, k in enumerate((r.data.get("epochs") or {}).get("lite", {}).get("columns", []))
                    if k.endswith(".ways") and k.removesuffix(".ways") in e.lite
                },
            }
        out[w] = row
        print(f"{w}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def pct(x: float, base: float) -> str:
    return f"{100 * (x / base - 1):+.0f}%" if base else "n/a"


def ordered(res: dict) -> dict:
    """``res`` in the order of SYNTHETIC then REAL."""
    return {w: res[w] for w in [*SYNTHETIC, *REAL] if w in res}


def tables(res: dict) -> str:
    res = ordered(res)
    lines = []
    cmp = ["TLB_Lite", "RMM", "RMM_Lite", "TLB_PP"]
    lines.append("**Dynamic energy, L1 and L2 TLB misses, relative to THP** (Figure 5.10, 5.11)\n")
    lines.append(
        "| workload | L1 MPKI 4KB | THP L1 / L2 MPKI | THP pJ/ki | "
        + " | ".join(f"{c} energy" for c in cmp)
        + " | "
        + " | ".join(f"{c} L1 / L2 misses" for c in cmp)
        + " |"
    )
    lines.append("|---" * (4 + 2 * len(cmp)) + "|")
    avg: dict[str, list[float]] = {c: [] for c in cmp}
    for w, row in res.items():
        thp = row["THP"]
        ki = thp["instructions"] / 1000
        cells = [
            w,
            f"{row['4KB']['l1_mpki']:.1f}",
            f"{thp['l1_misses'] / ki:.2f} / {thp['l2_misses'] / ki:.2f}",
        ]
        cells.append(f"{thp['dynamic_pj_per_ki']:,.0f}")
        for c in cmp:
            cells.append(pct(row[c]["dynamic_pj"], thp["dynamic_pj"]))
            avg[c].append(row[c]["dynamic_pj"] / thp["dynamic_pj"])
        for c in cmp:
            cells.append(
                f"{pct(row[c]['l1_misses'], thp['l1_misses'])} / {pct(row[c]['l2_misses'], thp['l2_misses'])}"
            )
        lines.append("| " + " | ".join(cells) + " |")
    lines.append(
        "| mean | | | | "
        + " | ".join(f"{100 * (sum(v) / len(v) - 1):+.0f}%" for v in avg.values())
        + " |"
        + " |" * len(cmp)
    )
    lines.append("\n**Percentage of lookups with 4, 2 and 1 active ways** (Table 5.5)\n")
    lines.append(
        "| workload | TLB_Lite L1-4KB 4 / 2 / 1 | TLB_Lite L1-2MB 4 / 2 / 1 | RMM_Lite L1-4KB 4 / 2 / 1 | RMM_Lite L1-2MB 4 / 2 / 1 |"
    )
    lines.append("|---|---|---|---|---|")

    def shares(row: dict, tlb: str) -> str:
        s = row["lookup_shares"].get(tlb)
        if not s:
            return "(not used)"
        s = {int(k): v for k, v in s.items()}  # str keys after a JSON round trip
        return " / ".join(f"{s.get(w, 0.0):.1f}" for w in (4, 2, 1))

    for w, row in res.items():
        lines.append(
            f"| {w} | {shares(row['TLB_Lite'], 'l1d-4k')} | {shares(row['TLB_Lite'], 'l1d-2m')} | "
            f"{shares(row['RMM_Lite'], 'l1d-4k')} | {shares(row['RMM_Lite'], 'l1d-2m')} |"
        )
    lines.append("\n**Lite's decisions: intervals, growth and random re-activations** (Algorithm 5.1)\n")
    lines.append("| workload | TLB_Lite intervals / growth / random | RMM_Lite intervals / growth / random |")
    lines.append("|---|---|---|")
    for w, row in res.items():
        cells = [
            f"{row[c].get('intervals', '?')} / {row[c].get('growth_enables', '?')} / {row[c].get('random_enables', '?')}"
            for c in ("TLB_Lite", "RMM_Lite")
        ]
        lines.append(f"| {w} | " + " | ".join(cells) + " |")
    lines.append(
        "\n**Percentage of L1 hits per L1 TLB** (Table 5.6; an access that hits two L1 TLBs looked up in parallel counts in both)\n"
    )
    lines.append(
        "| workload | TLB_Lite L1-4KB | TLB_Lite L1-2MB | RMM_Lite L1-4KB | RMM_Lite L1-2MB | RMM_Lite L1-range |"
    )
    lines.append("|---|---|---|---|---|---|")
    for w, row in res.items():
        a, b = row["TLB_Lite"]["l1_hits"], row["RMM_Lite"]["l1_hits"]
        sa, sb = sum(a.values()) or 1, sum(b.values()) or 1
        lines.append(
            f"| {w} | {100 * a.get('l1d-4k', 0) / sa:.1f} | {100 * a.get('l1d-2m', 0) / sa:.1f} | "
            f"{100 * b.get('l1d-4k', 0) / sb:.1f} | {100 * b.get('l1d-2m', 0) / sb:.1f} | "
            f"{100 * b.get('range-l1', 0) / sb:.1f} |"
        )
    return "\n".join(lines) + "\n"


def plots(res: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = ordered(res)
    cfgs = [c for c in CONFIGS if c != "4KB"]
    fig, ax = plt.subplots(figsize=(10, 4.2))
    width = 0.8 / len(cfgs)
    ws = list(res)
    for i, c in enumerate(cfgs):
        vals = [res[w][c]["dynamic_pj"] / res[w]["THP"]["dynamic_pj"] for w in ws]
        ax.bar([j + i * width for j in range(len(ws))], vals, width, label=c)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(ws))], ws, rotation=20, fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_ylabel("dynamic translation energy / THP's")
    ax.set_title("Table 5.2/5.3 model, each Lite interval at its active ways")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "img" / "lite-energy.png", dpi=110)
    plt.close(fig)

    panels = [("TLB_Lite", "l1d-4k"), ("TLB_Lite", "l1d-2m"), ("RMM_Lite", "l1d-4k")]
    fig, axes = plt.subplots(
        len(ws), len(panels), figsize=(10, 1.0 + 0.9 * len(ws)), sharey=True, squeeze=False
    )
    for i, w in enumerate(ws):
        for j, (cfg, tlb) in enumerate(panels):
            ax = axes[i][j]
            s = res[w][cfg]["ways_series"].get(tlb)
            if s:
                ax.step(range(1, len(s) + 1), s, where="post", color=f"C{j}")
            else:
                ax.text(0.5, 0.5, "not used", ha="center", va="center", transform=ax.transAxes, fontsize=7)
            ax.set_yticks([1, 2, 4])
            ax.tick_params(labelsize=7)
            if i == 0:
                ax.set_title(f"{cfg} {tlb}: active ways", fontsize=8)
            if j == 0:
                ax.set_ylabel(w, fontsize=7)
            if i == len(ws) - 1:
                ax.set_xlabel("interval (1M instructions)", fontsize=7)
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "img" / "lite-ways.png", dpi=100)
    plt.close(fig)


def main() -> None:
    arg = sys.argv[1] if len(sys.argv) > 1 else "10000000"
    here = Path(__file__).resolve().parent
    outdir = Path(sys.argv[2]) if len(sys.argv) > 2 else here
    outdir.mkdir(parents=True, exist_ok=True)
    if arg.endswith(".json"):  # tables and figures again from a results.json
        res = json.loads(Path(arg).read_text())
    else:
        res = run(int(arg))
        (outdir / "results.json").write_text(json.dumps(res, indent=1) + "\n")
    md = tables(res)
    (outdir / "results.md").write_text(md)
    print(md)
    if os.environ.get("XLAT_LITE_PLOTS", "1") != "0" and outdir == here:
        plots(res)


if __name__ == "__main__":
    main()
