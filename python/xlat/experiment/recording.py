"""Step 1: trace the whole run of a program under QEMU with the mosaic allocator preloaded (all
4KB pages), and keep where the allocator put its pools."""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from xlat.experiment.common import ExperimentError, bar, read_map, say
from xlat.experiment.layouts import base_layout
from xlat.experiment.program import Program

#: outputs computed from the trace, stale once the trace is recorded again
DERIVED = ("profile-4KB.json", "sim", "runs.csv")
#: how the allocator runs in the traced and the timed runs alike: freed memory stays populated
#: (as in Mosalloc's pools), so that reusing it costs no page faults that no H, M, C describe
ALLOCATOR = {"keep_freed": True}


def record(prog: Program, out: Path, log=None) -> dict[str, Any]:
    """Trace the whole run of ``prog`` under the mosaic allocator (all 4KB) into ``out/trace.xlat``;
    returns and saves ``out/pools.json`` (pool starts, sizes and high-water marks of the traced run)."""
    from xlat import mosaic, tracing

    trace_path = out / "trace.xlat"
    meta_path = out / "pools.json"
    if trace_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if (
            meta.get("argv") == list(prog.argv)
            and meta.get("env") == prog.env
            and meta.get("allocator") == ALLOCATOR
        ):
            say(log, f"trace: reusing {trace_path}")
            return meta
    for name in DERIVED:  # a new trace: what was computed from the old one no longer holds
        p = out / name
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink(missing_ok=True)
    rep = tempfile.mkdtemp(prefix="xlat-exp-")
    try:
        env = mosaic.mosaic_env(base_layout(), "hugetlb", report_dir=rep, base={}, **ALLOCATOR)
        qargs: list[str] = []
        for k, v in {**prog.env, **env}.items():
            qargs += ["-E", f"{k}={v}"]
        say(log, f"trace: {prog.name} under QEMU with the mosaic allocator (whole run) ...")
        t0 = time.perf_counter()
        summary = tracing.trace(list(prog.argv), str(trace_path), qemu_args=qargs, progress=bar(log))
        if summary["status"] != 0:
            raise ExperimentError(f"the traced run of {prog.name} exited with status {summary['status']}.")
        first = summary["processes"][0]
        pools = read_map(rep, first["pid"]).pools
    finally:
        shutil.rmtree(rep, ignore_errors=True)
    meta = {
        "argv": list(prog.argv),
        "env": prog.env,
        "allocator": ALLOCATOR,
        "pools": pools,
        "accesses": first["accesses"],
        "trace_bytes": first["bytes"],
        "trace_seconds": round(time.perf_counter() - t0, 2),
    }
    meta_path.write_text(json.dumps(meta, indent=2))
    say(log, f"trace: {first['accesses']:,} accesses, {first['bytes'] / 2**20:.0f} MiB")
    return meta
