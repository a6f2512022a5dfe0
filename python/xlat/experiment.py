"""The partial-simulation experiment (``xlat experiment mosmodel``): do simulated translation
metrics predict the runtime of a real program on this machine?

For one program (a named workload or any command):

1. **trace** the whole run under QEMU with the mosaic allocator preloaded (all 4KB pages), so the
   trace's addresses are those of the allocator's pools; the allocator reports where the pools
   were (``pools.json``);
2. **profile**: simulate that trace with 4KB pages and count L2-TLB misses (walks) per 2MB region
   of the pool that takes most of them (heap or anon);
3. **layouts**: growing, random and sliding windows of 2MB pages over the used part of that pool
   (:mod:`xlat.heuristics`);
4. **simulate** the trace under every layout with the preset matching this machine, the pools at
   their traced addresses (``os.pools_at``): H (L2-TLB hits), M (misses), C (walk cycles);
5. **measure** the real program natively under every layout (``hugetlb`` mode), repeating in
   rounds until each layout's runtime coefficient of variation is below a threshold;
6. **fit** every model of :mod:`xlat.models` and report errors on the data and cross-validated,
   save the dataset, the fitted models and plots.

Runtime and simulated metrics describe the same work because both cover the whole process, from
``execve`` to exit, with the same allocator and the same environment: the trace holds every access
of the traced run, and the timed runs are that command. Start-up code is included on both sides.
The check that the native runs allocated like the traced one is the heap high-water mark the
allocator reports (``high_water_match`` in the dataset).

This machine has no hardware performance counters, so H, M and C come from the simulator and R
from timing; the report says so.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xlat.layout import MIB, Layout, Pool, parse_layout

__all__ = [
    "ExperimentError",
    "Program",
    "mosmodel_experiment",
    "programs",
]

HUGE = 2 * MIB
#: layouts the experiment builds: "quick" (growing + random + one sliding set, 27 for n=8) or "paper" (54)
LAYOUT_SETS = ("quick", "paper")


class ExperimentError(RuntimeError):
    """A problem for the user to fix; ``str(err)`` is one sentence."""


# ---- programs ----------------------------------------------------------------------------------------

NUMPY_GATHER = """\
import numpy as np
rng = np.random.default_rng(1)
table = np.arange(1 << 26, dtype=np.int64)      # 512 MiB, from the heap pool
idx = rng.integers(0, table.size, 1 << 22)      # 4M random indices
total = 0
for _ in range(8):
    total += int(table[idx].sum())              # random 8-byte loads over 512 MiB
print(total)
"""


@dataclass(frozen=True)
class Program:
    """A command to trace and time. ``argv[0]`` is looked up on PATH; ``env`` is added to the
    environment of both the traced and the timed runs."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    apt: tuple[str, ...] = ()


def _python() -> str:
    # The interpreter binary itself, never a wrapper script (pyenv shims fork under hugetlb pools).
    return os.path.realpath(sys.executable)


def programs() -> dict[str, Program]:
    """The built-in experiment programs (real programs, small enough to trace whole)."""
    pyenv = {
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    return {
        "numpy-gather": Program(
            "numpy-gather",
            (_python(), "-c", NUMPY_GATHER),
            pyenv,
            "CPython + NumPy: 8 gathers of 4M random int64 from a 512 MiB table (whole run, ~0.35G accesses)",
        ),
        "sysbench-rnd": Program(
            "sysbench-rnd",
            (
                "sysbench",
                "memory",
                "--memory-block-size=256M",
                "--memory-total-size=256M",
                "--memory-access-mode=rnd",
                "--rand-seed=1",
                "--threads=1",
                "--time=0",  # no time limit: the (slower) traced run must do the same work
                "run",
            ),
            {},
            "sysbench 1.0 memory test: 32M random 8-byte writes over a 256 MiB buffer (whole run, ~0.5G accesses)",
            ("sysbench",),
        ),
    }


def _resolve(prog: Program) -> Program:
    exe = prog.argv[0]
    found = exe if "/" in exe else shutil.which(exe)
    if not found or not os.access(found, os.X_OK):
        hint = f" (Debian package: apt-get install {' '.join(prog.apt)})" if prog.apt else ""
        raise ExperimentError(f"program '{exe}' of experiment '{prog.name}' was not found{hint}.")
    return dataclasses.replace(prog, argv=(found, *prog.argv[1:]))


# ---- steps -----------------------------------------------------------------------------------------


def _say(log: Callable[[str], None] | None, msg: str) -> None:
    if log:
        log(msg)


def _base_layout() -> Layout:
    return parse_layout('version = 1\nname = "all-4KB"\ndescription = "every pool on 4KB pages"')


def _read_map(report_dir: str, pid: int | None = None):
    """The allocator's map report (:class:`xlat.mosaic.MapFile`) in ``report_dir``: of ``pid``, or
    the only process's."""
    from xlat.mosaic import parse_map

    maps = sorted(Path(report_dir).glob("map.*"))
    if pid is not None:
        maps = [m for m in maps if m.name == f"map.{pid}"]
    if not maps:
        raise ExperimentError(
            f"the mosaic allocator wrote no report in {report_dir} (did the program start?)."
        )
    return parse_map(maps[0].read_text())


def record(prog: Program, out: Path, log=None) -> dict[str, Any]:
    """Trace the whole run of ``prog`` under the mosaic allocator (all 4KB) into ``out/trace.xlat``;
    returns and saves ``out/pools.json`` (pool starts, sizes and high-water marks of the traced run)."""
    from xlat import mosaic, tracing

    trace_path = out / "trace.xlat"
    meta_path = out / "pools.json"
    if trace_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("argv") == list(prog.argv) and meta.get("env") == prog.env:
            _say(log, f"trace: reusing {trace_path}")
            return meta
    for name in _DERIVED:  # a new trace: what was computed from the old one no longer holds
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    rep = tempfile.mkdtemp(prefix="xlat-exp-")
    try:
        env = mosaic.mosaic_env(_base_layout(), "hugetlb", report_dir=rep, base={})
        qargs: list[str] = []
        for k, v in {**prog.env, **env}.items():
            qargs += ["-E", f"{k}={v}"]
        _say(log, f"trace: {prog.name} under QEMU with the mosaic allocator (whole run) ...")
        t0 = time.perf_counter()
        summary = tracing.trace(list(prog.argv), str(trace_path), qemu_args=qargs)
        if summary["status"] != 0:
            raise ExperimentError(f"the traced run of {prog.name} exited with status {summary['status']}.")
        first = summary["processes"][0]
        pools = _read_map(rep, first["pid"]).pools
    finally:
        shutil.rmtree(rep, ignore_errors=True)
    meta = {
        "argv": list(prog.argv),
        "env": prog.env,
        "pools": pools,
        "accesses": first["accesses"],
        "trace_bytes": first["bytes"],
        "trace_seconds": round(time.perf_counter() - t0, 2),
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    _say(log, f"trace: {first['accesses']:,} accesses, {first['bytes'] / 2**20:.0f} MiB")
    return meta


#: outputs computed from the trace, stale once the trace is recorded again
_DERIVED = ("profile-4KB.json", "sim", "runs.csv")


def _cached_result(path: Path, cpu: str):
    """The simulation result saved at ``path`` if it was made with preset ``cpu``, else None."""
    from xlat.sim import SimResult

    if not path.exists():
        return None
    r = SimResult(json.loads(path.read_text()))
    return r if r.config_name == cpu else None


def _pools_at(meta: dict[str, Any]) -> list[str]:
    return [f"os.pools_at.{p}={meta['pools'][p]['start']}" for p in ("heap", "anon", "file")]


def _write_layout(layout: Layout, d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{layout.name}.toml"
    p.write_text(layout.to_toml())
    return p


def miss_profile(
    trace: Path, meta: dict[str, Any], cpu: str, out: Path, log=None
) -> tuple[str, np.ndarray, int]:
    """Walks per 2MB region of the pool with most walks (heap or anon) under 4KB pages.
    Returns (pool, profile over the pool's used regions, used bytes rounded up to 2MiB)."""
    from xlat.sim import simulate

    cached = out / "profile-4KB.json"
    r = _cached_result(cached, cpu)
    if r is None:
        lay = _write_layout(_base_layout(), out / "layouts")
        _say(log, "profile: simulating the trace with 4KB pages ...")
        r = simulate(str(trace), cpu=cpu, set=[*_pools_at(meta), "sim.miss_profile=true"], layout=str(lay))
        cached.write_text(r.to_json())
    prof = r.miss_profile or {}
    best = None
    for pool in ("heap", "anon"):
        p = meta["pools"][pool]
        used = -(-max(p["high_water"], HUGE) // HUGE) * HUGE
        m = np.zeros(used // HUGE)
        for addr, n in prof.items():
            if p["start"] <= addr < p["start"] + used:
                m[(addr - p["start"]) // HUGE] += n
        if best is None or m.sum() > best[1].sum():
            best = (pool, m, used)
    assert best is not None
    total = sum(prof.values())
    if best[1].sum() == 0:
        raise ExperimentError(
            "the program has no L2-TLB misses in its heap or anon pool, so no layout can change them."
        )
    _say(
        log,
        f"profile: {best[1].sum() / max(total, 1):.1%} of {total:,} walks fall in the {best[0]} pool "
        f"({best[2] >> 20} MiB used)",
    )
    return best


def build_layouts(
    pool: str,
    profile: np.ndarray,
    used: int,
    which: str = "quick",
    n: int = 8,
    seed: int = 0,
    xs: Sequence[float] = (0.2, 0.4, 0.6, 0.8),
) -> list[Layout]:
    """Layouts over the used part of ``pool`` (windows inside ``[0, used)``; the pool keeps its
    default size). ``quick``: growing + random + sliding at x=50%; ``paper``: the paper's set.
    Layouts with identical windows are kept once (the first name wins)."""
    from xlat import heuristics

    if which == "paper":
        lays = heuristics.paper_layouts(profile, used, pool, n, xs, seed)
    elif which == "quick":
        lays = (
            heuristics.growing_window(used, n, pool)
            + heuristics.random_window(used, n, seed, pool)
            + heuristics.sliding_window(profile, 0.5, n, pool, used)
        )
    else:
        raise ExperimentError(f"layout set {which!r} is not one of {', '.join(LAYOUT_SETS)}.")
    full = _base_layout().pool(pool).size
    out, seen = [], set()
    for lay in lays:
        p = lay.pool(pool)
        if p.windows in seen:
            continue
        seen.add(p.windows)
        out.append(dataclasses.replace(lay, **{pool: Pool(pool, full, p.windows)}))
    return out


def simulate_layouts(
    trace: Path,
    meta: dict[str, Any],
    layouts: list[Layout],
    cpu: str,
    out: Path,
    threads: int | None = None,
    log=None,
) -> dict[str, dict[str, float]]:
    """H, M, C (and a few more metrics) of every layout; writes the layouts to ``out/layouts/``;
    results cached in ``out/sim/NAME.json`` and reused when made with the same preset."""
    from xlat.sim import Run, simulate_many

    paths = {lay.name: _write_layout(lay, out / "layouts") for lay in layouts}
    d = out / "sim"
    d.mkdir(parents=True, exist_ok=True)
    cached = {lay.name: _cached_result(d / f"{lay.name}.json", cpu) for lay in layouts}
    todo = [lay for lay in layouts if cached[lay.name] is None]
    if todo:
        _say(log, f"simulate: {len(todo)} layouts ({cpu} preset, pools at their traced addresses) ...")
        runs = [Run(cpu=cpu, set=tuple(_pools_at(meta)), layout=str(paths[lay.name])) for lay in todo]
        t0 = time.perf_counter()
        for lay, r in zip(todo, simulate_many(str(trace), runs, threads=threads), strict=True):
            (d / f"{lay.name}.json").write_text(r.to_json())
            cached[lay.name] = r
        _say(log, f"simulate: {time.perf_counter() - t0:.0f} s")
    res = {}
    for lay in layouts:
        r = cached[lay.name]
        c, dv = r.counters, r.derived
        res[lay.name] = {
            "H": dv["H"],
            "M": dv["M"],
            "C": dv["C"],
            "walks_pki": dv["walks_pki"],
            "instructions": c["instructions"],
            "accesses": c["accesses"],
            "faults_4k": c["os.faults_4k"],
            "faults_2m": c["os.faults_2m"],
            "huge_fallbacks": c["os.huge_fallbacks"],
        }
    return res


def _run_once(prog: Program, layout: Layout, verify: bool) -> dict[str, Any]:
    from xlat import mosaic

    rep = tempfile.mkdtemp(prefix="xlat-exp-")
    try:
        env = mosaic.mosaic_env(layout, "hugetlb", report_dir=rep)
        env.update(prog.env)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(list(prog.argv), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip().splitlines()
            raise ExperimentError(
                f"{prog.name} exited with status {proc.returncode} under layout {layout.name}"
                + (f": {err[-1]}" if err else ".")
            )
        report = _read_map(rep)
        pools = report.pools
        honoured = not verify or mosaic.verify_report(rep, report.pid, layout, "hugetlb").honoured
    finally:
        shutil.rmtree(rep, ignore_errors=True)
    return {
        "wall": wall,
        "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime,
        "high_water": {p: v["high_water"] for p, v in pools.items()},
        "fallback_bytes": sum(v["fallback_bytes"] for v in pools.values()),
        "honoured": honoured,
    }


def _cov(x: Sequence[float]) -> float:
    a = np.asarray(x, dtype=float)
    return float(a.std(ddof=1) / a.mean()) if len(a) > 1 and a.mean() > 0 else float("inf")


#: what R can be: CPU time (user + sys), wall time, or user time
RUNTIME_METRICS = ("cpu", "wall", "user")


def _check_timing(metric: str, min_reps: int, max_reps: int) -> None:
    if metric not in RUNTIME_METRICS:
        raise ExperimentError(f"runtime metric {metric!r} is not one of {', '.join(RUNTIME_METRICS)}.")
    if not 2 <= min_reps <= max_reps:
        raise ExperimentError(f"repetitions must satisfy 2 <= min ({min_reps}) <= max ({max_reps}).")


RUNS_FIELDS = [
    "layout",
    "rep",
    "wall",
    "user",
    "sys",
    "cpu",
    "heap_high_water",
    "anon_high_water",
    "fallback_bytes",
    "honoured",
]


def measure(
    prog: Program,
    layouts: list[Layout],
    out: Path,
    metric: str = "cpu",
    cov: float = 0.01,
    min_reps: int = 3,
    max_reps: int = 10,
    log=None,
) -> dict[str, list[float]]:
    """Time ``prog`` under every layout in rounds (one run of every unfinished layout per round,
    so slow drifts of the machine spread over all layouts) until each layout has ``min_reps`` runs
    and a coefficient of variation of ``metric`` below ``cov``, or ``max_reps`` runs. Every run is
    appended to ``out/runs.csv`` (runs already there are reused). Each layout first gets an
    untimed warm-up run (``rep = warmup``) whose pages are verified against /proc/PID/smaps."""
    _check_timing(metric, min_reps, max_reps)
    path = out / "runs.csv"
    runs: dict[str, list[dict[str, Any]]] = {lay.name: [] for lay in layouts}
    warmed: set[str] = set()
    if path.exists():
        with path.open() as f:
            for row in csv.DictReader(f):
                if row["rep"] == "warmup":
                    warmed.add(row["layout"])
                elif row["layout"] in runs:
                    runs[row["layout"]].append(row)
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, RUNS_FIELDS)
        if new:
            w.writeheader()
        for rnd in range(max_reps):
            pending = [
                lay
                for lay in layouts
                if len(runs[lay.name]) < min_reps
                or (len(runs[lay.name]) < max_reps and _cov([float(r[metric]) for r in runs[lay.name]]) > cov)
            ]
            if not pending:
                break
            _say(log, f"measure: round {rnd + 1}, {len(pending)} layouts ...")
            for lay in pending:
                if lay.name not in warmed:
                    # An untimed first run, checked against smaps (which the check makes it write).
                    r = _run_once(prog, lay, verify=True)
                    if not r["honoured"]:
                        raise ExperimentError(
                            f"layout {lay.name} was not honoured (a window did not get its huge pages); "
                            "see `xlat run --verify`."
                        )
                    w.writerow(_row(lay.name, "warmup", r))
                    warmed.add(lay.name)
                r = _run_once(prog, lay, verify=False)
                row = _row(lay.name, str(len(runs[lay.name])), r)
                w.writerow(row)
                f.flush()
                runs[lay.name].append(row)
    return {name: [float(r[metric]) for r in rs] for name, rs in runs.items()}


def _row(layout: str, rep: str, r: dict[str, Any]) -> dict[str, Any]:
    return {
        "layout": layout,
        "rep": rep,
        "wall": f"{r['wall']:.6f}",
        "user": f"{r['user']:.6f}",
        "sys": f"{r['sys']:.6f}",
        "cpu": f"{r['user'] + r['sys']:.6f}",
        "heap_high_water": r["high_water"]["heap"],
        "anon_high_water": r["high_water"]["anon"],
        "fallback_bytes": r["fallback_bytes"],
        "honoured": int(r["honoured"]),
    }


def hardware_counters() -> bool:
    """Whether this machine exposes a CPU PMU to perf (``/sys/bus/event_source/devices/cpu*``).
    A VM without one (this project's machines) has only software events."""
    d = Path("/sys/bus/event_source/devices")
    return d.is_dir() and any(p.name.startswith("cpu") for p in d.iterdir())


def cpu_ghz() -> float:
    """The clock this machine reports (first ``cpu MHz`` of /proc/cpuinfo), in GHz."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":")[1]) / 1000
    except OSError:
        pass
    raise ExperimentError("/proc/cpuinfo gives no clock rate; pass --ghz.")


# ---- fits and report ---------------------------------------------------------------------------------


def fit_models(df, folds: int = 5, seed: int = 0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Fit every model on (H, M, C) -> R_cycles; returns (fitted models, one error row per model)."""
    from sklearn.exceptions import ConvergenceWarning

    from xlat import models

    X = df[["H", "M", "C"]].to_numpy(float)
    y = df["R_cycles"].to_numpy(float)
    k = min(folds, len(df))
    fitted, rows = {}, []
    for name, model in models.prior_models().items():
        row: dict[str, Any] = {"model": name}
        try:
            with warnings.catch_warnings(record=True) as caught:
                # Lasso may stop short of its tolerance on a few folds; say so, do not fail.
                warnings.simplefilter("always", ConvergenceWarning)
                row.update(_fit_one(name, model, X, y, k, seed, fitted))
            if any(issubclass(w.category, ConvergenceWarning) for w in caught):
                row["note"] = (
                    row.get("note", "") + "; Lasso stopped before its tolerance in some fits"
                ).lstrip("; ")
        except ValueError as e:
            row.update(
                max_error=float("nan"),
                geomean_error=float("nan"),
                cv_max_error=float("nan"),
                cv_geomean_error=float("nan"),
                note=str(e),
            )
        rows.append(row)
    return fitted, rows


def _fit_one(name: str, model: Any, X: np.ndarray, y: np.ndarray, k: int, seed: int, fitted: dict) -> dict:
    from xlat import models

    m = model.fit(X, y)
    pred = m.predict(X)
    row = {"max_error": models.max_error(y, pred), "geomean_error": models.geomean_error(y, pred)}
    cv = models.cross_val_errors(model, X, y, k=k, seed=seed) if k >= 2 else {}
    row.update(cv_max_error=cv.get("max", float("nan")), cv_geomean_error=cv.get("geomean", float("nan")))
    if name == "mosmodel":
        row["note"] = f"{m.n_nonzero_} of {len(m.coef_)} terms"
    fitted[name] = m
    return row


def plot(df, fitted: dict[str, Any], path: Path, title: str) -> None:
    """Runtime against walk cycles, one panel per model: measured points and the model's
    prediction at every layout (joined in order of C), like Figures 3 and 10 of seeds/002."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
            f"{s['program']}: {s['layouts']} layouts, R = {s['estimator']} process {s['metric']} time x {s['ghz']:.3f} GHz; "
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
        lines.append("")
        lines.append(
            f"saved in {self.out}: dataset.csv, runs.csv, errors.csv, models.pkl, summary.json, report.md, "
            "runtime_vs_walk_cycles.png"
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
            f"- R: {s.get('estimator', 'median')} process {s['metric']} time over the repetitions x {s['ghz']:.3f} GHz; runtime range "
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
        return "\n".join(out) + "\n"


def mosmodel_experiment(
    program: str | Program,
    out: str | Path,
    *,
    cpu: str = "zen4",
    layouts: str = "quick",
    n: int = 8,
    seed: int = 0,
    cov: float = 0.01,
    min_reps: int = 3,
    max_reps: int = 10,
    metric: str = "cpu",
    estimator: str = "median",
    ghz: float | None = None,
    folds: int = 5,
    threads: int | None = None,
    reserve: bool = False,
    simulate_only: bool = False,
    log: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run the whole experiment for ``program`` (a name of :func:`programs` or a :class:`Program`)
    into directory ``out``; steps whose outputs exist there are reused (delete ``out`` to redo)."""
    import pandas as pd

    from xlat import models, mosaic

    if isinstance(program, str):
        table = programs()
        if program not in table:
            raise ExperimentError(
                f"unknown experiment program {program!r}; choose one of {', '.join(table)}."
            )
        program = table[program]
    if n < 1:
        raise ExperimentError(f"n = {n} must be at least 1.")
    if not 0 < cov < 1:
        raise ExperimentError(f"the CoV threshold {cov} must be between 0 and 1.")
    if estimator not in ("median", "min"):
        raise ExperimentError(f"estimator {estimator!r} is not median or min.")
    _check_timing(metric, min_reps, max_reps)
    if folds < 2:
        raise ExperimentError(f"cross-validation needs at least 2 folds, not {folds}.")
    pick = np.median if estimator == "median" else np.min
    prog = _resolve(program)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    freq = ghz if ghz is not None else cpu_ghz()
    meta = record(prog, out, log)
    trace = out / "trace.xlat"
    pool, profile, used = miss_profile(trace, meta, cpu, out, log)
    np.savetxt(out / "miss_profile.csv", profile, fmt="%d", header=f"walks per 2MB region of the {pool} pool")
    lays = build_layouts(pool, profile, used, layouts, n, seed)
    sims = simulate_layouts(trace, meta, lays, cpu, out, threads, log)
    if simulate_only:
        df = pd.DataFrame([{"layout": lay.name, **sims[lay.name]} for lay in lays])
        df.to_csv(out / "simulated.csv", index=False)
        return ExperimentResult(out, df, [], {}, {"program": prog.name, "simulate_only": True, "cpu": cpu})

    need = max(lay.huge_pages_needed()["2MB"] for lay in lays)
    added = 0
    have = mosaic.status().get("2MB", {}).get("available", 0)
    if need > have:
        if not reserve:
            raise ExperimentError(
                f"the layouts need {need} free 2MB huge pages but {have} are available; run "
                f"`xlat hugepages reserve {need - have}` (as root) or pass --reserve-huge-pages."
            )
        _say(log, f"measure: reserving {need - have} 2MB huge pages")
        try:
            added = mosaic.reserve(need - have, "2MB")
        except mosaic.MosaicError as e:
            raise ExperimentError(str(e)) from None
    try:
        times = measure(prog, lays, out, metric, cov, min_reps, max_reps, log)
    finally:
        if added:
            mosaic.release(added, "2MB")

    runs = pd.read_csv(out / "runs.csv")
    traced_hw = meta["pools"][pool]["high_water"]
    rows = []
    for lay in lays:
        t = np.asarray(times[lay.name])
        hw = runs.loc[runs["layout"] == lay.name, f"{pool}_high_water"]
        win = lay.pool(pool).windows
        rows.append(
            {
                "layout": lay.name,
                "window_offset": win[0].offset if win else 0,
                "window_length": win[0].length if win else 0,
                **sims[lay.name],
                "R_s": float(pick(t)),
                "R_median_s": float(np.median(t)),
                "R_min_s": float(t.min()),
                "R_mean_s": float(t.mean()),
                "R_std_s": float(t.std(ddof=1)),
                "R_cov": _cov(t),
                "reps": len(t),
                "R_cycles": float(pick(t)) * freq * 1e9,
                "R_std_cycles": float(t.std(ddof=1)) * freq * 1e9,
                "high_water_match": bool((hw == traced_hw).all()),
            }
        )
    df = pd.DataFrame(rows)
    df.to_csv(out / "dataset.csv", index=False)
    try:
        df.to_parquet(out / "dataset.parquet", index=False)
    except ImportError:
        pass  # no pyarrow/fastparquet: CSV only
    fitted, errors = fit_models(df, folds, seed)
    with (out / "errors.csv").open("w", newline="") as f:
        w = csv.DictWriter(
            f, ["model", "max_error", "geomean_error", "cv_max_error", "cv_geomean_error", "note"]
        )
        w.writeheader()
        w.writerows(errors)
    with (out / "models.pkl").open("wb") as f:
        pickle.dump(fitted, f)
    plot(
        df,
        fitted,
        out / "runtime_vs_walk_cycles.png",
        f"{prog.name}: runtime vs simulated walk cycles ({len(df)} layouts, {cpu} preset)",
    )
    X = df[["H", "M", "C"]].to_numpy(float)
    summary = {
        "program": prog.name,
        "argv": list(prog.argv),
        "cpu": cpu,
        "pool": pool,
        "pool_used_bytes": used,
        "layouts": len(df),
        "layout_set": layouts,
        "metric": metric,
        "estimator": estimator,
        "ghz": freq,
        # H, M, C always come from the simulator; a PMU, when present, is reported but not read
        # (STLB and walk-cycle events differ per vendor and could not be tested on a machine without one).
        "hardware_counters": hardware_counters(),
        "hmc_source": "simulator",
        "same_work": "whole run traced and timed (execve to exit), same allocator and environment",
        "high_water_match_all": bool(df["high_water_match"].all()),
        "cov_threshold": cov,
        "cov_median": float(df["R_cov"].median()),
        "cov_max": float(df["R_cov"].max()),
        "reps_total": int(df["reps"].sum()),
        "reps_min": int(df["reps"].min()),
        "reps_max": int(df["reps"].max()),
        "R_min_s": float(df["R_s"].min()),
        "R_max_s": float(df["R_s"].max()),
        "R_spread": float(df["R_s"].max() / df["R_s"].min() - 1),
        "single_input_r2": models.single_input_r2(X, df["R_cycles"].to_numpy(float)),
        "trace": {k: meta[k] for k in ("accesses", "trace_bytes", "trace_seconds")},
        "errors": errors,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    res = ExperimentResult(out, df, errors, fitted, summary)
    (out / "report.md").write_text(res.markdown())
    return res


# ---- command line ------------------------------------------------------------------------------------


def _cmd_mosmodel(args) -> int:
    from xlat.mosaic import MosaicError
    from xlat.tracing import TracingError

    try:
        res = _mosmodel_from_args(args)
    except (ExperimentError, TracingError, MosaicError) as e:
        print(f"xlat: error: {e}", file=sys.stderr)
        return 1
    print(res.format())
    return 0


def _mosmodel_from_args(args) -> ExperimentResult:
    if args.command:
        cmd = args.command[1:] if args.command[0] == "--" else args.command
        if not cmd:
            raise ExperimentError("no program was given after --.")
        prog: str | Program = Program(args.workload or Path(cmd[0]).name, tuple(cmd))
    elif args.workload:
        prog = args.workload
    else:
        raise ExperimentError(
            f"name a program with --workload ({', '.join(programs())}) or give a command after --."
        )
    name = prog if isinstance(prog, str) else prog.name
    out = Path(args.out or f"out/experiment/{name}")

    def log(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    return mosmodel_experiment(
        prog,
        out,
        cpu=args.cpu,
        layouts=args.layouts,
        n=args.n,
        seed=args.seed,
        cov=args.cov,
        min_reps=args.min_reps,
        max_reps=args.max_reps,
        metric=args.runtime,
        estimator=args.estimator,
        ghz=args.ghz,
        folds=args.folds,
        threads=args.threads,
        reserve=args.reserve_huge_pages,
        simulate_only=args.simulate_only,
        log=log,
    )


def register_cli(sub: Any) -> None:
    """Add ``experiment mosmodel`` to the ``xlat`` subcommands."""
    e = sub.add_parser(
        "experiment",
        help="experiments that check simulated metrics against real runs",
        description="Experiments that check the simulator's metrics against real runs on this machine.",
    )
    esub = e.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    s = esub.add_parser(
        "mosmodel",
        help="fit the runtime models to real runs of a program under many mosaic layouts",
        description="Trace PROGRAM's whole run under the mosaic allocator, build layouts of 2MB windows "
        "(growing, random, sliding) from its simulated L2-TLB miss profile, simulate every layout (H, M, C), "
        "time the real program under every layout until the runtime's CoV is below --cov, fit Basu, "
        "Gandhi, Pham, Alam, Yaniv, poly1-3 and Mosmodel, and report their errors. Outputs (trace, "
        "layouts, simulation results, runs.csv, dataset.csv, errors.csv, models.pkl, summary.json, "
        "runtime_vs_walk_cycles.png) go to --out; steps whose outputs exist there are reused.",
        epilog="example: xlat experiment mosmodel --workload numpy-gather --reserve-huge-pages\n"
        "         xlat experiment mosmodel --workload mine --out out/mine -- ./my-program ARGS",
    )
    s.add_argument(
        "--workload",
        metavar="NAME",
        help=f"built-in program ({', '.join(programs())}), or the name of the command after --",
    )
    s.add_argument("--out", help="output directory (default out/experiment/NAME)")
    s.add_argument("--cpu", default="zen4", help="simulator preset matching this machine (default zen4)")
    s.add_argument(
        "--layouts",
        choices=LAYOUT_SETS,
        default="quick",
        help="quick: growing + random + sliding at 50%% (27 for n=8); paper: the paper's 54",
    )
    s.add_argument("-n", type=int, default=8, help="steps of each heuristic (default 8)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random-window layouts and the CV folds")
    s.add_argument(
        "--cov", type=float, default=0.01, help="runtime CoV each layout must reach (default 0.01)"
    )
    s.add_argument("--min-reps", type=int, default=3, help="runs per layout at least (default 3)")
    s.add_argument("--max-reps", type=int, default=10, help="runs per layout at most (default 10)")
    s.add_argument(
        "--runtime",
        choices=RUNTIME_METRICS,
        default="cpu",
        help="runtime measure: the process's user+sys CPU time (default; robust on a shared "
        "machine), wall-clock time, or user time only (leaves out the kernel's page-fault work, "
        "which the simulated H, M, C do not describe)",
    )
    s.add_argument(
        "--estimator",
        choices=("median", "min"),
        default="median",
        help="R of a layout from its repetitions: the median (default) or the minimum (the usual estimate "
        "when noise only ever adds time, as other jobs on a shared machine do)",
    )
    s.add_argument("--ghz", type=float, help="clock to turn seconds into cycles (default: /proc/cpuinfo)")
    s.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    s.add_argument("--threads", type=int, help="simulation threads (default: all cores)")
    s.add_argument(
        "--reserve-huge-pages",
        action="store_true",
        help="reserve the 2MB huge pages the layouts need, and release them afterwards",
    )
    s.add_argument(
        "--simulate-only",
        action="store_true",
        help="stop after simulating the layouts (H, M, C per layout in simulated.csv); no real runs",
    )
    s.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    s.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS (instead of a built-in)")
    s.set_defaults(func=_cmd_mosmodel)
