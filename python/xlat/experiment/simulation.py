"""Steps 2 and 4: the simulated side. The 4KB miss profile that places the layouts' windows, and
H, M, C of every layout, with the pools at their traced addresses. Results are cached per preset."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xlat.experiment.common import ExperimentError, bar, say
from xlat.experiment.layouts import HUGE, base_layout, write_layout
from xlat.layout import Layout

if TYPE_CHECKING:
    import numpy as np


def cached_result(path: Path, cpu: str):
    """The simulation result saved at ``path`` if it was made with preset ``cpu``, else None."""
    from xlat.sim import SimResult

    if not path.exists():
        return None
    r = SimResult(json.loads(path.read_text()))
    return r if r.config_name == cpu else None


def pools_at(meta: dict[str, Any]) -> list[str]:
    return [f"os.pools_at.{p}={meta['pools'][p]['start']}" for p in ("heap", "anon", "file")]


def miss_profile(
    trace: Path, meta: dict[str, Any], cpu: str, out: Path, log=None
) -> tuple[str, np.ndarray, int]:
    """Walks per 2MB region of the pool with most walks (heap or anon) under 4KB pages.
    Returns (pool, profile over the pool's used regions, used bytes rounded up to 2MiB)."""
    import numpy as np

    from xlat.sim import simulate

    cached = out / "profile-4KB.json"
    r = cached_result(cached, cpu)
    if r is None:
        lay = write_layout(base_layout(), out / "layouts")
        say(log, "profile: simulating the trace with 4KB pages ...")
        r = simulate(
            str(trace),
            cpu=cpu,
            set=[*pools_at(meta), "sim.miss_profile=true"],
            layout=str(lay),
            progress=bar(log),
        )
        cached.write_text(r.to_json())
    prof = r.miss_profile or {}
    best = None
    for pool in ("heap", "anon"):
        p = meta["pools"][pool]
        used = -(-max(p["high_water"], HUGE) // HUGE) * HUGE
        m = np.zeros(used // HUGE)
        for addr, n in prof.items():
            if p["start"] <= addr < p["start"] + used:
                m[(addr - p["start"]) // HUGE] += n
        if best is None or m.sum() > best[1].sum():
            best = (pool, m, used)
    assert best is not None
    total = sum(prof.values())
    if best[1].sum() == 0:
        raise ExperimentError(
            "the program has no L2-TLB misses in its heap or anon pool, so no layout can change them."
        )
    say(
        log,
        f"profile: {best[1].sum() / max(total, 1):.1%} of {total:,} walks fall in the {best[0]} pool "
        f"({best[2] >> 20} MiB used)",
    )
    return best


def simulate_layouts(
    trace: Path,
    meta: dict[str, Any],
    layouts: list[Layout],
    cpu: str,
    out: Path,
    threads: int | None = None,
    log=None,
    sets: tuple[str, ...] = (),
) -> dict[str, dict[str, float]]:
    """H, M, C (and a few more metrics) of every layout; writes the layouts to ``out/layouts/``;
    results cached in ``out/sim/NAME.json`` and reused when made with the same preset (so a
    caller passing ``sets``, overrides of the preset, gives each set of them its own ``out``)."""
    from xlat.sim import Run, simulate_many

    paths = {lay.name: write_layout(lay, out / "layouts") for lay in layouts}
    d = out / "sim"
    d.mkdir(parents=True, exist_ok=True)
    cached = {lay.name: cached_result(d / f"{lay.name}.json", cpu) for lay in layouts}
    todo = [lay for lay in layouts if cached[lay.name] is None]
    if todo:
        say(log, f"simulate: {len(todo)} layouts ({cpu} preset, pools at their traced addresses) ...")
        runs = [Run(cpu=cpu, set=(*pools_at(meta), *sets), layout=str(paths[lay.name])) for lay in todo]
        t0 = time.perf_counter()
        for lay, r in zip(
            todo, simulate_many(str(trace), runs, threads=threads, progress=bar(log)), strict=True
        ):
            (d / f"{lay.name}.json").write_text(r.to_json())
            cached[lay.name] = r
        say(log, f"simulate: {time.perf_counter() - t0:.0f} s")
    res = {}
    for lay in layouts:
        r = cached[lay.name]
        c, dv = r.counters, r.derived
        res[lay.name] = {
            "H": dv["H"],
            "M": dv["M"],
            "C": dv["C"],
            "walks_pki": dv["walks_pki"],
            "instructions": c["instructions"],
            "accesses": c["accesses"],
            "faults_4k": c["os.faults_4k"],
            "faults_2m": c["os.faults_2m"],
            "huge_fallbacks": c["os.huge_fallbacks"],
        }
    return res
