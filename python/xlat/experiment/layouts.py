"""The layouts the experiment compares: windows of 2MB pages over the used part of one pool
(:mod:`xlat.heuristics`), written as layout files."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from xlat.experiment.common import ExperimentError
from xlat.layout import MIB, Layout, Pool, parse_layout

if TYPE_CHECKING:
    import numpy as np

HUGE = 2 * MIB
#: layouts the experiment builds: "quick" (growing + random + one sliding set, 27 for n=8) or "paper" (54)
LAYOUT_SETS = ("quick", "paper")


def base_layout() -> Layout:
    return parse_layout('version = 1\nname = "all-4KB"\ndescription = "every pool on 4KB pages"')


def write_layout(layout: Layout, d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    p = d / f"{layout.name}.toml"
    p.write_text(layout.to_toml())
    return p


def build_layouts(
    pool: str,
    profile: np.ndarray,
    used: int,
    which: str = "quick",
    n: int = 8,
    seed: int = 0,
    xs: Sequence[float] = (0.2, 0.4, 0.6, 0.8),
) -> list[Layout]:
    """Layouts over the used part of ``pool`` (windows inside ``[0, used)``; the pool keeps its
    default size). ``quick``: growing + random + sliding at x=50%; ``paper``: the paper's set.
    Layouts with identical windows are kept once (the first name wins)."""
    from xlat import heuristics

    if which == "paper":
        lays = heuristics.paper_layouts(profile, used, pool, n, xs, seed)
    elif which == "quick":
        lays = (
            heuristics.growing_window(used, n, pool)
            + heuristics.random_window(used, n, seed, pool)
            + heuristics.sliding_window(profile, 0.5, n, pool, used)
        )
    else:
        raise ExperimentError(f"layout set {which!r} is not one of {', '.join(LAYOUT_SETS)}.")
    full = base_layout().pool(pool).size
    out, seen = [], set()
    for lay in lays:
        p = lay.pool(pool)
        if p.windows in seen:
            continue
        seen.add(p.windows)
        out.append(dataclasses.replace(lay, **{pool: Pool(pool, full, p.windows)}))
    return out
