"""Windows of a trace: which accesses a command reads and which it counts (docs/windows.md).

Every command that reads a trace takes the same three numbers, in accesses (memory references,
as drcachesim's ``-skip_refs``/``-warmup_refs``/``-sim_refs``):

- ``skip``: accesses passed over first. They are not simulated, but their side events (mmap,
  munmap, brk, thread and address-space switches) are kept, so the OS model's mappings are
  those of the whole trace; pages first touched in the skipped part fault when next touched.
- ``warmup``: accesses simulated after the skip without being counted: the TLBs, caches, page
  tables and the OS model see them, and every counter starts after them (a gauge, such as
  ``os.frames_in_use``, is reported as it is at the end). Only the simulating commands have it.
- ``limit``: accesses counted after the warm-up (``None``: to the end of the trace).
"""

from __future__ import annotations

from typing import NamedTuple

from xlat import _native

__all__ = ["Window", "window"]


class Window(NamedTuple):
    skip: int = 0
    warmup: int = 0
    limit: int | None = None

    @property
    def whole(self) -> bool:
        return self == Window()

    def native(self) -> tuple[int, int, int | None] | None:
        """The form ``xlat._native`` takes (None: the whole trace)."""
        return None if self.whole else (self.skip, self.warmup, self.limit)


def _count(name: str, v: object, least: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _native.ConfigError(f"{name} takes a whole number of accesses, not {v!r}.")
    if v < least or v >= 1 << 64:
        more = "at least 1 access" if least else "0 or more accesses"
        raise _native.ConfigError(f"{name} takes {more} (below 2^64), not {v}.")
    return v


def window(skip: int = 0, warmup: int = 0, limit: int | None = None) -> Window:
    """A checked window; a bad value is one sentence (``ConfigError``) naming the argument."""
    return Window(
        _count("skip", skip, 0),
        _count("warmup", warmup, 0),
        None if limit is None else _count("limit", limit, 1),
    )
