"""Where the Mosmodel experiment's error comes from (docs/experiment-results.md), from an experiment
directory of `xlat experiment mosmodel` (its layouts, runs.csv, dataset.csv, models.pkl).

  python scripts/mosmodel-analysis.py faults DIR WORKLOAD [LAYOUT ...]
      exact minor-fault counts of the program under each layout (default: all of DIR/layouts):
      the whole run and the part after the allocator's start-up, with the allocator by default, with
      keep_freed, and with keep_freed plus the prefault the experiment uses; writes DIR/faults.csv
  python scripts/mosmodel-analysis.py noise DIR [--runtime work]
      how reproducible R is: per-layout CoV, the medians of the even- and the odd-numbered runs of
      each layout against each other, and the lag-1 autocorrelation of consecutive runs
  python scripts/mosmodel-analysis.py floor DIR [--runtime work] [--drift] [--reps 10 40 100]
      the maximal error measurement noise alone gives Mosmodel: Mosmodel's fit of the measured R
      taken as the truth, each layout's R the median of N runs drawn from the runs' own noise
      (every run relative to its layout's median, pooled; with --drift, after drift_corrected),
      refitted; the median and 90th percentile of Mosmodel's maximal error over --trials draws
  python scripts/mosmodel-analysis.py reps DIR [--runtime work] [--reps 10 20 30]
      every model's maximal error on the first N runs of every layout, R their median and their
      drift-corrected median (drift_corrected over all the runs, then the first N kept)
  python scripts/mosmodel-analysis.py attribute DIR [--us 2.0]
      the error page faults cause by themselves: R made smooth in (H, M, C) (Mosmodel's fit of the
      measured R), plus the kernel time of the faults each layout takes (DIR/faults.csv, at --us
      microseconds per fault), refitted with every model

Needs root and the huge pages of the layouts for `faults` (it runs the program)."""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from xlat import mosaic
from xlat.experiment.common import read_map
from xlat.experiment.fitting import fit_models
from xlat.experiment.program import programs, resolve
from xlat.experiment.timing import drift_corrected, prefault_env
from xlat.layout import load_layout
from xlat.models import Mosmodel, max_error


def faults(d: Path, workload: str, names: list[str]) -> None:
    prog = resolve(programs()[workload])
    pre = prefault_env(json.loads((d / "pools.json").read_text())["pools"])
    names = names or sorted(p.stem for p in (d / "layouts").glob("*.toml") if p.stem != "all-4KB")
    rows = []
    for name in names:
        layout = load_layout(d / "layouts" / f"{name}.toml")
        row = {"layout": name}
        for label, keep, extra in (("default", False, {}), ("keep", True, {}), ("keep_prefault", True, pre)):
            rep = tempfile.mkdtemp(prefix="xlat-faults-")
            env = mosaic.mosaic_env(layout, "hugetlb", report_dir=rep, keep_freed=keep)
            env.update(extra)
            env.update(prog.env)
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
            subprocess.run(list(prog.argv), env=env, stdout=subprocess.DEVNULL, check=True)
            row[f"{label}_whole"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before
            m = read_map(rep)
            shutil.rmtree(rep, ignore_errors=True)
            row[f"{label}_after_startup"] = m.minflt - m.minflt_start
        rows.append(row)
        print(" ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    pd.DataFrame(rows).to_csv(d / "faults.csv", index=False)


def noise(d: Path, metric: str) -> None:
    runs = pd.read_csv(d / "runs.csv")
    runs = runs[runs["rep"] != "warmup"].copy()
    runs["rep"] = runs["rep"].astype(int)
    cov = runs.groupby("layout")[metric].agg(lambda x: x.std(ddof=1) / x.mean())
    halves = []
    for _, g in runs.groupby("layout"):
        if len(g) >= 6:
            a, b = np.median(g[g["rep"] % 2 == 0][metric]), np.median(g[g["rep"] % 2 == 1][metric])
            halves.append(abs(a - b) / ((a + b) / 2))
    rel = (runs[metric] / runs.groupby("layout")[metric].transform("median")).to_numpy()
    print(f"{d} R = {metric}: per-layout CoV median {cov.median():.2%}, max {cov.max():.2%}")
    if halves:
        print(
            f"  even-numbered against odd-numbered runs ({len(halves)} layouts with >= 6 runs): the two "
            f"medians differ by {np.median(halves):.2%} (median), {max(halves):.2%} (max)"
        )
    print(f"  lag-1 autocorrelation of consecutive runs' runtime relative to their layout's median: "
          f"{np.corrcoef(rel[:-1], rel[1:])[0, 1]:.2f}")  # fmt: skip


def _timed(d: Path, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The timed runs in the order they ran: (layout names, runtimes, repetition numbers)."""
    runs = pd.read_csv(d / "runs.csv")
    runs = runs[runs["rep"] != "warmup"]
    return runs["layout"].to_numpy(), runs[metric].to_numpy(float), runs["rep"].astype(int).to_numpy()


def floor(d: Path, metric: str, drift: bool, reps: list[int], trials: int) -> None:
    df = pd.read_csv(d / "dataset.csv")
    X = df[["H", "M", "C"]].to_numpy(float)
    lay, r, _ = _timed(d, metric)
    if drift:
        r = drift_corrected(lay, r)
    medians = pd.Series(r).groupby(lay).median()
    rel = r / medians[lay].to_numpy()
    R = df["layout"].map(medians).to_numpy(float)
    truth = Mosmodel().fit(X, R).predict(X)
    observed = max_error(R, truth)
    cov = pd.Series(r).groupby(lay).agg(lambda x: x.std(ddof=1) / x.mean())
    label = "drift-corrected " if drift else ""
    print(f"{d} R = {label}{metric}: per-layout CoV median {cov.median():.2%}; Mosmodel's maximal error on "
          f"the measured medians {observed:.2%}")  # fmt: skip
    rng = np.random.default_rng(0)
    for n in reps:
        errs = []
        for _ in range(trials):
            Rn = truth * np.median(rng.choice(rel, (len(truth), n)), axis=1)
            errs.append(max_error(Rn, Mosmodel().fit(X, Rn).predict(X)))
        print(f"  {n:4} runs per layout: Mosmodel's maximal error from the noise alone: median "
              f"{np.median(errs):.2%}, 90th percentile {np.percentile(errs, 90):.2%} ({trials} draws)")  # fmt: skip


def reps(d: Path, metric: str, counts: list[int]) -> None:
    df = pd.read_csv(d / "dataset.csv")
    lay, raw, rep = _timed(d, metric)
    ghz = json.loads((d / "summary.json").read_text())["ghz"]
    for drift, r in ((False, raw), (True, drift_corrected(lay, raw))):
        for n in counts:
            keep = rep < n
            R = pd.Series(r[keep]).groupby(lay[keep]).median()
            x = df.assign(R_cycles=df["layout"].map(R) * ghz * 1e9)
            errs = {e["model"]: e for e in fit_models(x, 5, 0)[1]}
            label = "drift" if drift else "median"
            print(f"{d} {label:6} first {n:3} runs: " + " ".join(f"{m} {e['max_error']:.2%}" for m, e in errs.items())
                  + f" (mosmodel CV {errs['mosmodel']['cv_max_error']:.2%})")  # fmt: skip


def attribute(d: Path, us: float) -> None:
    df = pd.read_csv(d / "dataset.csv")
    f = pd.read_csv(d / "faults.csv").set_index("layout")
    df = df[df["layout"].isin(f.index)].reset_index(drop=True)
    ghz = json.loads((d / "summary.json").read_text())["ghz"]
    with (d / "models.pkl").open("rb") as fh:
        mosmodel = pickle.load(fh)["mosmodel"]
    smooth = mosmodel.predict(df[["H", "M", "C"]].to_numpy(float)) / (ghz * 1e9)
    c = us * 1e-6

    def line(label: str, r: np.ndarray) -> None:
        x = df.assign(R_s=r, R_cycles=r * ghz * 1e9)
        errs = {e["model"]: e["max_error"] for e in fit_models(x, 5, 0)[1]}
        print(f"  {label:58} " + " ".join(f"{m} {v:.2%}" for m, v in errs.items()))

    print(f"{d}: maximal errors of every model, R smooth in (H, M, C) plus faults at {us} us each")
    line("R smooth (Mosmodel's fit of the measured R)", smooth)
    for col, label in (
        ("keep_prefault_after_startup", "+ faults after start-up, as measured (prefault, keep_freed)"),
        ("keep_after_startup", "+ first-touch faults (keep_freed, no prefault)"),
        ("default_after_startup", "+ faults with the allocator's defaults (refaults too)"),
    ):
        n = df["layout"].map(f[col]).to_numpy(float)
        line(label, smooth + c * (n - n.min()))
        print(f"    (fault time range {c * (n.max() - n.min()):.3f} s)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("faults")
    a.add_argument("dir", type=Path)
    a.add_argument("workload")
    a.add_argument("layouts", nargs="*")
    b = sub.add_parser("noise")
    b.add_argument("dir", type=Path)
    b.add_argument("--runtime", default="work")
    f = sub.add_parser("floor")
    f.add_argument("dir", type=Path)
    f.add_argument("--runtime", default="work")
    f.add_argument("--drift", action="store_true")
    f.add_argument("--reps", type=int, nargs="+", default=[10, 40, 100])
    f.add_argument("--trials", type=int, default=50)
    g = sub.add_parser("reps")
    g.add_argument("dir", type=Path)
    g.add_argument("--runtime", default="work")
    g.add_argument("--reps", type=int, nargs="+", default=[10, 20, 30])
    c = sub.add_parser("attribute")
    c.add_argument("dir", type=Path)
    c.add_argument("--us", type=float, default=2.0)
    args = ap.parse_args()
    if args.cmd == "faults":
        faults(args.dir, args.workload, args.layouts)
    elif args.cmd == "noise":
        noise(args.dir, args.runtime)
    elif args.cmd == "reps":
        reps(args.dir, args.runtime, args.reps)
    elif args.cmd == "floor":
        floor(args.dir, args.runtime, args.drift, args.reps, args.trials)
    else:
        attribute(args.dir, args.us)
    return 0


if __name__ == "__main__":
    sys.exit(main())
