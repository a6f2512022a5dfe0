#!/usr/bin/env python3
"""The comparison of docs/virtualisation.md and docs/hashed-page-tables.md: page walks of the
radix tree, elastic cuckoo and chained hashed tables natively, and the radix tree under nested
paging (host THP and host 4KB), on synthetic workloads and traces of real programs; walk loads
per walk (per dimension for nested walks), cycles per walk, VM exits. Markdown on stdout, the
rows as JSON to --json, bars to --plot.

    PYTHONPATH=python .venv/bin/python scripts/translation-study.py --traces DIR \\
        [--json docs/img/translation-study.json] [--plot docs/img/translation-study.png]

Every configuration is the Skylake core with data accesses through the caches (walk loads compete
with data for them). DIR holds the real programs' traces, each made by

    xlat workloads real NAME -o DIR/NAME.xlat --max 30000000        (numpy-gather, dict-lookups, xz)
    xlat trace -o DIR/NAME.xlat --skip 1000000000 --max 30000000 -- ARGV   (graph-bfs, sqlite-join:
        the experiment programs of python/xlat/experiment/program.py, with their environment)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import xlat

SYNTHETIC = {
    "gups": "workload:gups?size=4GiB&accesses=20000000",
    "bfs": "workload:bfs?scale=22&accesses=20000000",
}
REAL = ("numpy-gather", "dict-lookups", "xz", "graph-bfs", "sqlite-join")
DATA = "sim.data_through_caches=true"
NO_PSC = tuple(f"psc.{p}={{remove=true}}" for p in ("pml4e", "pdpte", "pde"))
GUEST_CUCKOO = (
    "hashed_pt.kind=cuckoo",
    "hashed_pt.ways=3",
    "hashed_pt.entries=16384",
    "hashed_pt.resize_at=0.6",
    "hashed_pt.rehash_per_insert=4",
    "hashed_pt.cwc={entries=16, ways=4}",
)
CONFIGS = {
    "radix": xlat.Run(cpu="skylake", set=(DATA,)),
    "cuckoo": xlat.Run(config="hashed/cuckoo", set=(DATA,)),
    "chained": xlat.Run(config="hashed/chained", set=(DATA,)),
    "nested (host THP)": xlat.Run(config="virt/skylake", set=(DATA,)),
    "nested (host 4KB)": xlat.Run(config="virt/skylake", set=(DATA, "virt.host.policy=4k")),
    # The host's page table hashed (guest radix over a hashed host; the host's PSCs go).
    "nested (host 4KB), host cuckoo": xlat.Run(
        config="virt/skylake",
        set=(DATA, "virt.host.policy=4k", "virt.host_psc=[]", "virt.host_hashed.kind=cuckoo"),
    ),
    "nested (host 4KB), host chained": xlat.Run(
        config="virt/skylake",
        set=(
            DATA,
            "virt.host.policy=4k",
            "virt.host_psc=[]",
            "virt.host_hashed.kind=chained",
            "virt.host_hashed.entries=65536",
        ),
    ),
    # The guest's page table hashed (elastic cuckoo as in `hashed/cuckoo`, its walk cache too;
    # the guest's PSCs go): over a THP host, and over a 4KB host whose table is hashed as well
    # (nested elastic cuckoo page tables, Stojkovic et al. 2022).
    "nested (host THP), guest cuckoo": xlat.Run(config="virt/skylake", set=(DATA, "psc=[]", *GUEST_CUCKOO)),
    "nested (host 4KB), guest and host cuckoo": xlat.Run(
        config="virt/skylake",
        set=(
            DATA,
            "psc=[]",
            *GUEST_CUCKOO,
            "virt.host.policy=4k",
            "virt.host_psc=[]",
            "virt.host_hashed.kind=cuckoo",
        ),
    ),
    # Ablations: each removes one structure the designs above have.
    "radix, no PSCs": xlat.Run(cpu="skylake", set=(DATA, *NO_PSC)),
    "cuckoo, no walk cache": xlat.Run(cpu="skylake", set=(DATA, *NO_PSC, "hashed_pt.kind=cuckoo")),
    "nested (host 4KB), no nested TLB or host PSCs": xlat.Run(
        cpu="skylake", set=(DATA, "virt.host.policy=4k")
    ),
}


GROUPS = (list(CONFIGS)[:5], list(CONFIGS)[5:9], list(CONFIGS)[9:])


def row(name: str, label: str, r) -> dict:
    c = r.counters
    walks = max(c["walker.walks"], 1)
    out = {
        "workload": name,
        "config": label,
        "accesses": c["accesses"],
        "walks": c["walker.walks"],
        "loads_per_walk": c["walker.loads"] / walks,
        "cycles_per_walk": c["walker.cycles"] / walks,
        "dram_loads_per_walk": c.get("walker.loads_hit.DRAM", 0) / walks,
        "sim_seconds": r.timing["total_s"] - r.timing["input_s"] if r.timing else None,
    }
    if "virt.vm_exits" in c:
        out |= {
            "guest_loads_per_walk": c["walker.loads.guest"] / walks,
            "host_loads_per_walk": c["walker.loads.host"] / walks,
            "vm_exits": c["virt.vm_exits"],
            "ntlb_hit_ratio": c.get("virt.ntlb.hits", 0) / max(c.get("virt.ntlb.accesses", 0), 1),
        }
    if "hpt.inserts" in c:
        out |= {
            "hpt_resizes": c["hpt.resizes"],
            "hpt_kicks": c["hpt.kicks"],
            "hpt_entries": c["hpt.4kb.entries"] + c["hpt.2mb.entries"] + c["hpt.1gb.entries"],
        }
    return out


def table(header: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(out + ["| " + " | ".join(r) + " |" for r in rows])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", required=True, help="the directory of the real programs' traces")
    ap.add_argument("--only", help="comma-separated workloads")
    ap.add_argument("--json")
    ap.add_argument("--plot")
    a = ap.parse_args()
    inputs = dict(SYNTHETIC)
    for n in REAL:
        p = Path(a.traces) / f"{n}.xlat"
        if not p.is_file():
            print(f"translation-study: {p} is missing: trace it first (see --help).", file=sys.stderr)
            return 1
        inputs[n] = str(p)
    if a.only:
        inputs = {k: v for k, v in inputs.items() if k in a.only.split(",")}
    rows: list[dict] = []
    for name, spec in inputs.items():
        t = time.time()
        results = xlat.simulate_many(spec, list(CONFIGS.values()), threads=2)
        rows += [row(name, label, r) for label, r in zip(CONFIGS, results, strict=True)]
        print(f"translation-study: {name} in {time.time() - t:.0f} s", file=sys.stderr)
    print(f"xlat {xlat.__version__}; `scripts/translation-study.py --traces DIR` (Skylake, {DATA})\n")
    by = {(r["workload"], r["config"]): r for r in rows}
    names = list(inputs)
    for key, what in (("loads_per_walk", "walk loads per walk"), ("cycles_per_walk", "cycles per walk")):
        for part, cols in (
            ("", GROUPS[0]),
            (", nested with hashed tables", GROUPS[1]),
            (", ablations", GROUPS[2]),
        ):
            print(f"**{what}{part}**\n")
            print(table(["workload", *cols], [[n, *(f"{by[n, c][key]:.2f}" for c in cols)] for n in names]))
            print()
    print(
        "**nested walks: each dimension's loads per walk, DRAM loads per walk, nested TLB hit ratio, VM exits**\n"
    )
    nested = [c for c in CONFIGS if c.startswith("nested")]
    hdr = [
        "workload",
        "config",
        "walks",
        "guest",
        "host",
        "DRAM",
        "nested TLB hits",
        "VM exits",
        "x native cycles",
    ]
    body = []
    for n in names:
        for c in nested:
            r, nat = by[n, c], by[n, "radix"]
            body.append(
                [
                    n,
                    c,
                    f"{r['walks']:,}",
                    f"{r['guest_loads_per_walk']:.2f}",
                    f"{r['host_loads_per_walk']:.2f}",
                    f"{r['dram_loads_per_walk']:.2f}",
                    f"{r['ntlb_hit_ratio']:.1%}",
                    f"{r['vm_exits']:,}",
                    f"{r['cycles_per_walk'] / max(nat['cycles_per_walk'], 1e-9):.2f}",
                ]
            )
    print(table(hdr, body))
    print()
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    if a.plot:
        plot(rows, names, a.plot)
    return 0


def plot(rows: list[dict], names: list[str], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = {(r["workload"], r["config"]): r for r in rows}
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    shown = GROUPS[0] + GROUPS[1]
    width = 0.8 / len(shown)
    for ax, key, label in (
        (axes[0], "loads_per_walk", "walk loads per walk"),
        (axes[1], "cycles_per_walk", "cycles per walk"),
    ):
        for i, c in enumerate(shown):
            xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(names))]
            ax.bar(xs, [by[n, c][key] for n in names], width, label=c)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, frameon=False)
    fig.suptitle(
        "Page walks: radix, hashed (cuckoo, chained), and nested with radix or hashed tables (Skylake, data through the caches)"
    )
    fig.tight_layout(rect=(0, 0.12, 1, 0.95))
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
