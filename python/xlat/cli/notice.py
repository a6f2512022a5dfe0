"""A line on stderr when a long run has said nothing for a few seconds.

Simulating, tracing and experiments can run for minutes; without a progress bar (stderr is not a
terminal, or ``--no-progress``) they would print nothing until the end. ``still_running`` prints
one line after ``after`` seconds and a heartbeat line every ``every`` seconds after that, and
nothing at all when the work ends sooner (short runs and errors keep their output unchanged).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

AFTER_S = 3.0
#: Then one line every this many seconds while the work goes on (a heartbeat for logs, as pip and
#: cargo print lines when they have no terminal): "xlat: ... still running after 1 min 30 s".
EVERY_S = 30.0


def _elapsed(s: float) -> str:
    m, sec = divmod(round(s), 60)
    return f"{m} min {sec} s" if m else f"{sec} s"


@contextmanager
def still_running(
    message: str, after: float = AFTER_S, enabled: bool = True, every: float = EVERY_S
) -> Iterator[None]:
    """Print ``xlat: MESSAGE`` on stderr if the block is still running after ``after`` seconds,
    then ``xlat: ... still running after T`` every ``every`` seconds until it ends."""
    if not enabled:
        yield
        return
    done = threading.Event()

    def say() -> None:
        if done.wait(after):
            return
        print(f"xlat: {message}", file=sys.stderr, flush=True)
        waited = after
        while not done.wait(every):
            waited += every
            print(f"xlat: ... still running after {_elapsed(waited)}", file=sys.stderr, flush=True)

    t = threading.Thread(target=say, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()


def noting(message: str, show: bool, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` inside :func:`still_running` (``message``), unless ``show`` (a
    progress bar is drawn instead)."""
    with still_running(message, enabled=not show):
        return fn(*args, **kwargs)
