"""Step 6: fit every model of :mod:`xlat.models` to the dataset and measure its errors, on the
data and cross-validated."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np


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
