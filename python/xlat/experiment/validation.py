"""Step 7 (``--validate-1g``): Agbarya et al.'s case study (Section VII-D). The models, fitted on
the 4KB/2MB layouts, predict a layout none of them saw, the used part of the profiled pool on
1GB pages, from its simulated H, M, C; the layout is run for real and each model's error is its
prediction against that runtime.

The 1GB layout is timed after the others, so the machine may run at another speed than when
they were timed. It is therefore timed in rounds with the all-2MB layout (the same rounds,
order drawn afresh, ``runs-1g.csv``), and its runtime is the all-2MB layout's runtime in the
dataset times the ratio of the two in those rounds (each run divided by the machine's drift, as
the main runs are). A rerun reuses those runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from xlat.experiment.common import ExperimentError, say

GIB = 1 << 30
#: The layout's name (in sim/, layouts/ and runs-1g.csv).
NAME = "all-1GB"


def layout_1g(pool: str, used: int, base):
    """``base`` with the first ``used`` bytes of ``pool`` (rounded up to 1GiB) on 1GB pages."""
    from xlat.layout import Layout, Pool, Window

    pools = {p.name: p for p in base.pools}
    old = pools[pool]
    length = -(-max(used, 1) // GIB) * GIB
    if length > old.size:
        raise ExperimentError(f"the {pool} pool ({old.size >> 20} MiB) cannot hold {length >> 30} 1GB pages.")
    pools[pool] = Pool(pool, old.size, (Window(0, length, GIB),))
    return Layout(heap=pools["heap"], anon=pools["anon"], file=pools["file"], name=NAME,
                  description=f"{pool}: 1GB pages on [0, {length:#x})")  # fmt: skip


def validate_1g(
    prog,
    trace: Path,
    meta: dict[str, Any],
    pool: str,
    used: int,
    lays: list,
    df,
    fitted: dict[str, Any],
    cpu: str,
    out: Path,
    *,
    metric: str,
    reps: int,
    freq: float,
    seed: int,
    threads: int | None,
    reserve_2m: bool = False,
    log=None,
) -> dict[str, Any]:
    """Simulate and time the 1GB layout, predict it with every model in ``fitted``; the result
    (also ``out/validation-1g.json``). The 1GB pages are reserved here (and the all-2MB layout's
    2MB pages when ``reserve_2m``), and released after. Raises :class:`ExperimentError` when they
    cannot be had."""
    from xlat import mosaic
    from xlat.experiment.simulation import simulate_layouts
    from xlat.experiment.timing import drift_corrected, measure, prefault_env

    names = [lay.name for lay in lays]
    two = max(
        (n for n in names if n.startswith("growing-")), key=lambda n: int(n.split("-")[1].split("of")[0])
    )
    lay2m = lays[names.index(two)]
    lay1g = layout_1g(pool, used, lay2m)
    sim = simulate_layouts(trace, meta, [lay1g], cpu, out, threads, log)[NAME]
    need = lay1g.huge_pages_needed()["1GB"]
    need_2m = lay2m.huge_pages_needed()["2MB"]
    added = added_2m = 0
    say(
        log, f"validate: reserving {need} 1GB huge pages" + (f" and {need_2m} 2MB ones" if reserve_2m else "")
    )
    try:
        try:
            added = mosaic.reserve(need, "1GB")
        except mosaic.MosaicError as e:
            msg = str(e).rstrip(".")
            raise ExperimentError(
                f"the 1GB layout needs {need} 1GB huge pages and {msg[0].lower()}{msg[1:]}; reserve them early "
                f"after boot (`xlat hugepages reserve {need} --page 1GB`) and run again."
            ) from None
        if reserve_2m:
            try:
                added_2m = mosaic.reserve(need_2m, "2MB")
            except mosaic.MosaicError as e:
                raise ExperimentError(
                    f"the all-2MB layout it runs beside needs {need_2m} 2MB huge pages: {e}"
                ) from None
        measure(prog, [lay2m, lay1g], out, metric, 0.0, reps, reps, log, prefault_env(meta["pools"]), seed,
                runs_file="runs-1g.csv")  # fmt: skip
    finally:
        if added:
            mosaic.release(added, "1GB")
        if added_2m:
            mosaic.release(added_2m, "2MB")
    import pandas as pd

    runs = pd.read_csv(out / "runs-1g.csv")
    timed = runs[runs["rep"].astype(str) != "warmup"]
    fixed = drift_corrected(timed["layout"].to_numpy(), timed[metric].to_numpy(float))
    r1 = float(np.median(fixed[(timed["layout"] == NAME).to_numpy()]))
    r2 = float(np.median(fixed[(timed["layout"] == two).to_numpy()]))
    ratio = r1 / r2
    R = float(df.set_index("layout").loc[two, "R_cycles"]) * ratio
    X = np.array([[sim["H"], sim["M"], sim["C"]]], dtype=float)
    errors = {}
    for m, model in fitted.items():
        errors[m] = float((model.predict(X)[0] - R) / R)
    res = {
        "layout": NAME,
        "pages_1g": need,
        "against": two,
        "reps": int((timed["layout"] == NAME).sum()),
        "ratio_to_2mb": ratio,
        "R_cycles": R,
        "R_s": R / (freq * 1e9),
        "H": sim["H"],
        "M": sim["M"],
        "C": sim["C"],
        "errors": errors,
        "honoured": bool((runs["honoured"] == 1).all()),
    }
    (out / "validation-1g.json").write_text(json.dumps(res, indent=2))
    return res
