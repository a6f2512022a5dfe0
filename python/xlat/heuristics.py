"""Layout-exploration heuristics of the partial-simulation paper (Agbarya et al. 2020, Section VI-B).

Each heuristic produces ``n + 1`` layouts of one pool whose single window of 2MB pages varies, so
that the layouts spread over the (H, M, C) space:

- **growing window**: layout ``i`` backs ``[0, i*S/n)`` of the pool with 2MB pages: the first
  layout is all 4KB, the last all 2MB;
- **random window**: each layout has a window of random start and length;
- **sliding window**: find the smallest *hot region*, a contiguous range holding ``x`` of all
  L2-TLB misses (with 4KB pages); layout ``k`` is that region's window slid by ``k/n`` of its
  length, towards the low addresses when the region sits in the upper half of the pool and towards
  the high addresses otherwise, so it covers less and less of the hot region.

The paper's set is 54 layouts per workload: growing and random with ``n = 8`` (9 each) and sliding
with ``n = 8`` for ``x`` in 20/40/60/80% (36): :func:`paper_layouts`.

Offsets are 2MB-aligned: window bounds are rounded down to 2MB. Miss profiles are counts of
L2-TLB misses per 2MB region of the pool (index ``j`` covers offsets ``[j*2MiB, (j+1)*2MiB)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from xlat.layout import MIB, POOL_NAMES, Layout, Pool, Window, parse_layout

__all__ = [
    "growing_window",
    "hot_region",
    "paper_layouts",
    "random_window",
    "sliding_window",
    "window_layout",
    "write_layouts",
]

HUGE = 2 * MIB


def window_layout(
    pool: str, size: int, start: int, length: int, name: str, base: Layout | None = None
) -> Layout:
    """A layout whose ``pool`` of ``size`` bytes has one 2MB window ``[start, start+length)``
    (none if ``length`` is 0); other pools come from ``base`` (default sizes without windows)."""
    if pool not in POOL_NAMES or pool == "file":
        raise ValueError(f"pool {pool!r} cannot hold 2MB windows (use heap or anon)")
    if size <= 0 or size % HUGE:
        raise ValueError(f"pool size {size} must be a positive multiple of 2MiB")
    if start % HUGE or length % HUGE or start < 0 or length < 0 or start + length > size:
        raise ValueError(
            f"window [{start}, {start + length}) must be 2MiB-aligned and inside the pool of {size} bytes"
        )
    base = base or parse_layout("version = 1")
    windows = (Window(start, length, HUGE),) if length else ()
    pools = {p.name: p for p in base.pools}
    pools[pool] = Pool(pool, size, windows)
    return Layout(heap=pools["heap"], anon=pools["anon"], file=pools["file"], name=name,
                  description=f"{pool}: 2MB pages on [{start:#x}, {start + length:#x}) of {size:#x}")  # fmt: skip


def _down(x: float) -> int:
    return int(x) // HUGE * HUGE


def growing_window(size: int, n: int = 8, pool: str = "heap", base: Layout | None = None) -> list[Layout]:
    """Layouts ``i = 0..n``: 2MB pages on ``[0, i*size/n)``."""
    _check_n(n)
    return [
        window_layout(pool, size, 0, _down(i * size / n), f"growing-{i}of{n}", base) for i in range(n + 1)
    ]


def random_window(
    size: int, n: int = 8, seed: int = 0, pool: str = "heap", base: Layout | None = None
) -> list[Layout]:
    """``n + 1`` layouts, each with one window of uniformly random 2MB-aligned start and length."""
    _check_n(n)
    rng = np.random.default_rng(seed)
    units = size // HUGE
    out = []
    for i in range(n + 1):
        start = int(rng.integers(0, units))
        length = int(rng.integers(1, units - start + 1))
        out.append(window_layout(pool, size, start * HUGE, length * HUGE, f"random-{i}-seed{seed}", base))
    return out


def hot_region(misses: Sequence[float], x: float) -> tuple[int, int]:
    """The smallest run of regions ``[lo, hi)`` holding at least fraction ``x`` of all misses
    (the lowest such run when several tie)."""
    m = np.asarray(misses, dtype=float)
    if m.ndim != 1 or len(m) == 0 or (m < 0).any() or not np.isfinite(m).all():
        raise ValueError("a miss profile is a non-empty sequence of non-negative counts")
    if not 0 < x <= 1:
        raise ValueError(f"x={x} must be a fraction in (0, 1]")
    total = m.sum()
    if total == 0:
        raise ValueError("the miss profile has no misses, so there is no hot region")
    need = x * total * (1 - 1e-12)
    best = (0, len(m))
    acc, lo = 0.0, 0
    for hi in range(len(m)):
        acc += m[hi]
        while lo < hi and acc - m[lo] >= need:
            acc -= m[lo]
            lo += 1
        if acc >= need and hi + 1 - lo < best[1] - best[0]:
            best = (lo, hi + 1)
    return best


def sliding_window(misses: Sequence[float], x: float, n: int = 8, pool: str = "heap", size: int | None = None,
                   base: Layout | None = None) -> list[Layout]:  # fmt: skip
    """Layouts ``k = 0..n``: the hot region for fraction ``x`` slid by ``k/n`` of its length."""
    _check_n(n)
    lo, hi = hot_region(misses, x)
    size = size if size is not None else len(misses) * HUGE
    if size < len(misses) * HUGE:
        raise ValueError(
            f"the miss profile covers {len(misses)} 2MiB regions, more than the pool of {size} bytes"
        )
    start, length = lo * HUGE, (hi - lo) * HUGE
    # Slide away from the pool edge the region is nearer to, so the window has room to move.
    down = (start + length / 2) > size / 2
    out = []
    for k in range(n + 1):
        shift = _down(k * length / n)
        s = start - shift if down else start + shift
        a, b = max(0, s), min(size, s + length)
        out.append(window_layout(pool, size, a, max(0, b - a), f"sliding-x{round(x * 100)}-{k}of{n}", base))
    return out


def paper_layouts(misses: Sequence[float], size: int | None = None, pool: str = "heap", n: int = 8,
                  xs: Sequence[float] = (0.2, 0.4, 0.6, 0.8), seed: int = 0,
                  base: Layout | None = None) -> list[Layout]:  # fmt: skip
    """The paper's 54 layouts (for the defaults): growing, random and sliding windows."""
    size = size if size is not None else len(misses) * HUGE
    out = growing_window(size, n, pool, base) + random_window(size, n, seed, pool, base)
    for x in xs:
        out += sliding_window(misses, x, n, pool, size, base)
    return out


def write_layouts(layouts: Sequence[Layout], directory: str | Path) -> list[Path]:
    """Write each layout to ``directory/NAME.toml``; returns the paths."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, lay in enumerate(layouts):
        p = d / f"{lay.name or f'layout-{i}'}.toml"
        p.write_text(lay.to_toml())
        paths.append(p)
    return paths


def _check_n(n: int) -> None:
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} must be a positive integer")
