"""Calibrating the overlap time model against real runs (``xlat experiment calibrate``).

The inputs are Mosmodel experiment directories (``xlat experiment mosmodel``): a program's whole
trace under the mosaic allocator, its layouts, and its measured runtime R under every layout. Each
layout is simulated again with the data through the caches and the overlap model on
(``docs/time-model.md``), once, with a grid of the model's free parameters (base CPI, the
dependent fraction ``dep``, the hidden cycles ``hide``, walkers, ``walk_scale``, ``walk_extra``)
evaluated on the same events. Each program's ``dep`` is fitted on its reference pair (the
all-4KB and all-2MB runs); the machine's setting (the rest) is the one whose errors on the fit
programs' other layouts are smallest (maximal, then mean). Held-out programs get that setting and
their own ``dep``, and their errors are reported beside the same without any run of the program,
the additive model, Yaniv's and Mosmodel's (:func:`calibrate`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xlat.experiment.common import ExperimentError, say
from xlat.experiment.simulation import pools_at

#: The default grid: base CPI x dependent fraction (hide 0: Eyerman et al.'s isolated-miss
#: penalty, the whole latency).
CPI_GRID = (0.3, 0.45, 0.6, 0.8, 1.0, 1.3)
DEP_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
HIDE_GRID = (0.0,)


@dataclass(frozen=True)
class Params:
    """One setting of the overlap model's free parameters."""

    cpi: float
    dep: float
    hide: float = 0.0
    walkers: int | None = None
    walk_scale: float = 1.0
    walk_extra: float = 0.0

    def sets(self) -> list[str]:
        """The ``--set`` overrides that select it (with the overlap model and the data caches)."""
        return [
            "sim.data_through_caches=true",
            "time.model=overlap",
            f"sim.base_cpi={self.cpi}",
            f"time.dep={self.dep}",
            f"time.hide={self.hide}",
            f"time.walk_scale={self.walk_scale}",
            f"time.walk_extra={self.walk_extra}",
            *([f"time.walkers={self.walkers}"] if self.walkers is not None else []),
        ]


def grid(
    cpis=CPI_GRID, deps=DEP_GRID, hides=HIDE_GRID, walkers=(None,), scales=(1.0,), extras=(0.0,)
) -> list[Params]:
    return [Params(*p) for p in itertools.product(cpis, deps, hides, walkers, scales, extras)]


@dataclass
class Experiment:
    """A Mosmodel experiment directory: its trace, pools, layouts and measured runtimes."""

    name: str
    path: Path
    meta: dict[str, Any]
    #: layout name -> (layout file, measured R in seconds, window length in bytes)
    layouts: dict[str, tuple[Path, float, int]]
    #: ``dataset.csv``: every layout's H, M, C and R
    dataset: Any

    @property
    def base(self) -> str:
        """The all-4KB layout (the window of length 0)."""
        for n, (_, _, w) in self.layouts.items():
            if w == 0:
                return n
        raise ExperimentError(f"experiment {self.path} has no all-4KB layout (window length 0).")


def four_layouts(exp: Experiment) -> list[str]:
    """All-4KB, all-2MB (the largest window) and two mixed layouts: the growing window nearest
    half of it, and the middle sliding window (the issue's "all-4KB, all-2MB and two mixed");
    fewer when the experiment has fewer."""
    by_w = sorted(exp.layouts, key=lambda n: (exp.layouts[n][2], n))
    full = by_w[-1]
    half = exp.layouts[full][2] / 2
    mixed = [n for n in by_w if n not in (exp.base, full)]
    out = [exp.base, full]
    grow = [n for n in mixed if n.startswith("growing")] or mixed
    if grow:
        out.append(min(grow, key=lambda n: abs(exp.layouts[n][2] - half)))
    slide = [n for n in mixed if n.startswith("sliding") and n not in out] or [
        n for n in mixed if n not in out
    ]
    if slide:
        out.append(slide[len(slide) // 2])
    return out


def load_experiment(path: str | Path) -> Experiment:
    from xlat._optional import need_pandas

    pd = need_pandas("load_experiment()")

    p = Path(path)
    need = [p / "trace.xlat", p / "pools.json", p / "dataset.csv"]
    missing = [str(x) for x in need if not x.exists()]
    if missing:
        raise ExperimentError(
            f"{p} is not a finished 'xlat experiment mosmodel' directory: {', '.join(missing)} missing."
        )
    meta = json.loads((p / "pools.json").read_text())
    df = pd.read_csv(p / "dataset.csv")
    lays = {}
    for _, row in df.iterrows():
        f = p / "layouts" / f"{row['layout']}.toml"
        if not f.exists():
            raise ExperimentError(f"{f} is missing (layout of a row of {p / 'dataset.csv'}).")
        lays[str(row["layout"])] = (f, float(row["R_s"]), int(row["window_length"]))
    return Experiment(p.name, p, meta, lays, df)


def _config_text(cpu: str, params: Sequence[Params]) -> str:
    """The preset's TOML with a grid of settings appended to its ``[time]`` table (the last)."""
    from xlat.sim import preset

    text = preset(cpu)
    last = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("[")][-1]
    if last != "[time]":
        raise ExperimentError(f"preset '{cpu}' does not end with its [time] table; calibration needs one.")
    text += '\nmodel = "overlap"\n'
    for g in params:
        text += f"\n[[time.grid]]\ncpi = {g.cpi}\ndep = {g.dep}\nhide = {g.hide}\nwalk_scale = {g.walk_scale}\nwalk_extra = {g.walk_extra}\n"
        if g.walkers is not None:
            text += f"walkers = {g.walkers}\n"
    return text


def simulate(
    exp: Experiment,
    cpu: str,
    main: Params,
    params: Sequence[Params] = (),
    layouts: Sequence[str] | None = None,
    threads: int | None = None,
    log=None,
) -> dict[str, dict[str, float]]:
    """Every layout's (or those named) simulated figures with the overlap model at ``main`` and
    the grid ``params``; cached under ``exp.path/time-sim/`` by configuration."""
    from xlat.sim import Run, SimResult, simulate_many

    text = _config_text(cpu, params)
    key = hashlib.sha256((text + "\n".join(main.sets())).encode()).hexdigest()[:16]
    d = exp.path / "time-sim" / f"{cpu}-{key}"
    d.mkdir(parents=True, exist_ok=True)
    cfg = d / "config.toml"
    cfg.write_text(text)
    names = list(layouts) if layouts is not None else list(exp.layouts)
    todo = [n for n in names if not (d / f"{n}.json").exists()]
    if todo:
        say(
            log,
            f"calibrate: {exp.name}: simulating {len(todo)} layouts ({len(params)} settings besides the main) ...",
        )
        t0 = time.perf_counter()
        runs = [
            Run(config=str(cfg), set=(*pools_at(exp.meta), *main.sets()), layout=str(exp.layouts[n][0]))
            for n in todo
        ]
        for n, r in zip(
            todo, simulate_many(str(exp.path / "trace.xlat"), runs, threads=threads), strict=True
        ):
            (d / f"{n}.json").write_text(r.to_json())
        say(log, f"calibrate: {exp.name}: {time.perf_counter() - t0:.0f} s")
    out = {}
    for n in names:
        r = SimResult(json.loads((d / f"{n}.json").read_text()))
        dv, c = r.derived, r.counters
        row = {
            "instructions": float(c["instructions"]),
            "additive": dv["time.total_cycles"],
            "stlb_walk": dv["time.stlb_hit_cycles"] + dv["time.walk_cycles"],
            "overlap": dv["time.overlap.total_cycles"],
        }
        for i in range(len(params)):
            row[f"grid{i}"] = dv[f"time.overlap.grid.{i}.total_cycles"]
        out[n] = row
    return out


def _ratio(exp: Experiment, sims: dict[str, dict[str, float]], col: str, n: str) -> float:
    return sims[n][col] / sims[exp.base][col]


def _measured(exp: Experiment, n: str) -> float:
    return exp.layouts[n][1] / exp.layouts[exp.base][1]


def _err(pred: float, meas: float) -> float:
    return abs(pred - meas) / meas


def _additive(row: dict[str, float], cpi: float) -> float:
    return row["instructions"] * cpi + row["stlb_walk"]


#: The additive model's base CPIs tried when it is fitted.
ADDITIVE_CPIS = tuple(k / 100 for k in range(5, 501, 5))  # 0.05 ... 5.0, step 0.05


def _fit_additive_cpi(pairs) -> float:
    """The additive model's CPI with the smallest maximal error over ``pairs`` of (a layout's
    simulated row, its all-4KB row, the measured ratio of the two); the first of equals."""
    best = (math.inf, 1.0)
    for cpi in ADDITIVE_CPIS:
        e = max(_err(_additive(row, cpi) / _additive(base, cpi), meas) for row, base, meas in pairs)
        if e < best[0]:
            best = (e, float(cpi))
    return best[1]


def reference(exp: Experiment, names: Sequence[str]) -> str:
    """The all-2MB layout (the largest window): with all-4KB, the reference pair."""
    return max(names, key=lambda n: (exp.layouts[n][2], n))


def machine_key(p: Params) -> tuple:
    return (p.cpi, p.hide, p.walkers, p.walk_scale, p.walk_extra)


def _fit_dep(exp, sims, params, idx, ref) -> int:
    """Of the settings ``idx`` (one machine, every dep), the one closest on the reference pair."""
    meas = _measured(exp, ref)
    return min(idx, key=lambda i: (_err(_ratio(exp, sims, f"grid{i}", ref), meas), params[i].dep))


@dataclass
class Calibration:
    #: the machine's setting (its ``dep`` is the default for programs never run: the fit
    #: programs' median)
    params: Params
    #: per program: the dep fitted on its all-4KB/all-2MB pair
    deps: dict[str, float]
    additive_cpi: float
    #: one row per (program, layout): role, whether it is a reference layout, measured and
    #: predicted ratios to all-4KB
    table: Any
    #: per program and model: maximal and mean ratio error on the mixed (non-reference) layouts
    summary: Any
    cpu: str

    def sets(self) -> list[str]:
        return self.params.sets()

    def format(self) -> str:
        p = self.params
        lines = [
            f"overlap model on {self.cpu}, fitted: base CPI {p.cpi}, walk_scale {p.walk_scale}, "
            f"walk_extra {p.walk_extra}, hide {p.hide}"
            + (f", walkers {p.walkers}" if p.walkers is not None else ""),
            "dep per program (from its all-4KB and all-2MB runs): "
            + ", ".join(f"{k} {v}" for k, v in self.deps.items())
            + f"; default (median of the fit programs) {p.dep}",
            f"additive model's CPI fitted on the fit programs: {self.additive_cpi}",
            "ratio errors (layout / all-4KB) on the mixed layouts, which no fit saw:",
            "",
            self.summary.to_string(
                index=False,
                formatters={
                    c: (lambda x: f"{x:g}") if c == "dep" else (lambda x: f"{100 * x:.2f}%")
                    for c in self.summary.columns
                    if c not in ("program", "role")
                },
            ),
        ]
        return "\n".join(lines)


def calibrate(
    fit_dirs: Sequence[str | Path],
    held_dirs: Sequence[str | Path],
    cpu: str = "zen4",
    params: Sequence[Params] | None = None,
    threads: int | None = None,
    log=None,
    all_layouts: bool = False,
) -> Calibration:
    """Fit the overlap model's machine parameters on ``fit_dirs`` and validate on ``held_dirs``.

    Every program's ``dep`` is fitted on its reference pair (all-4KB and all-2MB runs); the
    machine's setting (CPI, hide, walkers, walk_scale) is the one whose mixed-layout errors over
    the fit programs are smallest (maximal, then mean). Held-out programs get the machine's
    setting and their own ``dep`` from their reference pair; errors are reported on their mixed
    layouts, beside the same without any run of the program (``dep`` the fit programs' median),
    the additive model (as printed; with its CPI fitted on the fit programs; with its CPI fitted
    on the program's reference pair), Yaniv (the line through the reference pair) and Mosmodel
    (fitted on every other layout of the program's own runs, leave-one-out)."""
    from xlat._optional import need_pandas

    pd = need_pandas("calibrate()")

    from xlat.models import Mosmodel, Yaniv, loo_predictions

    if not fit_dirs:
        raise ExperimentError("calibration needs at least one experiment directory to fit on (--fit).")
    params = list(params) if params is not None else grid()
    machines: dict[tuple, list[int]] = {}
    for i, g in enumerate(params):
        machines.setdefault(machine_key(g), []).append(i)
    fit = []
    for p in fit_dirs:
        exp = load_experiment(p)
        lays = None if all_layouts else four_layouts(exp)
        fit.append((exp, simulate(exp, cpu, params[0], params, layouts=lays, threads=threads, log=log)))
    scores = []
    for key, idx in machines.items():
        errs = []
        for exp, sims in fit:
            ref = reference(exp, list(sims))
            i = _fit_dep(exp, sims, params, idx, ref)
            errs += [
                _err(_ratio(exp, sims, f"grid{i}", n), _measured(exp, n))
                for n in sims
                if n not in (exp.base, ref)
            ]
        scores.append((max(errs), statistics.fmean(errs), key))
    best_key = min(scores)[2]
    idx = machines[best_key]
    deps = {}
    for exp, sims in fit:
        deps[exp.name] = params[_fit_dep(exp, sims, params, idx, reference(exp, list(sims)))].dep
    med = float(statistics.median(list(deps.values())))
    default_dep = min((params[i].dep for i in idx), key=lambda d: abs(d - med))
    cpi, hide, walkers, scale, extra = best_key
    best = Params(cpi, default_dep, hide, walkers, scale, extra)
    # The additive model's one free parameter, fitted on the same programs' ratios.
    add_cpi = _fit_additive_cpi(
        [(row, sims[exp.base], _measured(exp, n)) for exp, sims in fit for n, row in sims.items()]
    )
    say(
        log,
        f"calibrate: machine cpi={cpi} walk_scale={scale} walk_extra={extra} hide={hide} walkers={walkers}; deps {deps}",
    )
    held_grid = [Params(cpi, params[i].dep, hide, walkers, scale, extra) for i in idx]
    every = [(exp, sims, "fit", params) for exp, sims in fit]
    for p in held_dirs:
        exp = load_experiment(p)
        lays = None if all_layouts else four_layouts(exp)
        sims = simulate(exp, cpu, held_grid[0], held_grid, layouts=lays, threads=threads, log=log)
        every.append((exp, sims, "held-out", held_grid))
    rows = []
    for exp, sims, role, ps in every:
        names = list(sims)
        ref = reference(exp, names)
        mine = [i for i, g in enumerate(ps) if machine_key(g) == best_key]
        own = _fit_dep(exp, sims, ps, mine, ref)
        deps[exp.name] = ps[own].dep
        blind = next(i for i in mine if ps[i].dep == default_dep)
        # The additive model with the CPI that matches this program's reference pair.
        own_cpi = _fit_additive_cpi([(sims[ref], sims[exp.base], _measured(exp, ref))])
        ds = exp.dataset
        X, y = ds[["H", "M", "C"]].to_numpy(float), ds["R_s"].to_numpy(float)
        pos = {n: k for k, n in enumerate(ds["layout"])}
        b, r_ = pos[exp.base], pos[ref]
        yaniv = Yaniv(point_4k=b, point_2m=r_).fit(X, y).predict(X) / y[b]
        mos = loo_predictions(Mosmodel(), X, y, [pos[n] for n in names])
        mos_base = mos[names.index(exp.base)]
        for j, n in enumerate(names):
            rows.append(
                {
                    "program": exp.name,
                    "role": role,
                    "layout": n,
                    "reference": n in (exp.base, ref),
                    "measured": _measured(exp, n),
                    "overlap": _ratio(exp, sims, f"grid{own}", n),
                    "overlap_no_runs": _ratio(exp, sims, f"grid{blind}", n),
                    "additive": sims[n]["additive"] / sims[exp.base]["additive"],
                    "additive_fitted_cpi": _additive(sims[n], add_cpi) / _additive(sims[exp.base], add_cpi),
                    "additive_own_cpi": _additive(sims[n], own_cpi) / _additive(sims[exp.base], own_cpi),
                    "yaniv": yaniv[pos[n]],
                    "mosmodel_loo": mos[j] / mos_base,
                }
            )
    table = pd.DataFrame(rows)
    models = [
        "overlap",
        "overlap_no_runs",
        "additive",
        "additive_fitted_cpi",
        "additive_own_cpi",
        "yaniv",
        "mosmodel_loo",
    ]
    summ = []
    for (prog, role), g in table[~table["reference"]].groupby(["program", "role"], sort=False):
        r = {"program": prog, "role": role, "dep": deps[prog]}
        for m in models:
            e = (g[m] - g["measured"]).abs() / g["measured"]
            r[f"{m} max"] = e.max()
            r[f"{m} mean"] = e.mean()
        summ.append(r)
    return Calibration(best, deps, add_cpi, table, pd.DataFrame(summ), cpu)


def markdown(cal: Calibration) -> str:
    """The maximal errors per program as a Markdown table, with the fitted setting."""
    cols = [
        ("overlap max", "overlap (own dep)"),
        ("overlap_no_runs max", "overlap (no run)"),
        ("additive max", "additive, CPI 1"),
        ("additive_fitted_cpi max", f"additive, CPI {cal.additive_cpi}"),
        ("additive_own_cpi max", "additive (own CPI)"),
        ("yaniv max", "Yaniv"),
        ("mosmodel_loo max", "Mosmodel (LOO)"),
    ]
    p = cal.params
    out = [
        f"Overlap model on `{cal.cpu}`: base CPI {p.cpi}, walk_extra {p.walk_extra}, walk_scale {p.walk_scale}, "
        f"hide {p.hide}; dep without a run of the program {p.dep}.",
        "",
        "| program | role | dep | " + " | ".join(h for _, h in cols) + " |",
        "|---|---|---|" + "---|" * len(cols),
    ]
    for _, r in cal.summary.iterrows():
        out.append(
            f"| {r['program']} | {r['role']} | {r['dep']:g} | "
            + " | ".join(f"{100 * r[c]:.2f}%" for c, _ in cols)
            + " |"
        )
    return "\n".join(out) + "\n"


def calibrated_config(cal: Calibration) -> str:
    """The preset with the fitted setting: a configuration file for ``--config``."""
    from xlat.sim import preset

    p = cal.params
    text = preset(cal.cpu)
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("name = "):
            lines[i] = f'name = "{cal.cpu}-host"'
            break
    head = (
        f"# {cal.cpu} with the overlap time model calibrated on this host by `xlat experiment calibrate`\n"
        f"# (docs/time-model.md): base CPI, walk_scale, walk_extra and hide fitted on real runs; dep is\n"
        f"# the fit programs' median (a program's own, from its all-4KB and all-2MB runs: {cal.deps}).\n"
    )
    tail = (
        f'model = "overlap"\ndep = {p.dep}\nhide = {p.hide}\nwalk_scale = {p.walk_scale}\n'
        f"walk_extra = {p.walk_extra}\n"
        + (f"walkers = {p.walkers}\n" if p.walkers is not None else "")
        + f"\n[sim]\ndata_through_caches = true\nbase_cpi = {p.cpi}\n"
    )
    return head + "\n".join(lines) + "\n" + tail


def write(cal: Calibration, out: str | Path) -> Path:
    """``calibration.csv``, ``summary.csv``, ``overlay.txt`` (the ``--set`` lines), ``deps.json``,
    ``config.toml`` (the preset with the fitted setting) and ``report.md``."""
    o = Path(out)
    o.mkdir(parents=True, exist_ok=True)
    cal.table.to_csv(o / "calibration.csv", index=False)
    cal.summary.to_csv(o / "summary.csv", index=False)
    (o / "overlay.txt").write_text("\n".join(cal.sets()) + "\n")
    (o / "deps.json").write_text(json.dumps(cal.deps, indent=1) + "\n")
    (o / "config.toml").write_text(calibrated_config(cal))
    (o / "report.md").write_text(markdown(cal))
    return o
