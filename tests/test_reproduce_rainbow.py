"""``xlat reproduce rainbow --quick``: Wang et al. 2018's mechanisms on the quick inputs, with
figures a hand derivation fixes (a page moved copies exactly its size; 2MB pages map the same
32 MiB arrays alike under every superpage design), and the findings' verdict rules."""

from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from xlat.reproduce import rainbow as doc
from xlat.reproduce import run


@pytest.fixture(scope="module")
def report(reproduce_out):
    return run("rainbow", str(reproduce_out / "rainbow"), quick=True, workers=1)


def _table(report, start: str):
    t = next(t for t in report.tables if t.title.startswith(start))
    return {r[0]: dict(zip(t.columns, r, strict=True)) for r in t.rows}, t


def test_variants_are_xlat_rainbows_machines():
    """The five variants are `xlat rainbow`'s runs at the quick sizes (same configs, same sets)."""
    from xlat import rainbow

    runs = rainbow.runs(*doc.SIZES[True], doc.QUICK_SETS)
    vs = doc.variants(True)
    assert [v.name for v in vs[:5]] == list(doc.DESIGNS)
    for v, r in zip(vs, runs, strict=False):
        assert v.config == r.config and v.sets == tuple(r.set)
        assert "time.model=overlap" in v.sets
    assert vs[5].ablation and "hybrid.top_superpages=1000" in vs[5].sets
    full = doc.variants(False)
    assert "memory.kinds.dram.size=268435456" in full[0].sets and not any("LLC" in s for s in full[0].sets)


def test_checks_hold(report):
    assert len(report.checks) >= 8 and all(report.checks.values()), report.checks
    assert len(report.findings) == 12


def test_bytes_copied_are_pages_moved_times_page_size(report):
    """No page went back (demotions 0 on the quick inputs), so every byte copied is a page brought
    to DRAM: HSCC-4KB-mig and Rainbow 4 KiB each, HSCC-2MB-mig 2 MiB each."""
    rows, _ = _table(report, "Migration traffic")
    for p, r in rows.items():
        for design, size in ((doc.H4, 4096), (doc.H2, 2 << 20)):
            moved, back = (
                int(x.replace(",", "")) for x in r[f"{design.split('-mig')[0]} in / back"].split(" / ")
            )
            assert back == 0
            assert r[f"{design} bytes copied"] == moved * size, (p, design)
        assert r[f"{doc.RB} bytes copied"] == r["Rainbow cached"] * 4096, p
    bfs = rows["bfs"]
    # bfs's parent/visited arrays exceed the quick LLC: all three migrating designs move pages there.
    assert bfs["Rainbow cached"] > 0 and bfs[f"{doc.H2} bytes copied"] >= 2 << 20
    assert bfs[f"{doc.H4} bytes copied"] > bfs[f"{doc.RB} bytes copied"]
    # gups (uniformly random) has no page hot enough for Equation 1 under any design.
    assert all(rows["gups"][f"{n} bytes copied"] == 0 for n in (doc.H4, doc.H2, doc.RB))


def test_superpage_designs_walk_alike(report):
    """HSCC-2MB-mig, Rainbow and DRAM-only map gups's and zipf's 32 MiB arrays with the same 2MB
    pages (nothing cached in DRAM there), so their walks are equal; 4KB pages walk over 1000x more."""
    rows, _ = _table(report, "TLB misses")
    for p in ("gups", "zipf"):
        r = rows[p]
        assert r[doc.H2] == r[doc.RB] == r[doc.DRAM] > 0
        assert r[doc.FLAT] > 1000 * r[doc.RB] and r[doc.H4] > 1000 * r[doc.RB]


def test_rainbow_copies_are_read_through_the_pointer(report):
    rows, _ = _table(report, "Rainbow's translation cases")
    bfs = rows["bfs"]
    assert bfs["remaps"] > 0 and float(bfs["case 1"].rstrip("%")) > 0  # 4KB copy hit beside its superpage
    assert all(float(rows[p]["case 1"].rstrip("%")) == 0 for p in ("gups", "zipf"))


def test_verdict_rules(report):
    v = {f.claim: f for f in report.findings}
    assert v["Rainbow reduces TLB misses by 99.8%"].verdict == "reproduced"
    up = v["Rainbow within 14.0% of DRAM-only (2MB), the upper bound"]
    assert up.xlat.startswith("the upper bound on 3 of 3")
    # An IPC ratio is reproduced only when both time models agree; a difference names the model.
    assert doc._verdict(1.2, 1.25, 1.228) == (True, "")
    ok, why = doc._verdict(0.93, 1.15, 1.173)
    assert not ok and "overlap" in why
    for f in report.findings:
        if f.verdict == "differs":
            assert f.why, f.claim
