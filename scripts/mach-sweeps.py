#!/usr/bin/env python3
"""The synthetic client/server benchmark of seed 001 section 4.5 on the Mach machine, and the
chapter 5 model instantiated from its counts (docs/mach-benchmark.md).

Runs every configuration of configs/mach/ (tlb-only, stlb-1k, stlb-4k, stlb-2way, ptlb,
ptlb+stlb) over the three sweeps of ``xlat.mach_model.benchmark_sweeps`` with ``xlat sweep``
(resumable, in parallel), then writes the tables (a Markdown section between the
``<!-- mach-sweeps:begin -->`` / ``end`` markers of ``--doc``) and the PNG plots (``--img``):

- kernel TLB misses vs servers and vs words (Figures 4-5, 4-7);
- normalized kernel TLB penalties vs servers and vs words (Figures 4-6, 4-8);
- STLB hit rates vs servers;
- speed-ups per granularity and server count (Tables 4.11-4.13), from the model's runtime
  (equation 5.1) with each run's counts;
- chapter 5's predictions (delta, TLB fraction against T_C) from the counts.

    scripts/mach-sweeps.py [--rounds 5000] [--out out/mach-sweeps] [--workers 2]
        [--doc docs/mach-benchmark.md] [--img docs/img] [--no-run]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from xlat import mach_model as mm  # noqa: E402

# The six machines and their names, as `xlat reproduce mach` has them.
from xlat.reproduce.mach import LABEL, SCHEMES  # noqa: E402

BEGIN, END = "<!-- mach-sweeps:begin -->", "<!-- mach-sweeps:end -->"


def die(msg: str) -> None:
    print(f"mach-sweeps: {msg}", file=sys.stderr)
    sys.exit(1)


def write_sweep(out: Path, points: list[dict]) -> Path:
    traces = sorted({p["spec"] for p in points})
    configs = [str(ROOT / "configs" / "mach" / f"{s}.toml") for s in SCHEMES]
    text = "# written by scripts/mach-sweeps.py: seed 001 section 4.5 on every configs/mach machine\n"
    text += "traces = [\n" + "".join(f'  "{t}",\n' for t in traces) + "]\n"
    text += "configs = [\n" + "".join(f'  "{c}",\n' for c in configs) + "]\n"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sweep.toml"
    path.write_text(text)
    return path


def run_sweep(sweep: Path, results: Path, workers: int) -> None:
    xlat = ROOT / ".venv" / "bin" / "xlat"
    if not xlat.exists():
        die(f"{xlat} is missing: run make setup first")
    cmd = [str(xlat), "sweep", str(sweep), "-o", str(results), "--workers", str(workers)]
    cmd += ["--json", str(results.parent / "summary.json")]
    print("mach-sweeps:", " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
    if r.returncode != 0:
        die(f"xlat sweep exited with {r.returncode}")


def load(results: Path, points: list[dict]) -> dict[tuple[str, str], dict[str, float]]:
    """{(spec, scheme): counters} of every point of the sweeps."""
    import pandas as pd

    df = pd.read_parquet(results)
    by_name = {f"mach-{s}": s for s in SCHEMES}
    specs = {p["spec"] for p in points}
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for rec in df.to_dict("records"):
        scheme = by_name.get(rec.get("config_name"))
        if scheme is None or rec["trace"] not in specs:
            continue
        # (A counter another machine has and this one lacks reads as NaN: left out.)
        rows[(rec["trace"], scheme)] = {
            k: float(v) for k, v in rec.items() if isinstance(v, (int, float)) and v == v
        }
    missing = [(p["spec"], s) for p in points for s in SCHEMES if (p["spec"], s) not in rows]
    if missing:
        die(f"{len(missing)} points have no result yet (first: {missing[0]}); run without --no-run")
    return rows


# ---------------------------------------------------------------- per-point figures


def kernel_penalty(c: dict[str, float]) -> float:
    """Cycles of kernel TLB misses (L1K, L2, L3 handlers with their STLB costs) plus the PTLB's
    overhead on the IPC path: Figure 4-6's 'kernel TLB penalties and the associated overheads'."""
    return c["mach.kernel_cycles"] + c.get("mach.ptlb.cycles", 0.0)


def stlb_hit_rate(c: dict[str, float]) -> float | None:
    probes = c.get("mach.stlb.probes")
    return c["mach.stlb.hits"] / probes if probes else None


def runtime(c: dict[str, float]) -> float:
    """Equation 5.1 with the run's counts at the machine's T_C (24)."""
    return mm.runtime(mm.inputs_from_counts(c, mm.T_C_R3K))


def series(points, rows, sweep: str, f) -> tuple[list[int], dict[str, list]]:
    pts = [p for p in points if p["sweep"] == sweep]
    xs = [p["x"] for p in pts]
    return xs, {s: [f(rows[(p["spec"], s)], rows[(p["spec"], "tlb-only")]) for p in pts] for s in SCHEMES}


# ---------------------------------------------------------------- tables


def md_table(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines) + "\n"


def pct(v: float | None, digits: int = 1) -> str:
    return "" if v is None else f"{100 * v:.{digits}f}%"


def sweep_tables(points, rows, sweep: str, xname: str) -> str:
    xs, misses = series(points, rows, sweep, lambda c, b: c["mach.kernel_misses"])
    _, pen = series(points, rows, sweep, lambda c, b: kernel_penalty(c) / kernel_penalty(b))
    _, hits = series(points, rows, sweep, lambda c, b: stlb_hit_rate(c))
    _, casc = series(points, rows, sweep, lambda c, b: c["mach.cascaded.l3"])
    _, ipcs = series(points, rows, sweep, lambda c, b: c["markers"] / 2)
    out = "Kernel TLB misses (L1K + L2 + L3), and the fraction each scheme removes:\n\n"
    body = []
    for i, x in enumerate(xs):
        base = misses["tlb-only"][i]
        r = [str(x), f"{base:,.0f}", f"{base / ipcs['tlb-only'][i]:.2f}", f"{casc['tlb-only'][i]:,.0f}"]
        r += [f"{misses[s][i]:,.0f} ({pct(misses[s][i] / base - 1, 0)})" for s in SCHEMES[1:]]
        body.append(r)
    out += md_table([xname, "Mach", "per IPC", "of which L3"] + [LABEL[s] for s in SCHEMES[1:]], body)
    out += "\nNormalized kernel TLB penalties (kernel-miss cycles + PTLB overhead, Mach = 1), STLB hit rates:\n\n"
    body = []
    for i, x in enumerate(xs):
        r = [str(x)] + [f"{pen[s][i]:.2f}" for s in SCHEMES[1:]]
        r += [pct(hits[s][i]) for s in ("stlb-1k", "stlb-4k", "stlb-2way", "ptlb+stlb")]
        body.append(r)
    head = [xname] + [LABEL[s] for s in SCHEMES[1:]] + [f"hit {LABEL[s]}" for s in ("stlb-1k", "stlb-4k")]
    head += ["hit 2-way", "hit PTLB+STLB"]
    out += md_table(head, body)
    return out


def speedup_tables(points, rows) -> str:
    out = ""
    for g in ("fine", "medium", "coarse"):
        xs, sp = series(points, rows, f"granularity-{g}", lambda c, b: 1 - runtime(c) / runtime(b))
        _, tf = series(points, rows, f"granularity-{g}", lambda c, b: c["mach.cycles"] / runtime(c))
        body = [
            [str(x), pct(tf["tlb-only"][i])]
            + [pct(sp[s][i]) for s in ("ptlb", "stlb-4k", "ptlb+stlb")]
            + [pct(sp[s][i]) for s in ("stlb-1k", "stlb-2way")]
            for i, x in enumerate(xs)
        ]
        out += f"\n{g.capitalize()} granularity (speed-up = 1 - R_scheme / R_Mach, R of equation 5.1):\n\n"
        out += md_table(
            ["servers", "Mach: TLB time", "PTLB", "DM 4K", "PTLB+STLB", "DM 1K", "2-way 4K"], body
        )
    return out


def chapter5_tables(points, rows) -> tuple[str, dict]:
    """The model instantiated per granularity at 4 servers (tlb-only as the unmodified kernel,
    S_T of each scheme from its own run), and its predictions for the faster processors."""
    out = ""
    saved: dict = {}
    for g in ("fine", "medium", "coarse"):
        spec = next(p["spec"] for p in points if p["sweep"] == f"granularity-{g}" and p["x"] == 4)
        base = rows[(spec, "tlb-only")]
        x = mm.inputs_from_counts(base)
        head = (
            f"\n{g.capitalize()} granularity, 4 servers: I_A = {x.I_A:,.0f}, I_T = {x.I_T:,.0f}, "
            f"M_A = {x.M_A:.4f}, M_T = {x.M_T:.4f} (M_T - M_A = {x.M_T - x.M_A:+.4f}), "
            f"time in TLB handling {pct(mm.tlb_fraction(x))}:\n\n"
        )
        body = []
        for s in ("ptlb", "stlb-4k", "ptlb+stlb"):
            st = mm.speedup_of_scheme(base, rows[(spec, s)])
            ch = mm.chapter5(x, st)
            saved[(g, s)] = (x, st)
            r = [LABEL[s], f"{st:.3f}", pct(ch["delta"], 2)]
            r += [f"{pct(sc['delta'], 2)} ({100 * sc['delta_increase']:+.2f})" for sc in ch["scenarios"]]
            body.append(r)
        # The same counts with the document's split of TLB time (section 5.4: I_T about half of
        # it, so C_T T_C the other half: M_T = 1 / T_C).
        t = mm.tlb_time(x)
        xd = mm.Inputs(x.I_A, t / 2, x.M_A, 1 / x.T_C, x.T_C)
        st = mm.speedup_of_scheme(base, rows[(spec, "ptlb+stlb")])
        ch = mm.chapter5(xd, st)
        r = ["PTLB+STLB, I_T = half the TLB time", f"{st:.3f}", pct(ch["delta"], 2)]
        r += [f"{pct(sc['delta'], 2)} ({100 * sc['delta_increase']:+.2f})" for sc in ch["scenarios"]]
        body.append(r)
        names = ["R3K-ext", "alpha g=0.8", "alpha best", "alpha gA=.5 gT=1", "alpha gA=.5 gT=.8"]
        out += head + md_table(["scheme", "S_T", "delta (R3K)", *names], body)
    doc = mm.document_chapter5()
    out += (
        "\nThe document's own (section 5.4-5.5, delta of video_play 3.5%): R3K-ext "
        f"+{100 * doc['eq5_9_increase']:.2f}, alpha gamma 0.8 +{100 * doc['eq5_13_increase']:.2f} "
        f"({pct(doc['eq5_13_video_play'])}), best case +{100 * doc['eq5_15_increase']:.2f} "
        f"({pct(doc['eq5_15_video_play'])}), gA 0.5 gT 1 +{100 * doc['realistic_gT1_increase']:.2f} "
        f"({pct(doc['realistic_gT1_video_play'])}), gA 0.5 gT 0.8 +{100 * doc['realistic_gT08_increase']:.2f} "
        f"({pct(doc['realistic_gT08_video_play'])}).\n"
    )
    return out, saved


# ---------------------------------------------------------------- plots


def plots(points, rows, img: Path, saved: dict) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img.mkdir(parents=True, exist_ok=True)
    made = []

    def save(fig, name: str) -> None:
        fig.tight_layout()
        fig.savefig(img / name, dpi=90)
        plt.close(fig)
        made.append(name)

    marks = dict(zip(SCHEMES, "os^vDx", strict=True))

    def lines(ax, sweep, f, schemes=SCHEMES, scale=1.0):
        xs, ys = series(points, rows, sweep, f)
        for s in schemes:
            if all(v is not None for v in ys[s]):
                ax.plot(
                    xs,
                    [scale * v for v in ys[s]],
                    marker=marks[s],
                    color=f"C{SCHEMES.index(s)}",
                    label=LABEL[s],
                )

    for sweep, xl, tag, fig_m, fig_p in (
        ("servers", "servers (1 client, 30 words per IPC)", "servers", "4-5", "4-6"),
        ("words", "words per IPC (1 client, 4 servers)", "words", "4-7", "4-8"),
    ):
        fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
        lines(a, sweep, lambda c, _b: c["mach.kernel_misses"], scale=1e-3)
        a.set_title(f"kernel TLB misses, thousands (Figure {fig_m})")
        lines(b, sweep, lambda c, base: kernel_penalty(c) / kernel_penalty(base))
        b.set_title(f"normalized kernel TLB penalties (Figure {fig_p})")
        for ax in (a, b):
            ax.set_xlabel(xl)
            ax.grid(alpha=0.3)
        a.legend(fontsize=8)
        save(fig, f"mach-kernel-misses-vs-{tag}.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    lines(
        ax, "servers", lambda c, _b: stlb_hit_rate(c), ("stlb-1k", "stlb-4k", "stlb-2way", "ptlb+stlb"), 100
    )
    ax.set_xlabel("servers (1 client, 30 words per IPC)")
    ax.set_title("STLB hit rate (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, "mach-stlb-hit-rate.png")

    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, g, t in zip(axes, ("fine", "medium", "coarse"), ("4.11", "4.12", "4.13"), strict=True):
        lines(ax, f"granularity-{g}", lambda c, b: 1 - runtime(c) / runtime(b), SCHEMES[1:], 100)
        ax.set_title(f"{g}: speed-up % (Table {t})")
        ax.set_xlabel("servers")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    save(fig, "mach-speedup.png")

    tcs = [float(t) for t in range(8, 201, 4)]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for g in ("fine", "coarse"):
        x, st = saved[(g, "ptlb+stlb")]
        for label, ga, gt, ls in (("same cache", 1.0, 1.0, "-"), ("gA=0.5, gT=1", 0.5, 1.0, "--")):
            r = mm.sweep_tc(x, st, tcs, ga, gt)
            a.plot(tcs, [100 * v["delta"] for v in r], ls=ls, label=f"{g}, {label}")
            b.plot(tcs, [100 * v["tlb_fraction"] for v in r], ls=ls, label=f"{g}, {label}")
    for ax, t in ((a, "delta of PTLB+STLB (% of runtime)"), (b, "time in TLB handling (%)")):
        ax.axvline(mm.T_C_R3K, color="grey", lw=0.8, ls=":")
        ax.axvline(mm.T_C_ALPHA, color="grey", lw=0.8, ls=":")
        ax.set_xlabel("cache miss time T_C (cycles); 24: R3000, 60: R3K-ext / alpha")
        ax.set_title(t)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    save(fig, "mach-chapter5.png")
    return made


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5000, help="client iterations per point (default 5000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "mach-sweeps")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--doc", type=Path, default=ROOT / "docs" / "mach-benchmark.md")
    ap.add_argument("--img", type=Path, default=ROOT / "docs" / "img")
    ap.add_argument("--no-run", action="store_true", help="only read the results already there")
    args = ap.parse_args()
    if args.rounds < 1:
        die(f"--rounds {args.rounds} must be at least 1")
    points = mm.benchmark_sweeps(rounds=args.rounds, seed=args.seed)
    sweep = write_sweep(args.out, points)
    results = args.out / "results"
    if not args.no_run:
        run_sweep(sweep, results, args.workers)
    rows = load(results, points)
    text = f"Generated by `scripts/mach-sweeps.py --rounds {args.rounds}` ({len({p['spec'] for p in points})} workloads x 6 machines).\n\n"
    text += "#### Hypothesis 1: servers 1..10, 30 words per IPC (Figures 4-5, 4-6)\n\n"
    text += sweep_tables(points, rows, "servers", "servers")
    text += "\n![kernel TLB misses and penalties vs servers](img/mach-kernel-misses-vs-servers.png)\n"
    text += "\n![STLB hit rates vs servers](img/mach-stlb-hit-rate.png)\n"
    text += "\n#### Hypothesis 2: 4 servers, words per IPC 5..50 (Figures 4-7, 4-8)\n\n"
    text += sweep_tables(points, rows, "words", "words")
    text += "\n![kernel TLB misses and penalties vs words](img/mach-kernel-misses-vs-words.png)\n"
    text += "\n#### Hypothesis 3: granularity, 3..10 servers (Tables 4.11-4.13)\n"
    text += speedup_tables(points, rows)
    text += "\n![speed-ups per granularity](img/mach-speedup.png)\n"
    text += "\n#### Chapter 5 from these counts\n"
    ch5, saved = chapter5_tables(points, rows)
    text += ch5
    text += "\n![chapter 5 predictions from the simulated counts](img/mach-chapter5.png)\n"
    plots(points, rows, args.img, saved)
    (args.out / "tables.md").write_text(text)
    doc = args.doc.read_text()
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        args.doc.write_text(head + BEGIN + "\n" + text + END + rest.split(END, 1)[1])
        print(f"mach-sweeps: wrote the tables into {args.doc}", file=sys.stderr)
    else:
        print(
            f"mach-sweeps: {args.doc} has no {BEGIN} marker; tables in {args.out / 'tables.md'}",
            file=sys.stderr,
        )
    with open(args.out / "counts.json", "w") as f:
        json.dump({f"{k[0]}|{k[1]}": v for k, v in rows.items()}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
