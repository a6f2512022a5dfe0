"""The overlap time model from Python and the two experiment commands built on real runs:
``xlat experiment predict`` (partial simulation, seed 002) and ``xlat experiment calibrate``.
The end-to-end use of both on a real program's real runs is in test_experiment.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xlat.sim as sim
from xlat.experiment import predict as pr
from xlat.experiment.common import ExperimentError


def test_the_overlap_model_reports_beside_the_additive_one():
    w = "workload:gups?size=256MiB&accesses=200000"
    on = sim.simulate(w, cpu="zen4", set=["sim.data_through_caches=true", "time.model=overlap"])
    off = sim.simulate(w, cpu="zen4", set=["sim.data_through_caches=true"])
    assert on.counters == off.counters, "the model observes and changes no count"
    d = on.derived
    assert d["time.total_cycles"] == off.derived["time.total_cycles"]
    assert "time.overlap.total_cycles" not in off.derived
    assert d["time.base_cycles"] < d["time.overlap.total_cycles"]
    # gups' loads are independent: six walkers and the window overlap their walks and misses.
    serial = d["time.total_cycles"] + on.counters["data.cycles"] - 4 * on.counters["accesses"]
    assert d["time.overlap.total_cycles"] < serial / 2
    assert d["time.overlap.events_per_interval"] > 2


def test_the_overlap_model_without_the_data_caches_is_one_sentence():
    with pytest.raises(sim.ConfigError, match=r"set sim.data_through_caches = true\.$"):
        sim.simulate("workload:gups?accesses=1000", cpu="zen4", set=["time.model=overlap"])


def _dataset(tmp_path, rows):
    d = tmp_path / "exp"
    d.mkdir()
    pd.DataFrame(rows).to_csv(d / "dataset.csv", index=False)
    return d


def test_predict_recovers_a_linear_runtime_and_refuses_to_extrapolate(tmp_path):
    # R = 1e9 + 2 C cycles (2 GHz): poly1 is exact, its held-out-layout error 0.
    C = np.array([0.0, 1e8, 2e8, 3e8, 4e8, 5e8])
    rows = [
        {"layout": f"l{i}", "window_length": i * (2 << 20), "H": 1e6 + i, "M": c / 40, "C": c,
         "R_cycles": 1e9 + 2 * c, "R_s": (1e9 + 2 * c) / 2e9}
        for i, c in enumerate(C[::-1])
    ]  # fmt: skip
    d = _dataset(tmp_path, rows)
    p = pr.predict(d, (1e6 + 2, 2.5e8 / 40, 2.5e8), "half", model="poly1")
    assert p.R_cycles == pytest.approx(1.5e9)
    assert p.R_s == pytest.approx(0.75)
    assert p.speedup == pytest.approx((1e9 + 1e9) / 1.5e9)
    assert p.loo_max_error == pytest.approx(0, abs=1e-9)
    assert all(v == 0 for v in p.outside.values())
    # C twice the fitted maximum: refused, naming the input and the range.
    with pytest.raises(
        ExperimentError,
        match=r"C = 1,000,000,000 lies 100% of the fitted range outside it.*poly1 would extrapolate",
    ):
        pr.predict(d, (1e6 + 2, 1e9 / 40, 1e9), "far", model="poly1")
    far = pr.predict(d, (1e6 + 2, 1e9 / 40, 1e9), "far", model="poly1", extrapolate=True)
    assert far.R_cycles == pytest.approx(3e9) and "extrapolated" in far.format()


def test_predict_and_calibrate_cli_errors_are_one_sentence(xlat_cli, tmp_path):
    p = xlat_cli("experiment", "predict", str(tmp_path), check=False)
    assert p.returncode == 1 and p.stderr.strip().count("\n") == 0
    assert "dataset.csv" in p.stderr
    p = xlat_cli("experiment", "calibrate", "--fit", str(tmp_path), check=False)
    assert p.returncode == 1 and "is not a finished 'xlat experiment mosmodel' directory" in p.stderr
    p = xlat_cli("experiment", "calibrate", "--fit", str(tmp_path), "--cpi", "x", check=False)
    assert p.returncode == 1 and "--cpi = 'x' is not a comma-separated list of numbers." in p.stderr


def test_a_grid_evaluates_settings_on_the_same_events(tmp_path):
    # The grid's first setting equal to the main one gives the main one's total, exactly.
    w = "workload:gups?size=256MiB&accesses=100000"
    base = ["sim.data_through_caches=true", "time.model=overlap", "sim.base_cpi=0.5", "time.dep=0.25"]
    from xlat.experiment import calibrate as cal

    text = cal._config_text("zen4", [cal.Params(0.5, 0.25), cal.Params(0.5, 1.0, walkers=1, walk_scale=2.0)])
    cfg = tmp_path / "grid.toml"
    cfg.write_text(text)
    r = sim.simulate(w, config=str(cfg), set=base)
    d = r.derived
    assert d["time.overlap.grid.0.total_cycles"] == d["time.overlap.total_cycles"]
    assert d["time.overlap.grid.1.total_cycles"] > d["time.overlap.total_cycles"]
    assert json.loads(json.dumps(d))  # plain numbers
