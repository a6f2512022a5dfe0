"""docs/mosaic.md's pool-use table: for each program, the native run's peak RSS (the child's own
VmHWM) against the pools it reaches under configs/layouts/all-2MB.toml in thp mode (the heap and anon
high-water marks that `xlat run --verify` prints) and the resident memory in them at exit, the
program ending with os._exit(0) so that its structure is still alive.

  python scripts/mosaic-pool-use.py [NAME-SUBSTRING ...]    (XLAT_MOSAIC_LIB picks another build)"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from xlat import mosaic
from xlat.layout import MIB, load_layout

LAYOUT = Path(__file__).resolve().parents[1] / "configs" / "layouts" / "all-2MB.toml"
PEAK = "\nimport sys; print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')), file=sys.stderr)"
ALIVE = "\nimport os, sys; sys.stdout.flush(); os._exit(0)"
PROGRAMS = {
    "array 60M": "import array; a = array.array('q', range(60_000_000))",
    "array 20M": "import array; a = array.array('q', range(20_000_000))",
    "bytearray 200x1MiB": "b = bytearray()\nfor i in range(200): b += bytes([i % 251]) * (1 << 20)",
    "dict 4M": "d = {i: i for i in range(4_000_000)}",
}


def main() -> int:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("XLAT_MOSAIC_")}
    for name, code in PROGRAMS.items():
        if sys.argv[1:] and not any(s in name for s in sys.argv[1:]):
            continue
        native = subprocess.run([sys.executable, "-c", code + PEAK], capture_output=True, env=env, check=True)
        peak = int(native.stderr) * 1024
        reports: list[mosaic.VerifyReport] = []
        rc = mosaic.run(
            load_layout(LAYOUT), [sys.executable, "-c", code + ALIVE], mode="thp", verify=True,
            reports=reports, report_to=io.StringIO(),
        )  # fmt: skip
        r = reports[0]
        used = r.used["heap"] + r.used["anon"]
        res = sum(c.rss_kb for c in r.checks if c.pool in ("heap", "anon")) * 1024
        print(
            f"{name:20} native peak RSS {peak / MIB:5.0f} MiB  pool use {used / MIB:5.0f} MiB ({used / peak:.2f}x)"
            f"  resident {res / MIB:5.0f} MiB ({res / peak:.2f}x)  heap {r.used['heap'] / MIB:.0f} MiB,"
            f" anon {r.used['anon'] / MIB:.0f} MiB  exit {rc}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
