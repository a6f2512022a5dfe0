"""``xlat reproduce prism --quick``: PRISM's mechanisms on the quick inputs, with figures derived
by hand from the workloads' shapes (docs/prism.md defines every figure)."""

from __future__ import annotations

import itertools
import os

import pytest

pytest.importorskip("distributed")

from xlat.reproduce import prism as doc
from xlat.reproduce import run


@pytest.fixture(scope="module")
def quick(reproduce_out):
    return run("prism", str(reproduce_out / "prism"), quick=True, workers=1)


def table(report, prefix):
    t = next(t for t in report.tables if t.title.startswith(prefix))
    return {row[0]: dict(zip(t.columns, row, strict=True)) for row in t.rows}


def test_every_check_holds_and_every_finding_has_a_verdict(quick):
    assert quick.checks and all(quick.checks.values()), quick.checks
    assert len(quick.findings) == 29
    v = quick.verdicts()
    assert v["not applicable"] == 3 and v["not measured"] == 2
    # A difference says why (a measured cause or an ablation's figure).
    assert all(f.why for f in quick.findings if f.verdict == "differs")


def test_registry_loads_and_entries_by_hand(quick):
    """gups over 8 GiB under THP: 4096 2MB pages, one MRE each; every 2MB walk loads its MRE; 8 page
    directories for the table plus one for the stack region: 9 companion pages (36 KiB)."""
    t = table(quick, "The registry's overhead")
    g = t["gups"]
    assert g["registry entries"] == 4096
    assert g["MRE loads"] == g["2MB walks"] == 94_232
    assert g["registry memory"] == "36 KiB"
    # zipf, chase, zipf-contig over 256 MiB: 128 2MB pages, compulsory misses only (they fit the STLB).
    for p in ("zipf", "chase", "zipf-contig"):
        assert t[p]["registry entries"] == t[p]["MRE loads"] == 128
    # "less than 1% except GUPS" (Table 6) holds on the quick inputs, in the model and in xlat's caches.
    for p, row in t.items():
        for col in ("O(MRE load) model", "O(MRE load) simulated"):
            x = float(row[col].rstrip("%"))
            assert (x > 1.0) if p == "gups" else (x < 1.0), (p, col, x)


def test_registry_bits_equal_the_analysis(quick):
    """zipf and chase touch every 64 KB chunk of their 128 2MB pages: 128 x 32 access bits at 32
    bits per page, 128 x 16 at 16; zipf stores to all of them (30% stores), chase never stores:
    128 x 32 / 0 dirty bits, 128 / 0 at one dirty bit per page. The analysis counts one more 2MB
    region (the stack, mapped by 4KB pages), with one chunk touched."""
    t = table(quick, "The registry's sub-page bits")
    assert t["zipf"]["access bits 32: registry / analysis"] == "4,096 / 4,097"
    assert t["zipf"]["dirty bits 32: registry / analysis"] == "4,096 / 4,097"
    assert t["zipf"]["access bits 16 (PRISM 16/1)"] == "2,048 / 2,049"
    assert t["zipf"]["dirty bits 1 (PRISM 16/1)"] == 128
    assert t["chase"]["dirty bits 32: registry / analysis"] == "0 / 0"
    assert t["chase"]["dirty bits 1 (PRISM 16/1)"] == 0
    # gups: a load and a store to each word: its access and dirty bits are the same.
    assert t["gups"]["access bits 32: registry / analysis"] == t["gups"]["dirty bits 32: registry / analysis"]


def test_fidelity_loss_is_zero_at_512_and_never_rises():
    e_main, e_fine = doc.epochs(True)
    for p in doc.programs(True):
        for e in (e_main, e_fine):
            f = doc.fidelity_of(p.trace, e)
            for kind in ("accessed", "dirty"):
                ls = [f.loss(kind, g) for g in doc.GS]
                assert ls[-1] == 0.0 and all(a >= b for a, b in itertools.pairwise(ls)), (p, e, kind)
    # chase only loads: its dirty loss is 0 at every G; gups stores to every word it loads.
    chase = doc.fidelity_of("workload:chase?size=256MiB&accesses=300000", e_main)
    assert all(chase.loss("dirty", g) == 0.0 for g in doc.GS)
    gups = doc.fidelity_of("workload:gups?size=8GiB&accesses=300000", e_main)
    # (A load and its store can fall either side of an epoch's end: equal to a few in 10,000.)
    assert all(gups.loss("dirty", g) == pytest.approx(gups.loss("accessed", g), abs=1e-3) for g in doc.GS)


def test_gups_dirty_ablation_and_eviction(quick):
    v = {f.claim: f for f in quick.findings}
    g = v["GUPS: access loss 20%, dirty loss 0.0%"]
    # The read-only GUPS ablation moves the dirty loss to the document's 0.0%.
    assert g.verdict == "differs" and "read-only GUPS" in g.why and "dirty 0.0%" in g.why
    assert v["more bits, less loss; 512 bits is 4KB pages"].verdict == "reproduced"
    assert v["MRE loads on 2MB TLB misses cost less than 1% (all but GUPS)"].verdict == "reproduced"
    ev = table(quick, "Eviction at 0.9")
    # stream sweeps its arrays once: nothing evicted is touched again, at every G.
    assert all(ev["stream"][f"refaults G={g}"] == 0 for g in doc.RECLAIM_GS)
    # At 1 bit a written 2MB page is written back whole (a multiple of 2 MiB), and never less than at 32.
    for p, row in ev.items():
        one, g32 = (float(row[f"MiB written back G={g}"].replace(",", "")) for g in (1, 32))
        assert one % 2 == 0 and g32 <= one, p


def test_analyses_of_a_rewritten_trace_are_not_stale(tmp_path):
    """The analyses are cached per trace file and contents: a trace rewritten at the same path is
    analysed again."""
    from xlat import trace as xt

    path = str(tmp_path / "t.xlat")
    xt.convert("workload:chase?size=16MiB&accesses=20000", path)
    first = doc.fidelity_of(path, 10_000)
    assert doc.fidelity_of(path, 10_000) is first, "same file: the cached analysis"
    os.utime(path, ns=(1, 1))  # the same bytes, another mtime: analysed again (equal figures)
    again = doc.fidelity_of(path, 10_000)
    assert again is not first
    xt.convert("workload:gups?size=16MiB&accesses=20000", path)
    other = doc.fidelity_of(path, 10_000)
    assert other is not again
