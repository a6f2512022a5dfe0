"""How the documents' reports write their figures (shared by every document module)."""

from __future__ import annotations

from collections.abc import Callable


def pct(x: float | None, digits: int = 1) -> str:
    """``x`` as a percentage; "-" for a missing figure (None or NaN)."""
    return "-" if x is None or x != x else f"{100 * x:.{digits}f}%"


def mean(xs) -> float:
    """The arithmetic mean of the figures that exist (NaN when none does)."""
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else float("nan")


def span(xs, f: Callable[[float], str] = pct) -> str:
    """The smallest and largest of the figures that exist, written by ``f`` ("a to b", or one
    figure when they write the same; "-" when none exists)."""
    xs = [x for x in xs if x == x]
    if not xs:
        return "-"
    a, b = f(min(xs)), f(max(xs))
    return a if a == b else f"{a} to {b}"
