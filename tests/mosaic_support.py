"""What the mosaic allocator's tests share (tests/test_mosaic.py, tests/test_mosaic_corpus.py):
paths, the huge pages a session needs, the test programs of tests/mosaic_progs/.  The fixtures
that build the library and the programs and reserve huge pages (lib, progs, hugepages) are in
conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = ROOT / "configs" / "layouts"
PROGS = Path(__file__).resolve().parent / "mosaic_progs"

# The test programs built once per session (tests/mosaic_progs/NAME.c).
PROG_NAMES = (
    "mt_alloc",
    "probe",
    "mmap_stress",
    "madvise_zero",
    "env_clobber",
    "reuse_faults",
    "realloc_big",
)

# What the mosaic tests need available at once: all-2MB holds 2048 2MB pages; the exec check of
# the mixed layout holds two copies of it (parent and exec'd child): 2 x 432 2MB + 2 x 1GB.
NEED_2MB = 2100
NEED_1GB = 2


def require(layout, hugepages) -> None:
    """Skip (with the reason) if this machine cannot give ``layout`` its huge pages."""
    for page, n in layout.huge_pages_needed().items():
        if n and hugepages.get(page):
            pytest.skip(hugepages[page])
