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

The package, one module per concern: :mod:`~xlat.experiment.program` (the programs),
:mod:`~xlat.experiment.recording` (step 1), :mod:`~xlat.experiment.simulation` (steps 2 and 4),
:mod:`~xlat.experiment.layouts` (step 3), :mod:`~xlat.experiment.timing` (step 5),
:mod:`~xlat.experiment.fitting` and :mod:`~xlat.experiment.report` (step 6), and
:mod:`~xlat.experiment.mosmodel`, which runs them in order. Everything public is importable from
``xlat.experiment``; the command line is :mod:`xlat.cli.experiment`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Imported on first use (PEP 562), so that importing one submodule (the CLI's parser reads
# layouts, programs and timing's metric names) does not import numpy and scikit-learn.
_API = {
    "ExperimentError": "common",
    "fit_models": "fitting",
    "HUGE": "layouts",
    "LAYOUT_SETS": "layouts",
    "build_layouts": "layouts",
    "mosmodel_experiment": "mosmodel",
    "INDEX_JOIN": "program",
    "NUMPY_GATHER": "program",
    "Program": "program",
    "programs": "program",
    "record": "recording",
    "ExperimentResult": "report",
    "plot": "report",
    "miss_profile": "simulation",
    "simulate_layouts": "simulation",
    "ESTIMATORS": "timing",
    "RUNS_FIELDS": "timing",
    "RUNTIME_METRICS": "timing",
    "cpu_ghz": "timing",
    "drift_corrected": "timing",
    "hardware_counters": "timing",
    "measure": "timing",
}

__all__ = sorted(_API)

if TYPE_CHECKING:  # pragma: no cover
    from xlat.experiment.common import ExperimentError  # noqa: F401
    from xlat.experiment.fitting import fit_models  # noqa: F401
    from xlat.experiment.layouts import HUGE, LAYOUT_SETS, build_layouts  # noqa: F401
    from xlat.experiment.mosmodel import mosmodel_experiment  # noqa: F401
    from xlat.experiment.program import INDEX_JOIN, NUMPY_GATHER, Program, programs  # noqa: F401
    from xlat.experiment.recording import record  # noqa: F401
    from xlat.experiment.report import ExperimentResult, plot  # noqa: F401
    from xlat.experiment.simulation import miss_profile, simulate_layouts  # noqa: F401
    from xlat.experiment.timing import (  # noqa: F401
        ESTIMATORS,
        RUNS_FIELDS,
        RUNTIME_METRICS,
        cpu_ghz,
        drift_corrected,
        hardware_counters,
        measure,
    )


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(f"xlat.experiment.{_API[name]}"), name)
    raise AttributeError(f"module 'xlat.experiment' has no attribute {name!r}")
