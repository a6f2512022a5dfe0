"""Run unmodified programs on a chosen mosaic of 4KB, 2MB and 1GB pages, and check that they got it.

``run`` starts a program with ``libxlat_mosaic.so`` preloaded (native/mosaic, docs/mosaic.md) and the
layout passed in ``XLAT_MOSAIC_*`` environment variables.  ``verify`` reads the ``/proc/PID/smaps``
the library saved when the program exited and reports, per window, the page size actually obtained.
``reserve``/``status``/``release`` manage the kernel's hugetlb pools.

The package: :mod:`~xlat.mosaic.runner` (the library, its environment, ``run``),
:mod:`~xlat.mosaic.hugepages` (the kernel's pools), :mod:`~xlat.mosaic.verify` (pages obtained
per window) and :mod:`~xlat.mosaic.errors`; everything public is importable from ``xlat.mosaic``.
The commands ``xlat run`` and ``xlat hugepages`` are :mod:`xlat.cli.run`; ``python -m xlat.mosaic``
runs them without the main CLI.

Nothing here imports :mod:`xlat._native`; this package works before the Rust extension is built.
"""

from __future__ import annotations

from xlat.mosaic.errors import EXIT_NOT_HONOURED, EXIT_USAGE, MosaicError
from xlat.mosaic.hugepages import check_huge_pages, fork_note, page_name, release, reserve, status
from xlat.mosaic.runner import library_path, mosaic_env, run
from xlat.mosaic.verify import (
    MapFile,
    RunReport,
    VerifyReport,
    Vma,
    WindowCheck,
    check,
    parse_map,
    parse_smaps,
    verify_live,
    verify_report,
    verify_run,
)

__all__ = [
    "EXIT_NOT_HONOURED",
    "EXIT_USAGE",
    "MapFile",
    "MosaicError",
    "RunReport",
    "VerifyReport",
    "Vma",
    "WindowCheck",
    "check",
    "check_huge_pages",
    "fork_note",
    "library_path",
    "mosaic_env",
    "page_name",
    "parse_map",
    "parse_smaps",
    "release",
    "reserve",
    "run",
    "status",
    "verify_live",
    "verify_report",
    "verify_run",
]
