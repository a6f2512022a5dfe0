"""What the experiment hands back: :class:`ExperimentResult` (printed as a table, saved as
Markdown) and the plot of runtime against walk cycles."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: how the report names each estimator of R
_ESTIMATOR = {"median": "median", "min": "min", "drift": "drift-corrected median"}


def plot(df, fitted: dict[str, Any], path: Path, title: str) -> None:
    """Runtime against walk cycles, one panel per model: measured points and the model's
    prediction at every layout (joined in order of C), like Figures 3 and 10 of Agbarya et al. 2020."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    X = df[["H", "M", "C"]].to_numpy(float)
    y = df["R_cycles"].to_numpy(float)
    order = np.argsort(X[:, 2])
    names = list(fitted)
    cols = 3
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), squeeze=False, sharex=True)
    for ax, name in zip(axes.flat, names, strict=False):
        ax.errorbar(
            X[:, 2] / 1e9,
            y / 1e9,
            yerr=df["R_std_cycles"].to_numpy(float) / 1e9,
            fmt="o",
            ms=3,
            color="0.3",
            label="measured",
        )
        p = fitted[name].predict(X)
        ax.plot(X[order, 2] / 1e9, p[order] / 1e9, "-", color="C3", label=name)
        err = np.max(np.abs(p - y) / y)
        ax.set_title(f"{name}: max error {err:.1%}", fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("walk cycles C (1e9, simulated)")
    for ax in axes[:, 0]:
        ax.set_ylabel("runtime R (1e9 cycles)")
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _short_command(argv: Sequence[str], limit: int = 160) -> str:
    """One line: a multi-line argument (a ``python -c`` script) is joined with ``⏎``."""
    text = " ".join(a.replace("\n", " ⏎ ") for a in argv)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class ExperimentResult:
    out: Path
    dataset: Any  # pandas.DataFrame, one row per layout
    errors: list[dict[str, Any]]
    fitted: dict[str, Any]
    summary: dict[str, Any]

    def format(self) -> str:
        s = self.summary
        if s.get("simulate_only"):
            cols = ["layout", "H", "M", "C", "walks_pki", "faults_2m"]
            return (
                f"{s['program']}: {len(self.dataset)} layouts simulated ({s['cpu']} preset), not run; "
                f"saved in {self.out}/simulated.csv\n" + self.dataset[cols].to_string(index=False)
            )
        lines = [
            f"{s['program']}: {s['layouts']} layouts, R = {_ESTIMATOR.get(s['estimator'], s['estimator'])} process {s['metric']} time x {s['ghz']:.3f} GHz; "
            f"H, M, C simulated ({s['cpu']} preset; "
            + ("this machine has a PMU, not read" if s["hardware_counters"] else "no hardware counters here")
            + ")",
            f"runtime noise: CoV median {s['cov_median']:.2%}, max {s['cov_max']:.2%} "
            f"({s['reps_total']} runs, {s['reps_min']}-{s['reps_max']} per layout); "
            f"runtime range {s['R_min_s']:.3f}-{s['R_max_s']:.3f} s ({s['R_spread']:.1%})",
            "",
            f"{'model':<10} {'max err':>8} {'geomean':>8} {'CV max':>8} {'CV geo':>8}  note",
        ]
        for r in self.errors:

            def pct(v):
                return "     n/a" if v != v else f"{v:8.2%}"

            lines.append(
                f"{r['model']:<10} {pct(r['max_error'])} {pct(r['geomean_error'])} "
                f"{pct(r['cv_max_error'])} {pct(r['cv_geomean_error'])}  {r.get('note', '')}"
            )
        v = s.get("validation_1g")
        if v:
            lines.append("")
            lines.append(
                f"1GB validation: not run: {v['error']}"
                if "error" in v
                else f"1GB validation ({v['pages_1g']} x 1GB, {v['reps']} runs, R {v['R_s']:.3f} s): prediction errors "
                + ", ".join(f"{m} {x:+.2%}" for m, x in v["errors"].items())
            )
        lines.append("")
        lines.append(
            f"saved in {self.out}: dataset.csv, runs.csv, errors.csv, models.pkl, summary.json, report.md, "
            "runtime_vs_walk_cycles.png"
            + (", validation-1g.json, runs-1g.csv" if v and "error" not in v else "")
        )
        return "\n".join(lines)

    def markdown(self) -> str:
        """The result as Markdown (``report.md``): setup, noise, and the error table."""
        s = self.summary
        r2 = ", ".join(f"{k} {v:.3f}" for k, v in s["single_input_r2"].items())
        out = [
            f"### {s['program']}",
            "",
            f"- command: `{_short_command(s['argv'])}`",
            f"- {s['layouts']} layouts ({s['layout_set']}) of 2MB windows over the used {s['pool_used_bytes'] >> 20} MiB "
            f"of the {s['pool']} pool; H, M, C simulated with the `{s['cpu']}` preset from a whole-run trace of "
            f"{s['trace']['accesses']:,} accesses ("
            + ("the PMU was not read" if s["hardware_counters"] else "no hardware counters on this machine")
            + ")",
            f"- R: {_ESTIMATOR.get(s.get('estimator', 'median'), 'median')} process {s['metric']} time over the repetitions x {s['ghz']:.3f} GHz; runtime range "
            f"{s['R_min_s']:.3f}-{s['R_max_s']:.3f} s ({s['R_spread']:.1%} between the fastest and slowest layout)",
            f"- runtime noise: coefficient of variation per layout median {s['cov_median']:.2%}, max "
            f"{s['cov_max']:.2%} (threshold {s['cov_threshold']:.0%}; {s['reps_total']} timed runs, "
            f"{s['reps_min']}-{s['reps_max']} per layout, plus one verified warm-up each)",
            f"- same work: heap high-water mark of every timed run equals the traced run's: "
            f"{'yes' if s['high_water_match_all'] else 'NO'}",
            f"- single-input R²: {r2}",
            "",
            "| model | max error | geomean error | CV max error | CV geomean error | note |",
            "|---|---|---|---|---|---|",
        ]

        def pct(v: float) -> str:
            return "n/a" if v != v else f"{v:.2%}"

        for e in self.errors:
            out.append(
                f"| {e['model']} | {pct(e['max_error'])} | {pct(e['geomean_error'])} | {pct(e['cv_max_error'])} "
                f"| {pct(e['cv_geomean_error'])} | {e.get('note', '')} |"
            )
        v = s.get("validation_1g")
        if v and "error" in v:
            out += ["", f"1GB validation (Section VII-D): not run: {v['error']}"]
        elif v:
            out += [
                "",
                f"1GB validation (Section VII-D): the used pool on {v['pages_1g']} 1GB page(s), {v['reps']} runs in "
                f"rounds with {v['against']} (ratio {v['ratio_to_2mb']:.4f}), R {v['R_s']:.3f} s; each model's "
                "prediction from the simulated H, M, C against it: "
                + ", ".join(f"{m} {x:+.2%}" for m, x in v["errors"].items()),
            ]
        return "\n".join(out) + "\n"
