"""The mosaic allocator's error and exit statuses (a leaf: the other modules import it)."""

from __future__ import annotations

#: exit status of ``xlat run --verify`` when the program succeeded but the layout was not honoured
EXIT_NOT_HONOURED = 3
#: exit status for errors detected before the program starts (bad layout, missing program, ...)
EXIT_USAGE = 2


class MosaicError(Exception):
    """A problem for the user to fix; ``str(err)`` is one sentence."""
