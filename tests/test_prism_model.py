"""PRISM's overhead model (seed 004 Table 4), by hand."""

import pytest
from xlat.models import PRISM_LATENCIES, prism_overhead


def test_table_4_by_hand():
    # Walk loads 10 in L1, 5 in L2, 3 in L3, 2 in memory: (30 + 55 + 120 + 400) / 20 = 30.25 cycles.
    o = prism_overhead((10, 5, 3, 2), m_2mb=100, p_2mb=4, total_cycles=1e6, epochs=2)
    assert o["mre_access"] == pytest.approx(30.25)
    assert o["c_mre_load"] == pytest.approx(3025.0)
    # E x P_2MB x MRE_access x 2 x MRE_len = 2 x 4 x 30.25 x 2 x 64.
    assert o["c_mre_update"] == pytest.approx(30976.0)
    assert o["overhead_load"] == pytest.approx(0.003025)
    assert o["overhead_update"] == pytest.approx(0.034001)


def test_defaults_are_the_papers():
    assert PRISM_LATENCIES == (3, 11, 40, 200)
    # Every walk load from memory: an MRE load costs 200 cycles; one epoch, 64-bit MREs.
    o = prism_overhead((0, 0, 0, 7), m_2mb=1, p_2mb=1, total_cycles=200 * 129)
    assert o["mre_access"] == 200
    assert o["overhead_update"] == pytest.approx(1.0)


def test_bad_input_is_one_sentence():
    with pytest.raises(ValueError, match="made no load"):
        prism_overhead((0, 0, 0, 0), m_2mb=1, p_2mb=1, total_cycles=10)
    with pytest.raises(ValueError, match="must be positive"):
        prism_overhead((1, 0, 0, 0), m_2mb=1, p_2mb=1, total_cycles=0)
