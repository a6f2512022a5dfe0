"""A line on stderr when a long run has said nothing for a few seconds.

Simulating, tracing and experiments can run for minutes; without a progress bar (stderr is not a
terminal, or ``--no-progress``) they would print nothing until the end. ``still_running`` prints
one line after ``after`` seconds, and nothing at all when the work ends sooner (short runs and
errors keep their output unchanged).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

AFTER_S = 3.0


@contextmanager
def still_running(message: str, after: float = AFTER_S, enabled: bool = True) -> Iterator[None]:
    """Print ``xlat: MESSAGE`` on stderr if the block is still running after ``after`` seconds."""
    if not enabled:
        yield
        return

    def say() -> None:
        print(f"xlat: {message}", file=sys.stderr, flush=True)

    timer = threading.Timer(after, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
