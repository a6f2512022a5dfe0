"""The optional dependencies. pandas and matplotlib, which xlat needs only for tables
(``to_pandas()``) and plots (``--plot``), come with the ``experiment`` extra (``pip install
'xlat[experiment]'``); Dask distributed and pyarrow, which ``xlat sweep`` needs, with the
``sweep`` extra. Each place that needs one asks here, so a missing one is one sentence naming
the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from xlat._native import XlatError

__all__ = ["MissingExtra", "need_pandas", "need_pyplot", "need_sweep"]


class MissingExtra(XlatError, ImportError):
    """An optional dependency is not installed; ``str(err)`` is one sentence naming the extra."""


def _need(module: str, what: str, extra: str = "experiment") -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        top = module.split(".")[0]
        if e.name is not None and e.name.split(".")[0] != top:
            raise  # the module is there but is missing one of its own dependencies
        raise MissingExtra(
            f"{what} needs {top}, which is not installed: pip install 'xlat[{extra}]'"
        ) from None


def need_pandas(what: str) -> ModuleType:
    """pandas, or a :class:`MissingExtra` saying ``what`` needs it."""
    return _need("pandas", what)


def need_pyplot(what: str = "plotting") -> ModuleType:
    """matplotlib.pyplot on the Agg backend (files, no display), or a :class:`MissingExtra`."""
    matplotlib = _need("matplotlib", what)
    matplotlib.use("Agg")
    return _need("matplotlib.pyplot", what)


def need_sweep(what: str = "xlat sweep") -> None:
    """Check that what a sweep runs on is installed (Dask distributed, pyarrow, pandas)."""
    for module in ("distributed", "pyarrow", "pandas"):
        _need(module, what, "sweep")
