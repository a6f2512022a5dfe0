"""What every step of the experiment shares: its error, progress messages and the mosaic
allocator's report."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from xlat._native import XlatError


class ExperimentError(XlatError, RuntimeError):
    """A problem for the user to fix; ``str(err)`` is one sentence."""


def say(log: Callable[[str], None] | None, msg: str) -> None:
    if log:
        log(msg)


def bar(log: Callable[[str], None] | None) -> bool:
    """Whether the long steps (tracing, simulating) draw a progress bar: when the experiment
    reports its progress (not ``--quiet``) and stderr is a terminal."""
    return log is not None and sys.stderr.isatty()


def read_map(report_dir: str, pid: int | None = None):
    """The allocator's map report (:class:`xlat.mosaic.MapFile`) in ``report_dir``: of ``pid``, or
    of the program itself (the process whose parent left no map: forked and exec'd children of the
    program write map files too)."""
    from xlat.mosaic import parse_map

    maps = sorted(Path(report_dir).glob("map.*"))
    if pid is not None:
        maps = [m for m in maps if m.name == f"map.{pid}"]
    if not maps:
        raise ExperimentError(
            f"the mosaic allocator wrote no report in {report_dir} (did the program start?)."
        )
    parsed = [parse_map(m.read_text()) for m in maps]
    pids = {m.pid for m in parsed}
    return next((m for m in parsed if m.ppid not in pids), parsed[0])
