"""``xlat reproduce mosmodel``: Agbarya et al. 2020's findings from real runs timed here. The
quick run (the C gather program under 9 layouts, 2 runs each) checks that the tables are the
experiment's own figures, that a rerun reuses every timed run, that the all-1GB layout's error is
each fitted model's prediction against its runtime (Section VII-D), and the figures a hand
derivation fixes (the hot region of a miss profile, Table 4 against the presets, the host's
preset, the 1GB layout's pages)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from xlat.experiment.timing import host_preset
from xlat.reproduce import mosmodel as doc
from xlat.reproduce import run


@pytest.fixture(scope="module")
def report(reproduce_out):
    if os.geteuid() != 0:
        pytest.skip("the real runs reserve huge pages, which needs root")
    return run("mosmodel", str(reproduce_out / "mosmodel"), quick=True)


def test_hot_region_is_the_shortest_run_holding_the_share(tmp_path):
    p = tmp_path / "profile.csv"
    np.savetxt(p, [0, 0, 8, 1, 1, 0, 0, 0, 0, 0], fmt="%d")
    assert doc._hot_region(str(p), 0.8) == pytest.approx(1 / 10)  # region 2 alone holds 8 of 10
    np.savetxt(p, [5, 0, 0, 5], fmt="%d")
    assert doc._hot_region(str(p), 0.8) == pytest.approx(4 / 4)  # 80% needs both ends: all four
    np.savetxt(p, [1, 1, 1, 1, 1], fmt="%d")
    assert doc._hot_region(str(p), 0.8) == pytest.approx(4 / 5)
    assert np.isnan(doc._hot_region(str(tmp_path / "none.csv"), 0.8))


def test_presets_have_table_4s_tlbs():
    assert doc._table4() == doc.TABLE4


def test_host_preset_maps_cpuinfo_to_the_nearest_core():
    def info(vendor: str, family: int, model: int) -> str:
        return f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\nmodel name\t: X\n\n"

    assert host_preset(info("GenuineIntel", 6, 207))[0] == "sapphirerapids"  # Emerald Rapids
    assert host_preset(info("GenuineIntel", 6, 85))[0] == "skylake"  # Skylake-SP, Cascade Lake
    assert host_preset(info("GenuineIntel", 6, 45))[0] == "sandybridge"
    assert host_preset(info("AuthenticAMD", 25, 17))[0] == "zen4"
    preset, host = host_preset(info("GenuineIntel", 6, 1))
    assert preset is None and "family 6 model 1" in host


def test_tables_are_the_experiments_figures(report, reproduce_out):
    assert report.checks and all(report.checks.values()), report.checks
    assert len(report.findings) >= 25
    errors = pd.read_csv(reproduce_out / "mosmodel" / "results" / "gather" / "errors.csv").set_index("model")
    fig5 = next(t for t in report.tables if t.title.startswith("Maximal error per program"))
    row = dict(zip(fig5.columns, fig5.rows[0], strict=True))
    assert row["program"] == "gather" and len(fig5.columns) == 1 + 9
    for m in doc.MODELS:
        assert row[m] == f"{100 * errors.loc[m, 'max_error']:.2f}%"
    ds = pd.read_csv(reproduce_out / "mosmodel" / "results" / "gather" / "dataset.csv")
    runs = next(t for t in report.tables if t.title == "The runs")
    assert runs.rows[0][1] == len(ds) and (ds["reps"] >= doc.QUICK["min_reps"]).all()
    assert all(os.path.exists(p) for p in report.plots) and len(report.plots) == 2
    by = {f.claim: f for f in report.findings}
    assert by[next(c for c in by if c.startswith("Mosmodel bounds"))].document == "< 3%"


def test_rerun_reuses_every_timed_run(report, reproduce_out):
    runs = reproduce_out / "mosmodel" / "results" / "gather" / "runs.csv"
    before = runs.read_text()
    again = run("mosmodel", str(reproduce_out / "mosmodel"), quick=True)
    assert runs.read_text() == before, "no layout was timed again"
    assert [f.xlat for f in again.findings] == [f.xlat for f in report.findings]


def test_bad_input_is_one_sentence(tmp_path):
    def xlat(*a):
        return subprocess.run([sys.executable, "-m", "xlat", "reproduce", "mosmodel", *a], capture_output=True,
                              text=True)  # fmt: skip

    p = xlat("--programs", "gups", "-o", str(tmp_path / "a"))
    assert (
        p.returncode == 1
        and "not a program mosmodel can run" in p.stderr
        and len(p.stderr.strip().splitlines()) == 1
    )
    p = xlat("--quick", "--scheduler", "tcp://127.0.0.1:9", "-o", str(tmp_path / "b"))
    assert p.returncode == 1 and "timed runs on this machine" in p.stderr
    assert not (tmp_path / "b" / "results" / "gather").exists(), "refused before anything ran"


def test_ablation_programs_are_quoted_in_causes_not_counted(report, reproduce_out):
    """A program of ``ABLATION`` stays out of the findings' figures and is quoted in the causes."""
    from xlat.reproduce import Data, Program, Report

    row = doc._execute([Program("gather", "experiment:gather")], str(reproduce_out / "mosmodel" / "results"), True,
                       None)[("gather", doc.VARIANT)]  # fmt: skip
    small = {**row, "errors": {m: {**e, "max_error": 0.05} for m, e in row["errors"].items()}}
    big = {**row, "errors": {m: {**e} for m, e in row["errors"].items()}}
    big["errors"]["basu"]["max_error"] = 0.9  # the ablation's (made-up) worst prior error
    progs = [Program("gather", "experiment:gather"), Program("gather-1g", "experiment:gather-1g")]
    assert "gather-1g" in doc.ABLATION
    d = Data(progs, doc._variants(True), {("gather", doc.VARIANT): small, ("gather-1g", doc.VARIANT): big})
    r = Report(
        "mosmodel", "t", "s", "c", "v", True, progs, doc._variants(True), out=str(reproduce_out / "mosmodel")
    )
    doc._report(d, r)
    first = r.findings[0]
    assert first.xlat.startswith("5.0% (") and "90.0%" not in first.xlat
    assert first.verdict == "differs" and "ablation gather-1g" in first.why and "90.0% (basu)" in first.why
    assert r.tables[0].rows[1][0] == "gather-1g (ablation)"


def test_layout_1g_covers_the_used_pool_in_whole_1gb_pages():
    from xlat.experiment.common import ExperimentError
    from xlat.experiment.validation import GIB, layout_1g
    from xlat.layout import parse_layout

    base = parse_layout("version = 1")
    lay = layout_1g("heap", 590 << 20, base)
    (w,) = lay.heap.windows
    assert (w.offset, w.length, w.page) == (0, GIB, GIB) and lay.huge_pages_needed()["1GB"] == 1
    assert lay.anon == base.anon and lay.name == "all-1GB"
    assert layout_1g("anon", GIB + 1, base).huge_pages_needed()["1GB"] == 2
    with pytest.raises(ExperimentError, match="cannot hold"):
        layout_1g("heap", 64 * GIB, base)


def test_1gb_validation_is_each_models_prediction_or_says_why(report, reproduce_out):
    """Section VII-D: the all-1GB layout predicted by the models fitted on the others, against its
    runtime; when the 1GB pages cannot be had, the findings say so (not measured)."""
    import json
    import pickle

    d = reproduce_out / "mosmodel" / "results" / "gather"
    v = json.loads((d / "summary.json").read_text())["validation_1g"]
    claims = [f for f in report.findings if f.section.startswith("VII-D")]
    assert len(claims) == 3
    if "error" in v:
        assert all(f.verdict == "not measured" and "1GB" in f.why for f in claims), v["error"]
        return
    with (d / "models.pkl").open("rb") as f:
        fitted = pickle.load(f)
    x = np.array([[v["H"], v["M"], v["C"]]], dtype=float)
    for m, model in fitted.items():
        assert v["errors"][m] == pytest.approx((model.predict(x)[0] - v["R_cycles"]) / v["R_cycles"])
    ds = pd.read_csv(d / "dataset.csv").set_index("layout")
    assert v["R_cycles"] == pytest.approx(ds.loc[v["against"], "R_cycles"] * v["ratio_to_2mb"])
    assert v["M"] <= ds["M"].max() and v["honoured"] and v["reps"] == doc.QUICK["min_reps"]
    runs = pd.read_csv(d / "runs-1g.csv")
    assert set(runs["layout"]) == {"all-1GB", v["against"]}
    t = next(t for t in report.tables if "all-1GB" in t.title)
    assert t.rows[0][0] == "gather" and t.rows[0][-1] == f"{v['errors']['mosmodel']:+.2%}"
