"""The energy model of thesis (seed 000) chapter 5, Tables 5.2 and 5.3 (xlat.energy), by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import xlat.energy as en
import xlat.sim as sim
from conftest import result
from trace_support import text_trace
from xlat.cli import main

LITE = str(Path(__file__).resolve().parents[1] / "configs" / "lite")
BASE = 0x7F00_0000_0000  # 2MB-aligned


@pytest.fixture
def two_pages(tmp_path):
    """Load page 0 twice, store page 1: 3 L1-4KB lookups, 2 misses, 2 walks."""
    return text_trace(tmp_path, [(1, "L", BASE), (2, "L", BASE + 8), (3, "S", BASE + 4096)])


def test_table_5_3_by_hand_on_a_real_run(two_pages):
    r = sim.simulate(two_pages, config=f"{LITE}/4k.toml")
    c = r.counters
    # Walk 1 misses every paging-structure cache: 4 loads, all from DRAM (cold caches); walk 2
    # hits the PDE cache: 1 load, the PTE next to walk 1's, in the same L1D line.
    assert (c["walker.walks"], c["walker.loads"], c["walker.loads_hit.L1D"], c["walker.loads_hit.DRAM"]) == (
        2,
        5,
        1,
        4,
    )
    e = r.energy()
    got = {s.name: (s.reads, s.writes, s.dynamic_pj) for s in e.structures}
    # Table 5.2: L1-4KB 64x4 5.865/6.858, L2 512x4 8.078/12.379, PDE 32x2 1.824/2.281,
    # PDPTE 4 fully 0.766/0.279, PML4 2 fully 0.473/0.158, L1 cache read 174.171.
    want = {
        "l1d-4k": (3, 2, 3 * 5.865 + 2 * 6.858),  # 31.311
        "stlb": (2, 2, 2 * 8.078 + 2 * 12.379),  # 40.914
        "pde": (2, 1, 2 * 1.824 + 2.281),  # 5.929
        # All three paging-structure caches are looked up in parallel on every walk (section
        # 5.5), though the walker's counters show the PDPTE and PML4E caches probed once.
        "pdpte": (2, 1, 2 * 0.766 + 0.279),
        "pml4e": (2, 1, 2 * 0.473 + 0.158),
        "walk.L1D": (5, 0, 5 * 174.171),  # 870.855
    }
    assert set(got) == set(want)  # the 2MB and 1GB TLBs got no entry: masked (section 5.3.1)
    for k, (rd, wr, pj) in want.items():
        assert got[k][:2] == (rd, wr)
        assert got[k][2] == pytest.approx(pj)
    assert e.dynamic_pj == pytest.approx(951.924)
    # 3 instructions at CPI 1 plus 724 walk cycles = 727 cycles at 2.2 GHz; leakage of the five
    # charged structures: 0.3632 + 1.6663 + 0.1402 + 0.0500 + 0.0296 = 2.2493 mW.
    assert r.derived["time.total_cycles"] == 727
    assert e.leakage_pj == pytest.approx(2.2493 * 727 / 2.2)
    assert e.per_ki(e.dynamic_pj) == pytest.approx(951.924 * 1000 / 3)
    # Table 5.3's cycles: 2 L1 misses x 7 + 2 L2 misses x 50.
    assert e.lite_cycles == 114
    d = r.to_pandas(energy=True)
    assert d["energy.walk.L1D.dynamic_pj"].iloc[0] == pytest.approx(870.855)
    assert d["energy.total_pj"].iloc[0] == pytest.approx(951.924 + 2.2493 * 727 / 2.2)


def test_walk_loads_by_level(tmp_path, two_pages):
    text = (en.SETS_DIR / "cacti-32nm.toml").read_text()
    extra = """
[[structure]]
kind = "cache"
size = "256KiB"
ways = 8
read_pj = 10.0
write_pj = 0.0
leakage_mw = 0.0

[[structure]]
kind = "cache"
size = "15MiB"
ways = 20
read_pj = 100.0
write_pj = 0.0
leakage_mw = 0.0

[[structure]]
kind = "memory"
read_pj = 1000.0
write_pj = 0.0
leakage_mw = 0.0
"""
    p = tmp_path / "levels.toml"
    p.write_text(text.replace('name = "cacti-32nm"', 'name = "levels"') + extra)
    r = sim.simulate(two_pages, config=f"{LITE}/4k.toml")
    e = r.energy(str(p), walk_loads="levels")
    got = {s.name: (s.reads, s.dynamic_pj) for s in e.structures if s.name.startswith("walk.")}
    # 1 load hit L1D; 4 went to DRAM, reading L1D, L2 and the LLC on the way.
    assert got == {
        "walk.L1D": (5, pytest.approx(5 * 174.171)),
        "walk.L2": (4, pytest.approx(40.0)),
        "walk.LLC": (4, pytest.approx(400.0)),
        "walk.DRAM": (4, pytest.approx(4000.0)),
    }
    with pytest.raises(en.EnergyError, match=r"no values for cache L2 \(256KiB 8-way cache\)"):
        r.energy(walk_loads="levels")


def test_disabled_ways_take_the_smaller_structures_values(two_pages):
    r = sim.simulate(two_pages, config=f"{LITE}/4k.toml")
    # One of the 3 lookups and one of the 2 fills made with 2 of 4 ways: 32-entry 2-way values.
    e = en.energy(r, active_ways={"l1d-4k": [(2, 1, 1)]})
    s = next(s for s in e.structures if s.name == "l1d-4k")
    assert s.dynamic_pj == pytest.approx(2 * 5.865 + 6.858 + 1.881 + 2.377)
    e = en.energy(r, active_ways={"l1d-4k": [(1, 3, 2)]})  # all at 16-entry direct-mapped
    s = next(s for s in e.structures if s.name == "l1d-4k")
    assert s.dynamic_pj == pytest.approx(3 * 0.697 + 2 * 0.945)


def test_rmm_l1_range_tlb_is_charged(tmp_path):
    r = sim.simulate("workload:gups?size=64MiB&accesses=2000&seed=1", config=f"{LITE}/rmm-l1.toml")
    c = r.counters
    e = {s.name: s for s in r.energy().structures}
    # Table 5.2: L1-range TLB 4 fully 1.806/1.172, L2-range TLB 32 fully 3.306/1.568.
    n, f = c["range_tlb.range-l1.accesses"], c["range_tlb.range-l1.fills"]
    assert n == 2000
    assert e["range-l1"].dynamic_pj == pytest.approx(n * 1.806 + f * 1.172)
    n2, f2 = c["range_tlb.range-l2.accesses"], c["range_tlb.range-l2.fills"]
    assert e["range-l2"].dynamic_pj == pytest.approx(n2 * 3.306 + f2 * 1.568)


def test_a_structure_without_values_is_named(two_pages):
    # The sandybridge preset's PDE cache is 32-entry 4-way; Table 5.2 has only 2-way.
    r = sim.simulate(two_pages, cpu="sandybridge")
    with pytest.raises(
        en.EnergyError, match=r"no values for paging-structure cache pde \(32-entry 4-way psc\)"
    ):
        r.energy()


@pytest.mark.parametrize(
    ("edit", "msg"),
    [
        (lambda t: t.replace("read_pj = 5.865", "read_pj = -5.865"), "read_pj must not be negative"),
        (lambda t: t.replace("clock_ghz = 2.2", ""), "clock_ghz must be a number"),
        (lambda t: t.replace('kind = "psc"', 'kind = "pcs"', 1), "kind must be one of"),
        (lambda t: t + "\nbogus = 1\n", "unknown field 'bogus'"),
        (lambda t: t.replace("ways = 4\nread_pj = 5.865", "ways = 128\nread_pj = 5.865"), "128 ways is more"),
    ],
)
def test_bad_energy_sets_are_one_sentence(tmp_path, edit, msg):
    p = tmp_path / "bad.toml"
    p.write_text(edit((en.SETS_DIR / "cacti-32nm.toml").read_text()))
    with pytest.raises(en.EnergyError, match=msg):
        en.energy_set(str(p))


def test_cli_energy_json_plot_and_errors(tmp_path, two_pages, capsys):
    out, png = tmp_path / "r.json", tmp_path / "e.png"
    rc = main(
        [
            *("sim", two_pages, "--config", f"{LITE}/4k.toml", "--energy"),
            *("--energy-plot", str(png), "--json", str(out), "--no-progress"),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "dyn. energy walk.L1D (pJ)" in text and "Table 5.3 TLB-miss cycles" in text
    d = result(out.read_text())["energy"]
    assert d["set"] == "cacti-32nm"
    assert d["structures"]["l1d-4k"] == {
        "reads": 3,
        "writes": 2,
        "dynamic_pj": pytest.approx(31.311),
        "leakage_pj": pytest.approx(0.3632 * 727 / 2.2),
    }
    assert d["dynamic_pj"] == pytest.approx(951.924)
    assert png.read_bytes()[:4] == b"\x89PNG"
    # A missing structure, an unknown set: one sentence, status 1.
    assert main(["sim", two_pages, "--cpu", "sandybridge", "--energy", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        "xlat: error: the energy set 'cacti-32nm' has no values for paging-structure cache pde"
    )
    assert err.count("\n") == 1
    # ... and it says what to do (issue 37, item 9): the configurations the set has values for.
    assert "--config lite/4k --energy" in err and "copy configs/energy/cacti-32nm.toml" in err
    assert main(["sim", two_pages, "--config", f"{LITE}/4k.toml", "--energy", "nope", "--no-progress"]) == 1
    assert "no energy set 'nope'" in capsys.readouterr().err
    # `--energy` just before the trace: the trace, not a set's name (it took the positional).
    assert main(["sim", "--config", f"{LITE}/4k.toml", "--no-progress", "--energy", two_pages]) == 0
    assert "dyn. energy (pJ)" in capsys.readouterr().out


def test_lite_configs_are_the_sandybridge_preset_with_a_2_way_pde_cache(two_pages):
    base = sim.simulate(two_pages, cpu="sandybridge").config
    for name in ("4k", "thp", "rmm", "rmm-l1"):
        c = sim.simulate(two_pages, config=f"{LITE}/{name}.toml").config
        assert c["tlb"] == base["tlb"] and c["cache"] == base["cache"]
        pde = {p["name"]: p for p in c["psc"]}["pde"]
        assert (pde["entries"], pde["ways"]) == (32, 2)
        assert [p for p in c["psc"] if p["name"] != "pde"] == [p for p in base["psc"] if p["name"] != "pde"]


def test_structures_looked_up_in_parallel_cost_a_lookup_whether_or_not_they_hold_entries():
    # Stream over 64MiB: THP and RMM (eager paging keeps THP's 2MB pages) both map 2MB pages, so
    # section 5.3.1's mask enables the L1-2MB TLB in both, and it is charged on every access
    # even where it holds no entry: here RMM's range TLB fills only 4KB entries (fill = "4k",
    # section 4.3.1 read literally) and leaves it empty (without promotion: the 2MB pages
    # promotion copies out of a range are walked, and fill it).
    w = "workload:stream?size=64MiB&accesses=200000"
    thp = sim.simulate(w, config=f"{LITE}/thp.toml")
    rmm = sim.simulate(
        w, config=f"{LITE}/rmm.toml", set=['range_tlb.range-l2.fill="4k"', "os.eager_promote=false"]
    )
    assert rmm.counters["os.eager_2m"] > 0 and rmm.counters["tlb.l1d-2m.fills"] == 0
    e_thp, e_rmm = thp.energy(), rmm.energy()
    by = {s.name: s for s in e_rmm.structures}
    assert (by["l1d-2m"].reads, by["l1d-2m"].writes) == (200_000, 0)
    assert by["l1d-2m"].dynamic_pj == pytest.approx(200_000 * 4.801)
    # A stream has no walks for RMM to remove: no energy saved (it was -44.7% with the L1-2MB
    # TLB uncharged).
    assert e_rmm.dynamic_pj / e_thp.dynamic_pj == pytest.approx(1.0, abs=0.01)
    # Every paging-structure cache is read on every walk.
    for p in ("pml4e", "pdpte", "pde"):
        assert by[p].reads == rmm.counters["walker.walks"]
    # 4KB pages only: the huge-page L1 TLBs stay masked.
    k4 = sim.simulate(w, config=f"{LITE}/4k.toml").energy()
    assert {s.name for s in k4.structures} >= {"l1d-4k"} and "l1d-2m" not in {s.name for s in k4.structures}
    # Without the mask every L1 TLB is charged: Table 5.2 has no L1-1GB TLB, so the set says so.
    with pytest.raises(en.EnergyError, match="no values for TLB l1d-1g"):
        thp.energy(l1_lookups="all")
    with pytest.raises(en.EnergyError, match="l1_lookups must be one of masked, all"):
        thp.energy(l1_lookups="some")


def test_a_warm_up_window_keeps_the_huge_page_l1_tlb_charged():
    """Under a warm-up window the counters start after the faults that mapped the 2MB pages, so
    the mask could not learn the mapped sizes from the faults alone: THP's L1-2MB TLB, hit on
    almost half the accesses, went uncharged. The 2MB TLB's own hits (and walks to 2MB leaves)
    say the size is mapped."""
    w = "workload:bfs?scale=14&accesses=300000"
    whole = sim.simulate(w, config=f"{LITE}/thp.toml")
    window = sim.simulate(w, config=f"{LITE}/thp.toml", warmup=10_000)
    assert whole.counters["os.faults_2m"] > 0 and window.counters["os.faults_2m"] == 0
    assert window.counters["tlb.l1d-2m.hits"] > 0
    by = {s.name: s for s in window.energy().structures}
    assert by["l1d-2m"].reads == window.counters["tlb.l1d-2m.accesses"] == 290_000
    # per access, the window's translation energy is the whole run's, to within the warm-up
    per = [r.energy().dynamic_pj / r.counters["accesses"] for r in (whole, window)]
    assert per[1] == pytest.approx(per[0], rel=0.05)
    # 4KB pages only, with a window: the 2MB TLB stays masked
    k4 = sim.simulate(w, config=f"{LITE}/4k.toml", warmup=10_000).energy()
    assert "l1d-2m" not in {s.name for s in k4.structures}
