"""Runtime models R = f(H, M, C) and the analytical models of the reference documents.

Inputs follow the partial-simulation paper (Agbarya et al. 2020): for each memory
layout of a workload, ``H`` = L2-TLB hits, ``M`` = L2-TLB misses, ``C`` = cycles spent walking
page tables, and ``R`` = runtime in cycles. ``X`` is an ``(n, 3)`` array in the column order
``(H, M, C)`` or a DataFrame with columns ``H``, ``M``, ``C``.

Every model is a scikit-learn regressor (``fit`` returns ``self``, learned attributes end in
``_``, ``predict`` refuses an unfitted model), so models compose with scikit-learn tools::

    >>> import numpy as np
    >>> X = np.array([[0, 100, 5000], [0, 10, 400], [0, 50, 2600]], dtype=float)  # H, M, C
    >>> R = np.array([20000.0, 15000.0, 17500.0])
    >>> Yaniv().fit(X, R).predict(X[2:]).round(1)    # line through the 4KB (max C) and 2MB (min C) points
    array([17391.3])

The prior models (Section III of the paper) are defined by one or two reference layouts: the
all-4KB layout and the all-2MB layout. By default the row with the most walk cycles is taken as
the 4KB point and the row with the fewest as the 2MB point; pass row indices as ``point_4k`` /
``point_2m`` to choose them explicitly.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.linear_model import Lasso, LassoCV, LinearRegression
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.utils.validation import check_is_fitted

__all__ = [
    "Alam",
    "Basu",
    "Gandhi",
    "Mosmodel",
    "Pham",
    "Poly",
    "Yaniv",
    "cross_val_errors",
    "expected_cycles_2m",
    "geomean_error",
    "lite_tlb_cycles",
    "max_error",
    "perfect_mmu_overhead",
    "perfect_tlb_overhead",
    "prior_models",
    "prism_overhead",
    "prism_overhead_of",
    "relative_errors",
    "rmm_performance_model",
    "single_input_r2",
]

INPUTS = ("H", "M", "C")


def as_hmc(X: Any) -> np.ndarray:
    """``X`` as a float array of shape (n, 3) in the column order H, M, C."""
    if hasattr(X, "columns"):
        missing = [c for c in INPUTS if c not in X.columns]
        if missing:
            raise ValueError(f"X lacks the column(s) {', '.join(missing)}; a runtime model needs H, M and C")
        X = X[list(INPUTS)].to_numpy()
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != 3:
        raise ValueError(f"X must have shape (n, 3) with columns H, M, C; got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X holds NaN or infinite values")
    return X


def _as_y(y: Any, n: int) -> np.ndarray:
    y = np.asarray(y, dtype=float).ravel()
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} runtimes but X has {n} rows")
    if not np.isfinite(y).all() or (y <= 0).any():
        raise ValueError("runtimes must be positive and finite")
    return y


class _PriorModel(RegressorMixin, BaseEstimator):
    """A model fixed by the 4KB and/or 2MB reference layouts (Section III)."""

    def __init__(self, point_4k: int | str = "max_C", point_2m: int | str = "min_C"):
        self.point_4k = point_4k
        self.point_2m = point_2m

    def _point(self, X: np.ndarray, which: int | str, name: str) -> int:
        if which == "max_C":
            return int(np.argmax(X[:, 2]))
        if which == "min_C":
            return int(np.argmin(X[:, 2]))
        if isinstance(which, (int, np.integer)) and -len(X) <= which < len(X):
            return int(which) % len(X)
        raise ValueError(f"{name}={which!r} must be 'max_C', 'min_C' or a row index below {len(X)}")

    def fit(self, X: Any, y: Any) -> _PriorModel:
        X = as_hmc(X)
        y = _as_y(y, len(X))
        i4 = self._point(X, self.point_4k, "point_4k")
        i2 = self._point(X, self.point_2m, "point_2m")
        (h4, m4, c4), (h2, m2, c2) = X[i4], X[i2]
        self._fit_points(h4, m4, c4, y[i4], h2, m2, c2, y[i2])
        self.n_features_in_ = 3
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "intercept_")
        X = as_hmc(X)
        return X @ self.coef_ + self.intercept_

    def _fit_points(self, h4, m4, c4, r4, h2, m2, c2, r2) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise ValueError(msg)


class Basu(_PriorModel):
    """R = alpha*M + beta with alpha = C_4K / M_4K and beta = R_4K - C_4K (Basu et al.)."""

    def _fit_points(self, h4, m4, c4, r4, h2, m2, c2, r2):
        _need(m4 > 0, "the 4KB reference layout has no TLB misses (M=0), so alpha = C/M is undefined")
        self.coef_ = np.array([0.0, c4 / m4, 0.0])
        self.intercept_ = r4 - c4


class Gandhi(_PriorModel):
    """R = alpha*M + beta with alpha = C_4K / M_4K and beta = R_2M - C_2M (Gandhi et al.)."""

    def _fit_points(self, h4, m4, c4, r4, h2, m2, c2, r2):
        _need(m4 > 0, "the 4KB reference layout has no TLB misses (M=0), so alpha = C/M is undefined")
        self.coef_ = np.array([0.0, c4 / m4, 0.0])
        self.intercept_ = r2 - c2


class Pham(_PriorModel):
    """R = L*H + C + beta with beta = R_4K - C_4K - L*H_4K; L = ``l2_latency`` = 7 cycles
    (the L2-TLB latency Intel reports; Pham et al.)."""

    def __init__(self, point_4k: int | str = "max_C", point_2m: int | str = "min_C", l2_latency: float = 7.0):
        super().__init__(point_4k, point_2m)
        self.l2_latency = l2_latency

    def _fit_points(self, h4, m4, c4, r4, h2, m2, c2, r2):
        self.coef_ = np.array([float(self.l2_latency), 0.0, 1.0])
        self.intercept_ = r4 - c4 - self.l2_latency * h4


class Alam(_PriorModel):
    """R = C + beta with beta = R_2M - C_2M (Alam et al.)."""

    def _fit_points(self, h4, m4, c4, r4, h2, m2, c2, r2):
        self.coef_ = np.array([0.0, 0.0, 1.0])
        self.intercept_ = r2 - c2


class Yaniv(_PriorModel):
    """R = alpha*C + beta through (C_2M, R_2M) and (C_4K, R_4K) (Yaniv and Tsafrir)."""

    def _fit_points(self, h4, m4, c4, r4, h2, m2, c2, r2):
        _need(
            c4 != c2,
            "the 4KB and 2MB reference layouts have the same walk cycles, so no line passes through both",
        )
        alpha = (r4 - r2) / (c4 - c2)
        self.coef_ = np.array([0.0, 0.0, alpha])
        self.intercept_ = r2 - alpha * c2


class Poly(RegressorMixin, BaseEstimator):
    """Least-squares polynomial of the given degree in walk cycles C (poly1, poly2, poly3)."""

    def __init__(self, degree: int = 1):
        self.degree = degree

    def fit(self, X: Any, y: Any) -> Poly:
        X = as_hmc(X)
        y = _as_y(y, len(X))
        if not (isinstance(self.degree, (int, np.integer)) and 1 <= self.degree <= 10):
            raise ValueError(f"degree={self.degree!r} must be an integer from 1 to 10")
        # Scale C to [0, 1]-ish so that C^3 of ~1e11 cycles stays well conditioned.
        self.scale_ = float(np.max(np.abs(X[:, 2]))) or 1.0
        self.model_ = make_pipeline(PolynomialFeatures(self.degree, include_bias=False), LinearRegression())
        self.model_.fit(X[:, 2:3] / self.scale_, y)
        self.n_features_in_ = 3
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        return self.model_.predict(as_hmc(X)[:, 2:3] / self.scale_)


class Mosmodel(RegressorMixin, BaseEstimator):
    """Mosmodel: a degree-3 polynomial in (H, M, C) fitted with Lasso (Section VII-C).

    Inputs are standardised, expanded into all monomials up to ``degree`` (19 terms for three
    inputs and degree 3), standardised again, and fitted by Lasso on ``R / mean(R)``; ``alpha``
    (the L1 penalty) is chosen by ``cv``-fold cross-validation unless given. Lasso sets the
    coefficients of unhelpful terms to zero, which selects, per workload, which of H, M and C
    predict its runtime.

    Learned: ``alpha_``, ``coef_`` (per term, on standardised terms), ``terms_`` (names such as
    ``"C^2 M"``), ``n_nonzero_``.
    """

    def __init__(self, degree: int = 3, alpha: float | None = None, cv: int = 5, max_iter: int = 200_000,
                 random_state: int = 0):  # fmt: skip
        self.degree = degree
        self.alpha = alpha
        self.cv = cv
        self.max_iter = max_iter
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> Mosmodel:
        X = as_hmc(X)
        y = _as_y(y, len(X))
        self.y_scale_ = float(np.mean(y))
        if self.alpha is None:
            folds = min(self.cv, len(X))
            if folds < 2:
                raise ValueError(f"choosing alpha by cross-validation needs at least 2 samples, got {len(X)}")
            lasso = LassoCV(cv=KFold(folds, shuffle=True, random_state=self.random_state), max_iter=self.max_iter,
                            random_state=self.random_state)  # fmt: skip
        else:
            lasso = Lasso(alpha=self.alpha, max_iter=self.max_iter)
        self.pipeline_ = make_pipeline(
            StandardScaler(), PolynomialFeatures(self.degree, include_bias=False), StandardScaler(), lasso
        )
        self.pipeline_.fit(X, y / self.y_scale_)
        fitted = self.pipeline_[-1]
        self.alpha_ = float(fitted.alpha_ if self.alpha is None else self.alpha)
        self.coef_ = np.asarray(fitted.coef_)
        self.terms_ = [t.replace("x0", "H").replace("x1", "M").replace("x2", "C")
                       for t in self.pipeline_[1].get_feature_names_out()]  # fmt: skip
        self.n_nonzero_ = int(np.count_nonzero(self.coef_))
        self.n_features_in_ = 3
        return self

    def predict(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "pipeline_")
        return self.pipeline_.predict(as_hmc(X)) * self.y_scale_


def prior_models() -> dict[str, BaseEstimator]:
    """Every model of the paper, unfitted, by name, in the paper's order."""
    return {
        "basu": Basu(),
        "gandhi": Gandhi(),
        "pham": Pham(),
        "alam": Alam(),
        "yaniv": Yaniv(),
        "poly1": Poly(1),
        "poly2": Poly(2),
        "poly3": Poly(3),
        "mosmodel": Mosmodel(),
    }


# --- error metrics (Section VI-C) ----------------------------------------------------------


def relative_errors(y: Any, y_pred: Any) -> np.ndarray:
    """|R - R_hat| / R for every sample."""
    y = np.asarray(y, dtype=float)
    return np.abs(y - np.asarray(y_pred, dtype=float)) / y


def max_error(y: Any, y_pred: Any) -> float:
    """Maximal absolute relative error, the paper's Equation 1."""
    return float(np.max(relative_errors(y, y_pred)))


def geomean_error(y: Any, y_pred: Any) -> float:
    """Geometric mean of the absolute relative errors, the paper's Equation 2.

    Errors of exactly zero (the reference points a prior model passes through) are left out:
    with them the product, and so the mean, would be zero for every prior model.
    """
    e = relative_errors(y, y_pred)
    e = e[e > 0]
    return float(np.exp(np.mean(np.log(e)))) if len(e) else 0.0


def loo_predictions(model: BaseEstimator, X: Any, y: Any, rows: Any) -> np.ndarray:
    """Leave-one-out: each of ``rows`` predicted by ``model`` fitted on every other row. Lasso
    stopping short of its tolerance on a few points is not an error here (the fit is still the
    model's), so its ConvergenceWarning is silenced."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X = as_hmc(X)
    y = _as_y(y, len(X))
    out = np.empty(len(rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for j, i in enumerate(rows):
            keep = np.arange(len(y)) != i
            out[j] = clone(model).fit(X[keep], y[keep]).predict(X[i : i + 1])[0]
    return out


def cross_val_errors(model: BaseEstimator, X: Any, y: Any, k: int = 5, seed: int = 0) -> dict[str, float]:
    """K-fold cross-validation: fit on k-1 folds, predict the held-out fold; the maximal and
    geometric-mean errors over all held-out predictions."""
    X = as_hmc(X)
    y = _as_y(y, len(X))
    pred = np.empty_like(y)
    for train, test in KFold(k, shuffle=True, random_state=seed).split(X):
        pred[test] = clone(model).fit(X[train], y[train]).predict(X[test])
    return {"max": max_error(y, pred), "geomean": geomean_error(y, pred)}


def single_input_r2(X: Any, y: Any) -> dict[str, float]:
    """R^2 of a one-variable linear fit of R on each of H, M and C (the paper's Table 8)."""
    X = as_hmc(X)
    y = _as_y(y, len(X))
    out = {}
    for i, name in enumerate(INPUTS):
        col = X[:, i : i + 1]
        out[name] = float("nan") if np.ptp(col) == 0 else float(LinearRegression().fit(col, y).score(col, y))
    return out


# --- analytical models of Karakostas's thesis (2016) -----------------------------------------


def expected_cycles_2m(total_cycles_4k: float, tlb_cycles_4k: float, tlb_cycles_2m: float) -> float:
    """Equation 3.1: runtime with 2MB pages if page walks did not interact with the pipeline."""
    return total_cycles_4k - tlb_cycles_4k + tlb_cycles_2m


#: Cycles per page walk that hits the MMU caches and needs one PTE load hitting L1, L2 or the
#: LLC, measured with microbenchmarks in Karakostas 2016 (Section 3.5.2).
PERFECT_MMU_CYCLES = {"L1": 12, "L2": 20, "LLC": 43}


def perfect_mmu_overhead(tlb_misses: float, total_cycles: float, level: str = "L1") -> float:
    """Equations 3.2-3.4: the fraction of execution time page walks would take with a perfect MMU
    cache whose single PTE load hits in ``level`` (``"L1"``, ``"L2"`` or ``"LLC"``)."""
    if level not in PERFECT_MMU_CYCLES:
        raise ValueError(f"level={level!r} must be one of {', '.join(PERFECT_MMU_CYCLES)}")
    return tlb_misses * PERFECT_MMU_CYCLES[level] / total_cycles


def perfect_tlb_overhead(tlb_misses: float, total_cycles: float, latency: float = 7) -> float:
    """Equation 3.5: the fraction of time with a perfect third-level TLB of L2-TLB latency."""
    return tlb_misses * latency / total_cycles


def rmm_performance_model(
    t_2m: float, c_2m: float, c_4k: float, m_4k: float, m_sim: float
) -> dict[str, float]:
    """Table 4.5: ideal time T_ideal = T_2M - C_2M, average walk cost AvgC_4K = C_4K / M_4K,
    measured overhead Over_4K = C_4K / T_ideal, simulated overhead Over_SIM = M_SIM * AvgC_4K / T_ideal."""
    _need(m_4k > 0, "M_4K must be positive: the average walk cost is C_4K / M_4K")
    ideal = t_2m - c_2m
    _need(ideal > 0, f"the ideal time T_2M - C_2M = {ideal} must be positive")
    avg = c_4k / m_4k
    return {
        "ideal": ideal,
        "avg_walk_cycles": avg,
        "overhead_4k": c_4k / ideal,
        "overhead_sim": m_sim * avg / ideal,
    }


def lite_tlb_cycles(
    l1_tlb_misses: float, l2_tlb_misses: float, l2_latency: float = 7, walk_cycles: float = 50
) -> float:
    """Table 5.3: cycles spent in TLB misses. L1-TLB hits cost nothing (looked up in parallel
    with the L1 data cache), an L1 miss costs an L2-TLB lookup (7 cycles), an L2 miss a page walk
    (50 cycles). (The table's total row reads "L1 + L1" in the extracted text; the sum of the L1-
    and L2-miss terms is what the text describes.)"""
    return l1_tlb_misses * l2_latency + l2_tlb_misses * walk_cycles


#: Load latencies (cycles) of L1, L2, L3 and memory weighing page-walk loads in PRISM's model,
#: "an approximation of recent Intel CPUs" (Ausavarungnirun et al. 2020, Section 5, Table 4).
PRISM_LATENCIES = (3, 11, 40, 200)
#: Bits of an MRE the update model assumes set per 2MB page and epoch (Ausavarungnirun et al.
#: 2020, Section 5).
PRISM_MRE_LEN = 64


def prism_overhead(
    pw_loads: tuple[float, float, float, float],
    m_2mb: float,
    p_2mb: float,
    total_cycles: float,
    epochs: float = 1,
    mre_len: int = PRISM_MRE_LEN,
    latencies: tuple[float, float, float, float] = PRISM_LATENCIES,
) -> dict[str, float]:
    """Table 4 (Ausavarungnirun et al. 2020): the cost of PRISM's metadata registry. ``pw_loads``
    are the page-walk loads served by L1, L2, L3 and memory; MRE_access is their latency-weighted
    mean, C_MREload = M_2MB x MRE_access, C_MREupdate = E x P_2MB x MRE_access x 2 x MRE_len, and the
    overheads are fractions of ``total_cycles`` (O(MRE load), O(+MRE update))."""
    _need(
        len(pw_loads) == 4 and len(latencies) == 4, "pw_loads and latencies need 4 values: L1, L2, L3, memory"
    )
    n = float(sum(pw_loads))
    _need(n > 0, "the page walks made no load: MRE_access is a mean over walk loads")
    _need(total_cycles > 0, f"total_cycles = {total_cycles} must be positive")
    mre_access = sum(p * lat for p, lat in zip(pw_loads, latencies, strict=True)) / n
    load = m_2mb * mre_access
    update = epochs * p_2mb * mre_access * 2 * mre_len
    return {
        "mre_access": mre_access,
        "c_mre_load": load,
        "c_mre_update": update,
        "overhead_load": load / total_cycles,
        "overhead_update": (load + update) / total_cycles,
    }


def prism_overhead_of(result: Any, epochs: float = 1, mre_len: int = PRISM_MRE_LEN) -> dict[str, float]:
    """:func:`prism_overhead` from a PRISM simulation (``[prism]`` enabled): walk loads by hit
    level (the first three cache levels, then memory; a core with fewer levels leaves the rest 0),
    M_2MB = ``prism.mre_loads`` (2MB TLB misses of pages with an MRE), P_2MB =
    ``prism.registry_entries``, C = ``time.total_cycles``; next to it the simulated count of
    MRE loads and their cycles in xlat's own cache model (``overhead_load_sim``)."""
    c, d = result.counters, result.derived
    _need("prism.mre_loads" in c, "the result has no prism.* counters: run with [prism] enabled")
    levels = [k.removeprefix("walker.loads_hit.") for k in c if k.startswith("walker.loads_hit.")]
    caches = [lv for lv in levels if lv != "DRAM"]
    # (Counter names come sorted; the configuration lists the cache levels in order.)
    order = [x["name"] for x in result.config.get("cache", [])] or caches
    pw = [float(c[f"walker.loads_hit.{lv}"]) for lv in order[:3]]
    pw += [0.0] * (3 - len(pw))
    pw.append(float(c["walker.loads_hit.DRAM"]))
    out = prism_overhead(
        (pw[0], pw[1], pw[2], pw[3]),
        c["prism.mre_loads"],
        c["prism.registry_entries"],
        d["time.total_cycles"],
        epochs=epochs,
        mre_len=mre_len,
    )
    out["mre_loads"] = float(c["prism.mre_loads"])
    out["mre_load_cycles_sim"] = float(c["prism.mre_load_cycles"])
    out["overhead_load_sim"] = c["prism.mre_load_cycles"] / d["time.total_cycles"]
    return out
