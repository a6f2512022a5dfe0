"""The programs the experiment traces and times: :class:`Program` and the built-in ones."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field

from xlat.experiment.common import ExperimentError

NUMPY_GATHER = """\
import numpy as np
rng = np.random.default_rng(1)
table = np.arange(1 << 26, dtype=np.int64)      # 512 MiB, from the heap pool
idx = rng.integers(0, table.size, 1 << 22)      # 4M random indices
total = 0
for _ in range(8):
    total += int(table[idx].sum())              # random 8-byte loads over 512 MiB
print(total)
"""

INDEX_JOIN = """\
import numpy as np
rng = np.random.default_rng(1)
gaps = rng.integers(1, 16, 1 << 24, dtype=np.uint8)
build = np.cumsum(gaps, dtype=np.int64)             # build side: 16M sorted int64 keys (128 MiB)
probe = rng.integers(0, int(build[-1]), 1 << 19)    # probe side: 512K keys
pos = np.searchsorted(build, probe)                 # index join: a binary search per probe key
hit = build[np.minimum(pos, build.size - 1)] == probe
print(int(hit.sum()), int(pos[hit].sum()))          # the matches, and where they are
"""


@dataclass(frozen=True)
class Program:
    """A command to trace and time. ``argv[0]`` is looked up on PATH; ``env`` is added to the
    environment of both the traced and the timed runs."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    apt: tuple[str, ...] = ()


def _python() -> str:
    # The interpreter binary itself, never a wrapper script (pyenv shims fork under hugetlb pools).
    return os.path.realpath(sys.executable)


def programs() -> dict[str, Program]:
    """The built-in experiment programs (real programs, small enough to trace whole)."""
    pyenv = {
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    return {
        "numpy-gather": Program(
            "numpy-gather",
            (_python(), "-c", NUMPY_GATHER),
            pyenv,
            "CPython + NumPy: 8 gathers of 4M random int64 from a 512 MiB table (whole run, ~0.47G accesses)",
        ),
        "index-join": Program(
            "index-join",
            (_python(), "-c", INDEX_JOIN),
            pyenv,
            "CPython + NumPy: an index join, 512K probe keys binary-searched (np.searchsorted) in 16M "
            "sorted build keys (whole run, ~0.38G accesses)",
        ),
        "sysbench-rnd": Program(
            "sysbench-rnd",
            (
                "sysbench",
                "memory",
                "--memory-block-size=256M",
                "--memory-total-size=256M",
                "--memory-access-mode=rnd",
                "--rand-seed=1",
                "--threads=1",
                "--time=0",  # no time limit: the (slower) traced run must do the same work
                "run",
            ),
            {},
            "sysbench 1.0 memory test: 32M random 8-byte writes over a 256 MiB buffer (whole run, ~0.5G accesses)",
            ("sysbench",),
        ),
    }


def resolve(prog: Program) -> Program:
    exe = prog.argv[0]
    found = exe if "/" in exe else shutil.which(exe)
    if not found or not os.access(found, os.X_OK):
        hint = f" (Debian package: apt-get install {' '.join(prog.apt)})" if prog.apt else ""
        raise ExperimentError(f"program '{exe}' of experiment '{prog.name}' was not found{hint}.")
    return dataclasses.replace(prog, argv=(found, *prog.argv[1:]))
