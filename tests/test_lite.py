"""Lite's energy (thesis seed 000 chapter 5): each interval charged at its active way count
(Table 5.2's smaller structures), Table 5.5's lookup shares, TLB_PP, and bad input, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
import xlat.energy as en
import xlat.sim as sim
from xlat.cli import main

LITE = str(Path(__file__).resolve().parents[1] / "configs" / "lite")
BASE = 0x7F00_0000_0000  # 2MB-aligned
# 4KB pages only, 1000-instruction intervals, no random re-activation.
SET = ["os.policy=4k", "lite.interval=1000", "lite.probability=1e-30"]


def text_trace(tmp_path, accesses: list[tuple[int, str, int]], name: str = "t.txt") -> str:
    lines = ["#xlat-text 1", '#header {"format":"xlat-trace","producer":"test"}']
    lines += [f"A 1 {ic} {kind} {addr:#x} 8" for ic, kind, addr in accesses]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return str(p)


@pytest.fixture
def phases(tmp_path):
    """Instructions 1-1000: page 0; 1001-3500: pages 16 and 0 in turn (one load each). Pages 0
    and 16 share a set of the 16-set L1-4KB TLB (64 entries, 4-way)."""
    acc = [(i, "L", BASE) for i in range(1, 1001)]
    acc += [(i, "L", BASE + (16 << 12 if i % 2 else 0)) for i in range(1001, 3501)]
    return text_trace(tmp_path, acc)


def test_each_interval_is_charged_at_its_active_ways(phases):
    r = sim.simulate(phases, config=f"{LITE}/tlb-lite.toml", set=SET)
    c = r.counters
    # Interval 1 (4 ways): 1 miss, 999 hits on the MRU way; counters 1 and 2 are 0, so Lite
    # halves twice: 1 way. Interval 2 (1 way): pages 16 and 0 evict each other, 1000 misses:
    # 1000 MPKI > 1.125 x 1, every way back. Interval 3 (4 ways, page 0 kept): 1 miss (page
    # 16), 999 hits at way 1: halving to 2 ways loses none, to 1 way 999: 2 ways. The last 500
    # lookups (after instruction 3000) run at 2 ways and all hit.
    series = r.epochs_to_pandas("lite")
    assert list(series["l1d-4k.ways"]) == [1, 4, 2]
    assert list(series["at"]) == list(series["instructions"]) == [1000, 2000, 3000]
    assert (c["tlb.l1d-4k.accesses"], c["tlb.l1d-4k.fills"]) == (3500, 1002)
    # Time: CPI 1. Page 0's walk: 4 loads from DRAM (cold), 180 cycles each = 720 (interval
    # 1). Page 16's: its PTE only (the PDE cache holds the rest), 128 bytes from page 0's, in
    # another line: DRAM, 180 (interval 2). L2-TLB hits, 7 cycles: 999 in interval 2, 1 in
    # interval 3.
    assert c["walker.cycles"] == 900
    t1, t2, t3, tail = 1000 + 720, 1000 + 180 + 999 * 7, 1000 + 7, 500
    assert r.derived["time.total_cycles"] == t1 + t2 + t3 + tail == 11400
    e = r.energy()
    s = {x.name: x for x in e.structures}["l1d-4k"]
    # Table 5.2: 64x4 5.865/6.858/0.3632, 32x2 1.881/2.377/0.1491, 16x1 0.697/0.945/0.0636.
    # 4 ways: intervals 1 and 3, 2000 lookups, 2 fills; 1 way: interval 2, 1000 and 1000;
    # 2 ways: the tail, 500 and 0.
    dyn = 2000 * 5.865 + 2 * 6.858 + 1000 * 0.697 + 1000 * 0.945 + 500 * 1.881
    assert dyn == pytest.approx(14326.216)
    assert s.dynamic_pj == pytest.approx(dyn)
    # Leakage (pJ) = mW x cycles / 2.2 GHz, each stretch at its structure's power.
    leak = (0.3632 * (t1 + t3) + 0.0636 * t2 + 0.1491 * tail) / 2.2
    assert s.leakage_pj == pytest.approx(leak)
    assert s.leakage_pj == pytest.approx((990.4464 + 519.8028 + 74.55) / 2.2)  # 720.36
    # Table 5.5: the share of lookups at 4, 2 and 1 ways.
    assert e.lookup_shares("l1d-4k") == pytest.approx({4: 2000 / 35, 2: 500 / 35, 1: 1000 / 35})
    assert [(x.ways, x.lookups, x.fills, x.cycles) for x in e.lite["l1d-4k"]] == [
        (4, 2000, 2, t1 + t3),
        (2, 500, 0, tail),
        (1, 1000, 1000, t2),
    ]
    d = r.to_dict(energy=True)
    assert d["lite.l1d-4k.lookups_pct_w1"] == pytest.approx(100 / 3.5)
    assert d["energy.l1d-4k.dynamic_pj"] == pytest.approx(dyn)
    j = e.to_json()
    assert j["lite"]["l1d-4k"]["2"] == {
        "lookups": 500,
        "fills": 0,
        "cycles": 500,
        "lookups_pct": pytest.approx(100 / 7),
    }
    # The same run priced as if every way stayed on (no stretches): the 64x4 values throughout.
    full = {x.name: x for x in en.energy(r, active_ways={}).structures}["l1d-4k"]
    assert full.dynamic_pj == pytest.approx(3500 * 5.865 + 1002 * 6.858)
    assert full.leakage_pj == pytest.approx(0.3632 * 11400 / 2.2)


def test_way_disabled_stretches_cost_what_a_smaller_tlb_costs(phases):
    """Interval 2 ran with 1 of 4 ways: its lookups and fills equal a 16-entry direct-mapped
    TLB's over the same accesses, and are priced at that structure's Table 5.2 values."""
    r = sim.simulate(phases, config=f"{LITE}/tlb-lite.toml", set=SET)
    one = {x.ways: x for x in r.energy().lite["l1d-4k"]}[1]
    assert (one.lookups, one.fills) == (1000, 1000)
    # A genuinely 16-entry direct-mapped L1-4KB TLB, no Lite, on the same trace: pages 16 and
    # 0 share its set too, so instructions 1001-2000 miss every time, as interval 2 did.
    small = sim.simulate(
        phases,
        config=f"{LITE}/thp.toml",
        set=["os.policy=4k", "tlb.l1d-4k.entries=16", "tlb.l1d-4k.ways=1", "sim.interval_instructions=1000"],
    )
    s = small.series_to_pandas()
    # Every 1000 instructions, and the run's end (3500: the final, partial interval).
    assert list(s["instructions"]) == [1000, 2000, 3000, 3500] == list(s["at"])
    d = s[["tlb.l1d-4k.accesses", "tlb.l1d-4k.fills"]].diff()
    assert tuple(d.iloc[1]) == (one.lookups, one.fills) == (1000, 1000)
    assert small.counters["tlb.l1d-4k.fills"] == 1 + 2500
    e = {x.name: x for x in small.energy().structures}["l1d-4k"]
    assert e.dynamic_pj == pytest.approx(3500 * 0.697 + 2501 * 0.945)


def test_tlb_pp_one_l1_tlb_for_4kb_and_2mb_with_a_perfect_size_predictor(tmp_path):
    """TLB_PP (section 5.5): one 64-entry 4-way L1 TLB holding 4KB and 2MB entries, looked up
    once per access at the right index, and 2MB entries in the L2 TLB too."""
    # 40 consecutive 2MB pages (THP), touched twice in turn.
    acc = [(i + 1, "L", BASE + ((i % 40) << 21)) for i in range(80)]
    trace = text_trace(tmp_path, acc)
    thp = sim.simulate(trace, config=f"{LITE}/thp.toml")
    pp = sim.simulate(trace, config=f"{LITE}/tlb-pp.toml")
    assert thp.counters["walker.walks_2m"] == 80 and pp.counters["walker.walks_2m"] == 40
    # THP: the 32-entry 4-way L1-2MB TLB has 8 sets; each holds 5 of the 40 pages in turn, so
    # LRU misses all 80; the Sandy Bridge L2 TLB holds no 2MB entry: 80 L2 misses, 80 walks.
    # TLB_PP: 16 sets of 4 ways hold the 40 pages (2 or 3 a set): 40 misses then 40 hits;
    # the L2 TLB takes the 40 2MB entries but they are never asked for again: 40 walks.
    c = pp.counters
    assert (c["tlb.l1d.accesses"], c["tlb.l1d.hits"], c["tlb.l1d.fills"]) == (80, 40, 40)
    assert (c["tlb.stlb.accesses"], c["tlb.stlb.fills"]) == (40, 40)
    assert (thp.counters["tlb.l1d-2m.hits"], thp.counters["tlb.stlb.accesses"]) == (0, 80)
    # Energy (Table 5.2): one read of the 64x4 TLB per lookup (the perfect predictor costs
    # nothing), 5.865 pJ, fills 6.858; L2 512x4 8.078 / 12.379.
    e = {s.name: s for s in pp.energy().structures}
    assert e["l1d"].dynamic_pj == pytest.approx(80 * 5.865 + 40 * 6.858)  # 743.52
    assert e["stlb"].dynamic_pj == pytest.approx(40 * 8.078 + 40 * 12.379)  # 818.28
    t = {s.name: s for s in thp.energy().structures}
    assert t["l1d-2m"].dynamic_pj == pytest.approx(80 * 4.801 + 80 * 5.562)  # 829.04
    assert t["stlb"].dynamic_pj == pytest.approx(80 * 8.078)
    # The configuration is thp.toml with the two data L1 TLBs merged and 2MB in the L2.
    a, b = thp.config, pp.config
    assert a["cache"] == b["cache"] and a["psc"] == b["psc"] and a["os"] == b["os"]
    pp_tlbs = {t["name"]: (t["entries"], t["ways"], t["page_sizes"]) for t in b["tlb"]}
    assert pp_tlbs["l1d"] == (64, 4, ["4KB", "2MB"]) and pp_tlbs["stlb"] == (512, 4, ["4KB", "2MB"])
    assert "l1d-4k" not in pp_tlbs and "l1d-2m" not in pp_tlbs


def _drop_structure(text: str, entries: int, ways: int, read: str) -> str:
    block = f'[[structure]]\nkind = "page_tlb"\nentries = {entries}\nways = {ways}\nread_pj = {read}\n'
    assert block in text
    return text.replace(block, '[[structure]]\nkind = "page_tlb"\nentries = 999\nways = 1\nread_pj = 0.1\n')


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        (["--set", "lite.interval=0"], "lite.interval = 0 must be at least 1 instruction."),
        (["--set", "lite.probability=1.5"], "lite.probability = 1.5 must lie in [0, 1]."),
        (["--set", "lite.probability=-0.25"], "lite.probability = -0.25 must lie in [0, 1]."),
        (["--set", "lite.reference=lowest"], "lite.reference"),
    ],
)
def test_bad_lite_settings_are_one_sentence_and_status_1(phases, capsys, args, msg):
    rc = main(["sim", phases, "--config", f"{LITE}/tlb-lite.toml", *args, "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1
    assert msg in err and err.count("\n") == 1 and "Traceback" not in err


def test_bad_energy_files_are_one_sentence_and_status_1(tmp_path, phases, capsys):
    text = (en.SETS_DIR / "cacti-32nm.toml").read_text()
    neg = tmp_path / "neg.toml"
    neg.write_text(text.replace("read_pj = 1.881", "read_pj = -1.881"))
    # A set without the 32-entry 2-way structure the L1-4KB TLB becomes with 2 ways off: the
    # TLB_Lite run of `phases` spends its last 500 lookups at 2 ways.
    missing = tmp_path / "missing.toml"
    missing.write_text(_drop_structure(text, 32, 2, "1.881"))
    for path, want in [
        (neg, "structure 2: read_pj must not be negative, but is -1.881."),
        (missing, "has no values for TLB l1d-4k with 2 of 4 ways (32-entry 2-way page tlb): "),
    ]:
        sets = [f"--set={s}" for s in SET]
        rc = main(
            [
                "sim",
                phases,
                "--config",
                f"{LITE}/tlb-lite.toml",
                *sets,
                "--energy",
                str(path),
                "--no-progress",
            ]
        )
        err = capsys.readouterr().err
        assert rc == 1, path
        assert want in err and err.count("\n") == 1 and "Traceback" not in err
