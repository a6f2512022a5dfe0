"""How the result tables print numbers, one rule for every cell:

- a count (accesses, misses, walks, cycles, faults) is exact, with thousands separators:
  ``1,234,567``;
- a ratio (MPKI, loads or cycles per walk, energy) has four significant digits, never an
  exponent: ``161.0``, ``1.242``, ``0.01234``; from 1,000 up it is rounded to a whole number
  with separators (``12,346``), the precision a count has;
- a share is a percentage with one decimal: ``12.3%``;
- a value the simulation could not compute (none, infinite, not a number) prints as ``n/a``.
"""

from __future__ import annotations

import math
import textwrap

SIG_DIGITS = 4

LEGEND = textwrap.fill(
    "H: translations that missed the first-level TLB and hit a larger TLB level; M: page walks "
    "(misses in every TLB level); C: cycles spent in page walks (the inputs of docs/models.md). "
    f"Counts are exact; ratios have {SIG_DIGITS} significant digits.",
    width=100,
)


def _bad(v: float | None) -> bool:
    return v is None or not math.isfinite(v)


def count(v: float | None) -> str:
    """An exact count: ``1,234``."""
    if _bad(v):
        return "n/a"
    assert v is not None
    return f"{round(v):,}"


def ratio(v: float | None, digits: int = SIG_DIGITS) -> str:
    """``digits`` significant digits, fixed point: ``161.0``, ``1.242``, ``12,346``."""
    if _bad(v):
        return "n/a"
    assert v is not None
    if v == 0:
        return "0"
    decimals = digits - 1 - math.floor(math.log10(abs(v)))
    if decimals <= 0:
        return f"{v:,.0f}"
    return f"{v:.{decimals}f}"


def share(v: float | None) -> str:
    """A fraction as a percentage with one decimal."""
    if _bad(v):
        return "n/a"
    assert v is not None
    return f"{100 * v:.1f}%"
