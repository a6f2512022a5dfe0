"""``xlat reproduce lite`` (Karakostas 2016, chapter 5) on --quick: the energy a sweep row gives
(counters, derived figures, config_json, without the run's ``epochs["lite"]``) is
``xlat sim --energy``'s, Table 5.2's values by hand, and the mechanisms the findings rest on."""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("distributed")

import xlat.energy as en
import xlat.sim as sim
from xlat.reproduce import lite, run

#: Table 5.2 (pJ): read, write per L1-4KB geometry (ways -> values of 64x4, 32x2, 16x1).
L1_4K = {4: (5.865, 6.858), 2: (1.881, 2.377), 1: (0.697, 0.945)}
L1_RANGE = (1.806, 1.172)


@pytest.fixture(scope="module")
def quick(reproduce_out):
    """The quick report and the finished points (Data), captured from the document's report()."""
    got = {}

    def keep(d, r):
        got["data"] = d
        lite.report(d, r)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lite, "DOCUMENT", dataclasses.replace(lite.DOCUMENT, report=keep))
        report = run("lite", str(reproduce_out / "lite"), quick=True, workers=1)
    return report, got["data"]


def test_checks_and_findings(quick):
    report, _ = quick
    assert report.checks and all(report.checks.values()), report.checks
    assert len(report.findings) >= 30
    v = {f.claim: f.verdict for f in report.findings}
    assert v["RMM eliminates almost completely the page walks"] == "reproduced"
    assert (
        v["RMM_Lite eliminates more than 99% of the cycles spent in TLB misses compared to THP"]
        == "reproduced"
    )
    # Every difference names a measured cause.
    assert all(f.why for f in report.findings if f.verdict != "reproduced")


def test_row_energy_is_xlat_sim_energy(quick):
    """The dynamic energy rebuilt from a row's cumulative epoch.lite counters equals
    xlat.energy's over the whole run's epochs["lite"] series (same trace, same configuration)."""
    _, d = quick
    for prog, v in (("stream", "TLB_Lite"), ("gups", "RMM_Lite")):
        trace = next(p.trace for p in d.programs if p.name == prog)
        cfg = next(x.config for x in d.variants if x.name == v)
        r = sim.simulate(trace, config=cfg)
        whole = en.energy(r)
        assert r.data["epochs"]["lite"]["rows"]  # Lite ran intervals
        assert lite.dyn(d, prog, v) == pytest.approx(whole.dynamic_pj, rel=1e-12)
        nonzero = lambda sh: {w: x for w, x in sh.items() if x}  # noqa: E731
        mine = lite.energy_of(d, prog, v).lookup_shares("l1d-4k")
        assert nonzero(mine) == pytest.approx(nonzero(whole.lookup_shares("l1d-4k")))


def test_l1_4k_energy_by_hand(quick):
    """TLB_Lite's L1-4KB TLB: each stretch's lookups and fills at the values of the structure its
    active ways make (64x4, 32x2, 16x1), Table 5.2; the stretches add up to the TLB's counters."""
    _, d = quick
    for prog in ("gups", "stream"):
        st = lite.stretches(lite._result(d, prog, "TLB_Lite"))["l1d-4k"]
        assert sum(x.lookups for x in st) == d.get(prog, "TLB_Lite", "tlb.l1d-4k.accesses")
        assert sum(x.fills for x in st) == d.get(prog, "TLB_Lite", "tlb.l1d-4k.fills")
        assert any(x.ways < 4 and x.lookups > 0 for x in st)  # way-disabling happened
        hand = sum(x.lookups * L1_4K[x.ways][0] + x.fills * L1_4K[x.ways][1] for x in st)
        got = next(s for s in lite.energy_of(d, prog, "TLB_Lite").structures if s.name == "l1d-4k")
        assert got.dynamic_pj == pytest.approx(hand, rel=1e-12)


def test_rmm_lite_l1_range_tlb(quick):
    """RMM_Lite's L1-range TLB is looked up on every access (4-entry FA, 1.806 / 1.172 pJ) and
    misses only on the few eager ranges of gups's table: nearly every L1 hit is its."""
    _, d = quick
    acc = d.get("gups", "RMM_Lite", "accesses")
    assert d.get("gups", "RMM_Lite", "range_tlb.range-l1.accesses") == acc
    misses = d.get("gups", "RMM_Lite", "range_tlb.range-l1.misses")
    assert 0 < misses <= d.get("gups", "RMM_Lite", "os.ranges")
    fills = d.get("gups", "RMM_Lite", "range_tlb.range-l1.fills")
    got = next(s for s in lite.energy_of(d, "gups", "RMM_Lite").structures if s.name == "range-l1")
    assert got.dynamic_pj == pytest.approx(acc * L1_RANGE[0] + fills * L1_RANGE[1], rel=1e-12)
    assert lite.hit_share(d, "gups", "RMM_Lite", "range-l1") > 0.99
    # Table 5.3's cycles: 7 per L1 miss, 50 per L2 miss.
    e = lite.energy_of(d, "gups", "RMM_Lite")
    assert e.lite_cycles == 7 * e.l1_misses + 50 * e.l2_misses


def test_page_walks_and_tlb_pp(quick):
    """THP walks no more than 4KB on gups; RMM's L2-range TLB removes > 99% of them; TLB_PP looks
    up its one L1 TLB once per access and holds 2MB entries in its L2 TLB (fewer walks than THP)."""
    _, d = quick
    w = {v: d.get("gups", v, "walker.walks") for v in ("4KB", "THP", "RMM", "TLB_PP")}
    assert 0 < w["THP"] <= w["4KB"] and w["RMM"] < 0.01 * w["4KB"] and w["TLB_PP"] < w["THP"]
    for p in ("gups", "zipf", "stream"):
        assert d.get(p, "TLB_PP", "tlb.l1d.accesses") == d.get(p, "TLB_PP", "accesses")
    # stream hits its 2MB pages: TLB_PP's one 64x4 lookup per access against THP's two L1 TLBs.
    assert lite.dyn(d, "stream", "TLB_PP") < lite.dyn(d, "stream", "THP")
