"""The whole experiment, step after step: :func:`mosmodel_experiment`."""

from __future__ import annotations

import csv
import json
import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np

from xlat.experiment.common import ExperimentError, say
from xlat.experiment.fitting import fit_models
from xlat.experiment.layouts import build_layouts
from xlat.experiment.program import Program, programs, resolve
from xlat.experiment.recording import record
from xlat.experiment.report import ExperimentResult, plot
from xlat.experiment.simulation import miss_profile, simulate_layouts
from xlat.experiment.timing import (
    ESTIMATORS,
    check_timing,
    cov_of,
    cpu_ghz,
    drift_corrected,
    hardware_counters,
    measure,
    prefault_env,
)


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
    metric: str = "work",
    estimator: str = "median",
    ghz: float | None = None,
    folds: int = 5,
    threads: int | None = None,
    reserve: bool = False,
    simulate_only: bool = False,
    validate_1g: bool = False,
    log: Callable[[str], None] | None = None,
) -> ExperimentResult:
    """Run the whole experiment for ``program`` (a name of :func:`programs` or a :class:`Program`)
    into directory ``out``; steps whose outputs exist there are reused (delete ``out`` to redo).
    ``validate_1g``: also predict the used pool on 1GB pages with every fitted model and time it
    (:mod:`xlat.experiment.validation`; the summary's ``validation_1g``, or the sentence saying
    why it could not be run)."""
    from xlat._optional import need_pandas

    pd = need_pandas("mosmodel_experiment()")

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
    if estimator not in ESTIMATORS:
        raise ExperimentError(f"estimator {estimator!r} is not one of {', '.join(ESTIMATORS)}.")
    check_timing(metric, min_reps, max_reps)
    if folds < 2:
        raise ExperimentError(f"cross-validation needs at least 2 folds, not {folds}.")
    pick = np.min if estimator == "min" else np.median
    prog = resolve(program)
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
    if reserve:
        # Pages of its own, even when enough are free: free pages another experiment reserved
        # (idle between its runs) would otherwise be counted here, and each would take the
        # other's from under it in the middle of its rounds.
        say(log, f"measure: reserving {need} 2MB huge pages")
        try:
            added = mosaic.reserve(need, "2MB")
        except mosaic.MosaicError as e:
            if need > have:
                raise ExperimentError(str(e)) from None
    elif need > have:
        raise ExperimentError(
            f"the layouts need {need} free 2MB huge pages but {have} are available; run "
            f"`xlat hugepages reserve {need - have}` (as root) or pass --reserve-huge-pages."
        )
    try:
        times = measure(
            prog, lays, out, metric, cov, min_reps, max_reps, log, prefault_env(meta["pools"]), seed
        )
    finally:
        if added:
            mosaic.release(added, "2MB")

    runs = pd.read_csv(out / "runs.csv")
    if estimator == "drift":
        timed = runs[(runs["rep"].astype(str) != "warmup") & runs["layout"].isin(list(times))]
        fixed = drift_corrected(timed["layout"].to_numpy(), timed[metric].to_numpy(float))
        times = {name: list(fixed[(timed["layout"] == name).to_numpy()]) for name in times}
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
                "R_cov": cov_of(t),
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
    validation = None
    if validate_1g:
        from xlat.experiment.validation import validate_1g as run_validation

        try:
            validation = run_validation(
                prog, trace, meta, pool, used, lays, df, fitted, cpu, out, metric=metric, reps=min_reps,
                freq=freq, seed=seed, threads=threads, reserve_2m=reserve, log=log,
            )  # fmt: skip
        except ExperimentError as e:
            validation = {"error": str(e)}
            say(log, f"validate: not run: {e}")
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
        **({"validation_1g": validation} if validation is not None else {}),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=float))
    res = ExperimentResult(out, df, errors, fitted, summary)
    (out / "report.md").write_text(res.markdown())
    return res
