"""xlat: a workbench for studying virtual-memory address translation on real programs.

Reading traces and generating workloads::

    >>> import xlat
    >>> acc = xlat.read_accesses("workload:gups?size=64GiB&accesses=1000")
    >>> len(acc["addr"]), acc["addr"].dtype.name
    (1000, 'uint64')
    >>> t = xlat.open("workload:chase?size=1GiB&accesses=10")
    >>> sum(1 for e in t.events() if e.type == "access")
    10

Anything that takes a trace accepts a path to an xlat trace (``.xlat``), a text trace (``.txt``)
or a synthetic workload spec ``workload:NAME?key=value&...`` (see :func:`workloads`).

The compiled core lives in :mod:`xlat._native`; it is imported on first use so that the
pure-Python parts (layouts, the mosaic runner) work even before the extension is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_API = {
    "open": "xlat.trace",
    "Trace": "xlat.trace",
    "Event": "xlat.trace",
    "read_accesses": "xlat.trace",
    "trace_info": "xlat.trace",
    "convert": "xlat.trace",
    "cut": "xlat.trace",
    "workload": "xlat.trace",
    "workloads": "xlat.trace",
    "XlatError": "xlat.trace",
    "TraceError": "xlat.trace",
    "WorkloadError": "xlat.trace",
    "TraceIOError": "xlat.trace",
    "EventError": "xlat.trace",
    "simulate": "xlat.sim",
    "simulate_many": "xlat.sim",
    "Run": "xlat.sim",
    "SimResult": "xlat.sim",
    "ConfigError": "xlat.sim",
    "SimulationError": "xlat.sim",
    "mosmodel_experiment": "xlat.experiment",
    "mrc": "xlat.missratio",
    "MrcResult": "xlat.missratio",
}

# ``from xlat import *`` leaves the builtin ``open`` alone (``xlat.open`` opens a trace).
__all__ = sorted(n for n in _API if n != "open")

if TYPE_CHECKING:  # pragma: no cover
    from xlat.experiment import mosmodel_experiment  # noqa: F401
    from xlat.missratio import MrcResult, mrc  # noqa: F401
    from xlat.sim import ConfigError, Run, SimResult, SimulationError, simulate, simulate_many  # noqa: F401
    from xlat.trace import (  # noqa: F401
        Event,
        EventError,
        Trace,
        TraceError,
        TraceIOError,
        WorkloadError,
        XlatError,
        convert,
        cut,
        open,
        read_accesses,
        trace_info,
        workload,
        workloads,
    )


def __dir__() -> list[str]:
    """The lazily imported API too, so that tab completion (Jupyter, IPython) finds it."""
    return sorted(set(globals()) | set(_API))


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'xlat' has no attribute {name!r}")
