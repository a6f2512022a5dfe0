"""Step 5: the measured side. The real program, run natively under every layout (hugetlb mode) in
rounds until each layout's runtime varies little enough; and what this machine offers to time it
(its clock, whether it has a PMU)."""

from __future__ import annotations

import csv
import resource
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlat.experiment.common import ExperimentError, read_map, say
from xlat.experiment.program import Program
from xlat.experiment.recording import ALLOCATOR
from xlat.layout import Layout

if TYPE_CHECKING:
    import numpy as np


def prefault_env(traced_pools: dict[str, dict[str, int]]) -> dict[str, str]:
    """``XLAT_MOSAIC_PREFAULT`` for the timed runs: the part of the heap and anon pools the traced
    run used (its high-water marks), populated at start-up so that first-touch page faults fall in
    the allocator's start-up, which the ``work`` runtime leaves out."""
    return {
        "XLAT_MOSAIC_PREFAULT": f"{traced_pools['heap']['high_water']} {traced_pools['anon']['high_water']}"
    }


def _run_once(prog: Program, layout: Layout, verify: bool, extra_env: dict[str, str]) -> dict[str, Any]:
    from xlat import mosaic

    rep = tempfile.mkdtemp(prefix="xlat-exp-")
    try:
        env = mosaic.mosaic_env(layout, "hugetlb", report_dir=rep, **ALLOCATOR)
        env.update(extra_env)
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
        report = read_map(rep)
        pools = report.pools
        if report.cpu_ns is None or report.cpu_start_ns is None or report.minflt is None:
            raise ExperimentError(f"{prog.name} left no exit report under layout {layout.name}.")
        honoured = not verify or mosaic.verify_report(rep, report.pid, layout, "hugetlb").honoured
    finally:
        shutil.rmtree(rep, ignore_errors=True)
    return {
        "wall": wall,
        "user": after.ru_utime - before.ru_utime,
        "sys": after.ru_stime - before.ru_stime,
        "work": (report.cpu_ns - report.cpu_start_ns) / 1e9,
        "work_faults": report.minflt - report.minflt_start,
        "high_water": {p: v["high_water"] for p, v in pools.items()},
        "fallback_bytes": sum(v["fallback_bytes"] for v in pools.values()),
        "honoured": honoured,
    }


def cov_of(x: Sequence[float]) -> float:
    import numpy as np

    a = np.asarray(x, dtype=float)
    return float(a.std(ddof=1) / a.mean()) if len(a) > 1 and a.mean() > 0 else float("inf")


#: what R can be: the program's CPU time after the allocator's start-up ("work"), CPU time
#: (user + sys), wall time, or user time
RUNTIME_METRICS = ("work", "cpu", "wall", "user")


def check_timing(metric: str, min_reps: int, max_reps: int) -> None:
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
    "work",
    "work_faults",
    "heap_high_water",
    "anon_high_water",
    "fallback_bytes",
    "honoured",
]


def measure(
    prog: Program,
    layouts: list[Layout],
    out: Path,
    metric: str = "work",
    cov: float = 0.01,
    min_reps: int = 3,
    max_reps: int = 10,
    log=None,
    extra_env: dict[str, str] | None = None,
    seed: int = 0,
    runs_file: str = "runs.csv",
) -> dict[str, list[float]]:
    """Time ``prog`` under every layout in rounds (one run of every unfinished layout per round,
    in an order drawn afresh each round from ``seed``, so that slow drifts of the machine spread
    over all layouts and no layout always runs next to the same ones) until each layout has ``min_reps`` runs
    and a coefficient of variation of ``metric`` below ``cov``, or ``max_reps`` runs. Every run is
    appended to ``out/runs.csv`` (or ``runs_file``; runs already there are reused). Each layout first gets an
    untimed warm-up run (``rep = warmup``) whose pages are verified against /proc/PID/smaps.
    Every run keeps freed memory populated (``keep_freed``, as the traced run did) and gets
    ``extra_env`` (:func:`prefault_env`)."""
    import numpy as np

    check_timing(metric, min_reps, max_reps)
    rng = np.random.default_rng(seed)
    path = out / runs_file
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
                or (
                    len(runs[lay.name]) < max_reps
                    and cov_of([float(r[metric]) for r in runs[lay.name]]) > cov
                )
            ]
            if not pending:
                break
            say(log, f"measure: round {rnd + 1}, {len(pending)} layouts ...")
            for i in rng.permutation(len(pending)):
                lay = pending[i]
                if lay.name not in warmed:
                    # An untimed first run, checked against smaps (which the check makes it write).
                    r = _run_once(prog, lay, True, extra_env or {})
                    if not r["honoured"]:
                        raise ExperimentError(
                            f"layout {lay.name} was not honoured (a window did not get its huge pages); "
                            "see `xlat run --verify`."
                        )
                    w.writerow(_row(lay.name, "warmup", r))
                    warmed.add(lay.name)
                r = _run_once(prog, lay, False, extra_env or {})
                row = _row(lay.name, str(len(runs[lay.name])), r)
                w.writerow(row)
                f.flush()
                runs[lay.name].append(row)
    return {name: [float(r[metric]) for r in rs] for name, rs in runs.items()}


#: how R of a layout is taken from its runs: their median, their minimum, or the median of the
#: runs with the machine's drift divided out (:func:`drift_corrected`)
ESTIMATORS = ("median", "min", "drift")

#: neighbours on each side that estimate the machine's speed at a run (``drift_corrected``)
DRIFT_NEIGHBOURS = 2


def drift_corrected(
    layouts: Sequence[str], values: Sequence[float], k: int = DRIFT_NEIGHBOURS, iterations: int = 10
) -> np.ndarray:
    """Runtimes with the machine's slow drift divided out.  ``layouts`` and ``values`` are the
    timed runs in the order they ran (runs.csv without the warm-ups).  A run's drift is the median,
    over the ``k`` runs before it and the ``k`` after it (runs of other layouts: :func:`measure`
    goes round all layouts), of how far each of those runs was from its own layout's median, in
    log space; the run is divided by it.  The layout medians are then taken again from the corrected
    runs and the drift re-estimated, ``iterations`` times (a median polish of layout x time).  A
    run's own value never enters its drift.  This removes what consecutive runs share (the host's
    speed, which on this project's VMs moves by several percent over a few seconds) and keeps
    what is the run's own."""
    import numpy as np

    lay = np.asarray(layouts)
    x = np.log(np.asarray(values, dtype=float))
    n = len(x)
    if n < 2 or k < 1:
        return np.exp(x)  # no neighbours to estimate a drift from
    names, idx = np.unique(lay, return_inverse=True)
    t = np.zeros(n)
    for _ in range(iterations):
        y = x - t
        med = np.array([np.median(y[idx == j]) for j in range(len(names))])
        r = x - med[idx]
        t = np.array([np.median(np.r_[r[max(0, i - k) : i], r[i + 1 : i + 1 + k]]) for i in range(n)])
    return np.exp(x - t)


def _row(layout: str, rep: str, r: dict[str, Any]) -> dict[str, Any]:
    return {
        "layout": layout,
        "rep": rep,
        "wall": f"{r['wall']:.6f}",
        "user": f"{r['user']:.6f}",
        "sys": f"{r['sys']:.6f}",
        "cpu": f"{r['user'] + r['sys']:.6f}",
        "work": f"{r['work']:.6f}",
        "work_faults": r["work_faults"],
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


#: (vendor, CPU family) -> {model: preset}; model None: every model of the family. The preset of
#: the nearest core in docs/presets.md: Ivy Bridge's TLBs are Sandy Bridge's (Agbarya et al.
#: 2020, Table 4), Cascade Lake's are Skylake's, Emerald Rapids' (Raptor Cove) Sapphire Rapids'
#: (Golden Cove), and family 19h (Zen 3 and Zen 4) is Zen 4's.
_HOST_PRESETS: dict[tuple[str, int], dict[int | None, str]] = {
    ("GenuineIntel", 6): {
        **dict.fromkeys((42, 45, 58, 62), "sandybridge"),
        **dict.fromkeys((60, 63, 69, 70), "haswell"),
        **dict.fromkeys((61, 71, 79, 86), "broadwell"),
        **dict.fromkeys((78, 85, 94), "skylake"),
        **dict.fromkeys((143, 207), "sapphirerapids"),
    },
    ("AuthenticAMD", 25): {None: "zen4"},
}


def host_preset(cpuinfo: str | None = None) -> tuple[str | None, str]:
    """The simulator preset of this machine's core (None when no preset is near) and the host as
    /proc/cpuinfo (or the text ``cpuinfo``) names it: vendor, family, model, model name."""
    info: dict[str, str] = {}
    try:
        text = Path("/proc/cpuinfo").read_text() if cpuinfo is None else cpuinfo
        for line in text.splitlines():
            if not line.strip():
                break  # the first processor is enough
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    except OSError:
        return None, "unknown (no /proc/cpuinfo)"
    vendor = info.get("vendor_id", "?")
    try:
        family, model = int(info.get("cpu family", "-1")), int(info.get("model", "-1"))
    except ValueError:
        family, model = -1, -1
    host = f"{vendor} family {family} model {model} ({info.get('model name', '?')})"
    table = _HOST_PRESETS.get((vendor, family), {})
    return table.get(model, table.get(None)), host
