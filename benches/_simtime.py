"""What the benchmarks that time ``xlat sim`` share (a module, not a benchmark: `make bench`
skips files starting with ``_``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def sim_timing(trace: str, args: list[str]) -> tuple[int, float]:
    """Run ``xlat sim TRACE ARGS`` (no progress, JSON discarded) and return the accesses it
    simulated and the simulation seconds it printed (input excluded)."""
    cmd = [sys.executable, "-m", "xlat", "sim", trace, *args, "--no-progress", "--json", os.devnull]
    err = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    m = re.search(r"simulated ([0-9,]+) accesses .* simulating ([0-9.]+) s", err)
    if not m:
        raise SystemExit(f"xlat sim printed no time: {err.strip()[-200:]}")
    return int(m.group(1).replace(",", "")), float(m.group(2))
