"""Layout heuristics on hand-made miss profiles."""

import numpy as np
import pytest
from xlat import heuristics as hz
from xlat.layout import MIB, load_layout

H = 2 * MIB


def windows(lay, pool="heap"):
    return [(w.offset // H, w.length // H) for w in lay.pool(pool).windows]


def test_growing_window():
    lays = hz.growing_window(16 * H, n=8)
    assert len(lays) == 9
    assert [windows(lay) for lay in lays] == [[]] + [[(0, 2 * i)] for i in range(1, 9)]
    assert lays[0].name == "growing-0of8" and lays[-1].heap.size == 16 * H


def test_growing_window_rounds_down_to_2mib():
    lays = hz.growing_window(10 * H, n=4)  # 2.5 regions per step
    assert [windows(lay) for lay in lays] == [[], [(0, 2)], [(0, 5)], [(0, 7)], [(0, 10)]]


def test_hot_region_by_hand():
    m = [0, 1, 0, 0, 10, 30, 40, 10, 0, 5, 4, 0]  # total 100
    assert hz.hot_region(m, 0.4) == (6, 7)  # region 6 alone holds 40%
    assert hz.hot_region(m, 0.7) == (5, 7)  # 30 + 40
    assert hz.hot_region(m, 0.8) == (4, 7)  # 10 + 30 + 40 (lowest of the tying runs 4..7 and 5..8)
    assert hz.hot_region(m, 1.0) == (1, 11)
    with pytest.raises(ValueError, match="no misses"):
        hz.hot_region([0, 0], 0.5)
    with pytest.raises(ValueError, match="fraction"):
        hz.hot_region(m, 1.5)


def test_hot_region_matches_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(200):
        m = rng.integers(0, 5, rng.integers(1, 30)) * (rng.random() < 0.9)
        if m.sum() == 0:
            continue
        x = float(rng.choice([0.2, 0.4, 0.6, 0.8, 1.0]))
        best = min(
            (
                (hi - lo, lo, hi)
                for lo in range(len(m))
                for hi in range(lo + 1, len(m) + 1)
                if m[lo:hi].sum() >= x * m.sum() * (1 - 1e-12)
            ),
        )
        assert hz.hot_region(m, x) == (best[1], best[2])


def test_sliding_window_slides_away_from_the_near_edge():
    # 32 regions; misses concentrated in regions 24..31 (upper half): slide towards low addresses.
    m = np.zeros(32)
    m[24:32] = 10
    lays = hz.sliding_window(m, 1.0, n=4)
    assert [windows(lay) for lay in lays] == [[(24, 8)], [(22, 8)], [(20, 8)], [(18, 8)], [(16, 8)]]
    # Mirror image: hot region at the bottom slides up.
    lays = hz.sliding_window(m[::-1].copy(), 1.0, n=4)
    assert [windows(lay) for lay in lays] == [[(0, 8)], [(2, 8)], [(4, 8)], [(6, 8)], [(8, 8)]]
    assert lays[2].name == "sliding-x100-2of4"


def test_paper_layouts_count_and_files(tmp_path):
    m = np.arange(64, dtype=float)
    lays = hz.paper_layouts(m, seed=3)
    assert len(lays) == 54
    assert len({lay.name for lay in lays}) == 54
    paths = hz.write_layouts(lays, tmp_path)
    # Every file is a valid layout the allocator and the simulator read.
    for p, lay in zip(paths, lays, strict=True):
        assert load_layout(p).heap == lay.heap
    # Random windows are deterministic per seed.
    assert [windows(x) for x in hz.random_window(64 * H, seed=3)] == [
        windows(x) for x in hz.random_window(64 * H, seed=3)
    ]


def test_bad_arguments():
    with pytest.raises(ValueError, match="multiple of 2MiB"):
        hz.growing_window(3 * MIB)
    with pytest.raises(ValueError, match="cannot hold 2MB windows"):
        hz.growing_window(4 * H, pool="file")
    with pytest.raises(ValueError, match="n=0"):
        hz.growing_window(4 * H, n=0)
