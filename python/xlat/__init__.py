"""xlat: a workbench for studying virtual-memory address translation on real programs.

The compiled core lives in :mod:`xlat._native`; it is imported on first use so that pure-Python
parts (layouts, the mosaic runner, models) work even before the extension is built.
"""

from __future__ import annotations

__version__ = "0.1.0"
