"""Partial simulation (Agbarya et al. 2020, Section III): the runtime of a design that cannot
run on this machine, predicted from its simulated H, M, C by a model fitted on real runs of the same program
under many layouts (``xlat experiment predict``).

The experiment directory (``xlat experiment mosmodel``) holds the program's trace, its layouts'
simulated H, M, C and measured runtimes. The design is simulated on the same trace with the pools
at their traced addresses, exactly as the layouts were, under the preset the experiment used plus
the design's overrides (a bigger STLB, RMM's range TLB, a direct segment, ...). The model (by
default Mosmodel) is refitted on every layout and predicts the design's runtime; its uncertainty is
the model's error on held-out layouts (leave-one-out: fit on all layouts but one, predict that one),
and a design whose H, M or C lies outside the fitted range by more than ``margin`` of that range is
refused unless ``extrapolate`` is given, because a polynomial fitted on a range says nothing
reliable far outside it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xlat.experiment.common import ExperimentError
from xlat.experiment.simulation import pools_at
from xlat.models import INPUTS

#: The inputs each model reads (docs/models.md): only these must lie in the fitted range.
MODEL_INPUTS = {
    "basu": ("M",),
    "gandhi": ("M",),
    "pham": ("H", "C"),
    "alam": ("C",),
    "yaniv": ("C",),
    "poly1": ("C",),
    "poly2": ("C",),
    "poly3": ("C",),
    "mosmodel": ("H", "M", "C"),
}


@dataclass
class Prediction:
    design: str
    H: float
    M: float
    C: float
    #: predicted runtime (cycles and seconds), the measured all-4KB runtime, speed-up over it
    R_cycles: float
    R_s: float
    R_4k_s: float
    speedup: float
    #: the model's maximal and mean relative error on held-out layouts (leave-one-out)
    loo_max_error: float
    loo_mean_error: float
    #: the layouts that error is over (those inside the others' range)
    loo_layouts: int
    #: per input: how far outside the fitted range, as a fraction of the range (0: inside)
    outside: dict[str, float]
    model: str

    def format(self) -> str:
        lo = self.R_s * (1 - self.loo_max_error)
        hi = self.R_s * (1 + self.loo_max_error)
        out = [
            f"{self.design}: H {self.H:,.0f}  M {self.M:,.0f}  C {self.C:,.0f}",
            f"  predicted runtime ({self.model}): {self.R_s:.4f} s ({self.R_cycles:,.0f} cycles), "
            f"{lo:.4f}-{hi:.4f} s at the model's maximal error on held-out layouts "
            f"({100 * self.loo_max_error:.2f}%, mean {100 * self.loo_mean_error:.2f}%, leave-one-out over the "
            f"{self.loo_layouts} layouts inside the others' range)",
            f"  speed-up over the measured all-4KB layout ({self.R_4k_s:.4f} s): {self.speedup:.3f}x",
        ]
        far = {k: v for k, v in self.outside.items() if v > 0 and k in MODEL_INPUTS.get(self.model, INPUTS)}
        if far:
            out.append(
                "  outside the fitted range: "
                + ", ".join(f"{k} by {100 * v:.1f}% of its range" for k, v in far.items())
                + " (extrapolated)"
            )
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def check_dir(exp: Path, need_trace: bool = True) -> None:
    """One sentence if ``exp`` is not a finished experiment directory (with its trace if needed)."""
    _dataset(exp)
    if need_trace:
        missing = [f for f in ("trace.xlat", "pools.json", "layouts/all-4KB.toml") if not (exp / f).exists()]
        if missing:
            raise ExperimentError(
                f"{exp} lacks {', '.join(missing)}, which simulating a design on its trace needs; pass --result instead."
            )


def _dataset(exp: Path):
    from xlat._optional import need_pandas

    pd = need_pandas("the Mosmodel prediction")

    f = exp / "dataset.csv"
    if not f.exists():
        raise ExperimentError(
            f"{exp} has no dataset.csv: run 'xlat experiment mosmodel' there to the end first (real runs are needed)."
        )
    df = pd.read_csv(f)
    if len(df) < 4:
        raise ExperimentError(f"{f} has {len(df)} layouts; a fitted model needs at least 4.")
    return df


def _model(name: str):
    from xlat import models

    every = models.prior_models()
    if name not in every:
        raise ExperimentError(f"model '{name}' is not one of {', '.join(every)}.")
    return every[name]


def outside(X: np.ndarray, x: np.ndarray) -> np.ndarray:
    """How far ``x`` lies outside the range of the rows of ``X``, per input, as a fraction of
    the range (0 inside)."""
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, np.maximum(np.abs(hi), 1.0))
    return np.maximum(np.maximum(lo - x, x - hi), 0.0) / span


def loo_errors(
    model, X: np.ndarray, y: np.ndarray, margin: float = 0.1, used: np.ndarray | None = None
) -> tuple[float, float, int]:
    """Leave-one-out over the layouts a prediction would be allowed for: each layout whose H, M, C
    lie within ``margin`` of the others' range, predicted by the model fitted on the others (a
    layout at the edge of the range, all-4KB or all-2MB, would be an extrapolation, which
    :func:`predict` refuses). Returns the maximal and mean relative errors and how many layouts."""
    from xlat.models import loo_predictions

    used = np.ones(X.shape[1], bool) if used is None else used
    rows = [i for i in range(len(y)) if not (outside(np.delete(X, i, axis=0), X[i])[used] > margin).any()]
    if not rows:
        return math.nan, math.nan, 0
    errs = np.abs(loo_predictions(model, X, y, rows) - y[rows]) / y[rows]
    return float(errs.max()), float(errs.mean()), len(rows)


def simulate_design(exp: Path, cpu: str, sets: Sequence[str] = (), config: str | None = None, threads=None):
    """The design's simulation on the experiment's trace, the pools at their traced addresses,
    every pool on 4KB pages (the layout all-4KB) unless ``sets`` choose a policy."""
    from xlat.sim import Run, simulate_many

    if any(s.startswith("os.policy=") for s in sets):
        # The design's own paging policy over the trace's mappings (the pools are mappings of
        # the traced run at the addresses the layouts use).
        run = Run(cpu=None if config else cpu, config=config, set=tuple(sets))
    else:
        lay = exp / "layouts" / "all-4KB.toml"
        if not lay.exists():
            raise ExperimentError(f"{lay} is missing; the experiment directory is incomplete.")
        meta = json.loads((exp / "pools.json").read_text())
        run = Run(cpu=None if config else cpu, config=config, set=(*pools_at(meta), *sets), layout=str(lay))
    return simulate_many(str(exp / "trace.xlat"), [run], threads=threads)[0]


def predict(
    exp: str | Path,
    hmc: tuple[float, float, float],
    design: str = "design",
    model: str = "mosmodel",
    margin: float = 0.1,
    extrapolate: bool = False,
) -> Prediction:
    """The runtime of a design with simulated ``hmc`` = (H, M, C) from the experiment at ``exp``."""
    e = Path(exp)
    df = _dataset(e)
    X = df[list(INPUTS)].to_numpy(float)
    y = df["R_cycles"].to_numpy(float)
    m = _model(model)
    lo, hi = X.min(axis=0), X.max(axis=0)
    x = np.asarray(hmc, float)
    out = dict(zip(INPUTS, (float(v) for v in outside(X, x)), strict=True))
    reads = MODEL_INPUTS.get(model, INPUTS)
    far = {k: v for k, v in out.items() if v > margin and k in reads}
    if far and not extrapolate:
        raise ExperimentError(
            f"{design}'s "
            + ", ".join(
                f"{k} = {x[INPUTS.index(k)]:,.0f} lies {100 * v:.0f}% of the fitted range outside it"
                for k, v in far.items()
            )
            + f" (the layouts of {e} span H {lo[0]:,.0f}-{hi[0]:,.0f}, M {lo[1]:,.0f}-{hi[1]:,.0f}, "
            f"C {lo[2]:,.0f}-{hi[2]:,.0f}), so {model} would extrapolate; pass --extrapolate to predict anyway, "
            f"or choose a model that reads only inputs inside the range (--model)."
        )
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        # (Mosmodel's Lasso stopping short of its tolerance on a few points: still its fit.)
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = float(m.fit(X, y).predict(x[None, :])[0])
    used = np.array([k in reads for k in INPUTS])
    loo_max, loo_mean, loo_n = loo_errors(_model(model), X, y, margin, used)
    base = df[df["window_length"] == 0]
    if base.empty:
        raise ExperimentError(f"{e / 'dataset.csv'} has no all-4KB layout (window length 0).")
    # (Seconds from cycles at the clock the experiment converted with.)
    r_s = r * float(base["R_s"].iloc[0] / base["R_cycles"].iloc[0])
    r4k = float(base["R_s"].iloc[0])
    return Prediction(
        design=design,
        H=float(x[0]),
        M=float(x[1]),
        C=float(x[2]),
        R_cycles=r,
        R_s=r_s,
        R_4k_s=r4k,
        speedup=r4k / r_s,
        loo_max_error=loo_max,
        loo_mean_error=loo_mean,
        loo_layouts=loo_n,
        outside=out,
        model=model,
    )
