"""xlat.reclaim and ``xlat reclaim``: eviction under memory pressure with access/dirty bits at G
bits per 2MB page (PRISM, seed 004 Section 6.5), counted by hand on a text trace."""

from __future__ import annotations

import pytest
from conftest import result
from trace_support import text_trace
from xlat.cli import main
from xlat.reclaim import analyze

BASE = 0x7000_0000_0000  # 2MB-aligned
MB2 = 2 << 20
KB4 = 4096


def crafted(tmp_path) -> str:
    # Regions 0..3 (footprint 8MB; at 0.5 memory holds 1024 4KB frames, two 2MB pages):
    # store 0/0, load 1/0, load 2/0, load 0/5, load 3/0.
    r = [(0, 0, "S"), (1, 0, "L"), (2, 0, "L"), (0, 5, "L"), (3, 0, "L")]
    return text_trace(tmp_path, [(i, k, BASE + reg * MB2 + page * KB4) for i, (reg, page, k) in enumerate(r)])


def test_faults_and_write_backs_by_hand(tmp_path):
    r = analyze(crafted(tmp_path), fraction=0.5, granularities=[1, 512])
    d = r.data
    assert (d["regions"], d["footprint_bytes"], d["capacity_bytes"], d["touched_bytes"]) == (
        4,
        4 * MB2,
        2 * MB2,
        5 * KB4,
    )
    g1, g512 = r.at(1), r.at(512)
    # G=1. Region 2's fault: regions 0 and 1 (accessed) get a second chance, then region 0 is
    # evicted (dirty: 2MB written back). 0/5 refaults region 0 (2MB), evicting region 1 (its bit
    # cleared by the hand). Region 3's fault: 2 and 0 get a second chance, 2 is evicted.
    assert (g1["faults"], g1["first_touch_faults"], g1["refaults"]) == (5, 4, 1)
    assert (g1["evictions"], g1["dirty_evictions"], g1["second_chances"]) == (3, 1, 4)
    assert (g1["bytes_written_back"], g1["bytes_read"], g1["bytes_read_refault"]) == (MB2, 5 * MB2, MB2)
    # G=512. Region 2's fault: page 0/0 gets a second chance, 0/1..0/511 (never touched) are
    # dropped, 1/0 a second chance, 1/1 dropped. 0/5 refaults 4KB, dropping 1/2. Region 3's
    # fault drops 1/3..1/511, writes back 0/0 (dirty, not accessed since the hand passed it:
    # 4KB), drops 1/0, gives 2/0 a second chance and drops 2/1.
    assert (g512["faults"], g512["first_touch_faults"], g512["refaults"]) == (5, 4, 1)
    assert (g512["evictions"], g512["dirty_evictions"], g512["second_chances"]) == (1025, 1, 3)
    assert (g512["bytes_written_back"], g512["bytes_read"], g512["bytes_read_refault"]) == (
        KB4,
        4 * MB2 + KB4,
        KB4,
    )
    # Time: 5 faults of 20 us, plus the bytes over PCIe 3.0 x16 (15.75 GB/s) each way.
    bw = 8e9 * 16 * 128 / 130 / 8
    assert g1["time_s"] == pytest.approx(5 * 20e-6 + 5 * MB2 / bw + MB2 / bw)
    df = r.to_pandas()
    assert df.loc[512, "time_vs_first"] == pytest.approx(g512["time_s"] / g1["time_s"])
    assert df.loc[1, "time_vs_first"] == 1.0


def test_cli_table_and_json(tmp_path, capsys):
    spec = crafted(tmp_path)
    assert main(["reclaim", "--no-progress", spec, "--fraction", "0.5", "--granularity", "1,8,512"]) == 0
    out = capsys.readouterr().out
    assert "refaults" in out and "4.00 MiB (0.5 of the footprint)" in out
    assert main(["reclaim", "--no-progress", spec, "--fraction", "0.5", "--json", "--fault-us", "0"]) == 0
    d = result(capsys.readouterr().out)
    assert [g["g"] for g in d["granularities"]] == [1, 8, 32, 512]
    assert d["fault_us"] == 0 and d["rows"][0]["time_s"] == pytest.approx(
        6 * MB2 / (8e9 * 16 * 128 / 130 / 8)
    )


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--granularity", "1,3"], "granularity 3 is not a power of two from 1 to 512"),
        (["--granularity", "1024"], "granularity 1024 is not a power of two from 1 to 512"),
        # An empty list is no granularity, not the default four.
        (["--granularity", ""], "--granularity needs at least one granularity"),
        (["--granularities", ","], "--granularity needs at least one granularity"),
        (["--epoch", "0"], "the epoch must be at least 1 instruction, not 0"),
        (["--fraction", "0"], "the memory fraction must be above 0 and at most 1"),
        (["--fraction", "1.5"], "the memory fraction must be above 0 and at most 1"),
        (["--fraction", "-0.2"], "the memory fraction must be above 0 and at most 1"),
        (["--fraction", "nan"], "the memory fraction must be above 0 and at most 1"),
        (["--bandwidth", "0"], "the read bandwidth must be a positive number of bytes per second, not 0"),
        (["--fraction", "0.001"], "cannot hold one 2MB page"),
    ],
)
def test_cli_bad_input_is_one_sentence(capsys, args, msg):
    assert main(["reclaim", "--no-progress", "workload:gups?size=64MiB&accesses=1000", *args]) == 1
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_cli_bad_input_exits_non_zero(xlat_cli):
    p = xlat_cli("reclaim", "workload:gups?accesses=10", "--fraction", "2", check=False)
    assert p.returncode == 1
    assert p.stderr.startswith("xlat: error: the memory fraction must be above 0 and at most 1")
    assert p.stderr.count("\n") == 1
