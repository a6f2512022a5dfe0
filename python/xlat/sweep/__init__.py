"""``xlat sweep``: many configurations over many traces on Dask distributed, resumable and exact
(docs/sweep.md).

    >>> from xlat.sweep import load, run_sweep            # doctest: +SKIP
    >>> out = run_sweep(load("sweep.toml"), "results/")    # doctest: +SKIP
    >>> import pandas as pd; df = pd.read_parquet("results/")  # doctest: +SKIP
"""

from xlat.sweep.run import Outcome, run_sweep
from xlat.sweep.spec import Point, Sweep, SweepError, load

__all__ = ["Outcome", "Point", "Sweep", "SweepError", "load", "run_sweep"]
