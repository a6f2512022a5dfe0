"""Rainbow (seed 003) from Python: ``xlat superpage-touch`` (Observation 1) counted by hand on a
text trace, and ``xlat rainbow`` (the five configurations of configs/rainbow) on a small
workload: what each configuration must show, and bad input as one sentence."""

from __future__ import annotations

import pytest
from conftest import result, results
from trace_support import text_trace
from xlat.cli import main
from xlat.rainbow import CONFIGS, compare
from xlat.touch import analyze

BASE = 0x7000_0000_0000  # 2MB-aligned
MB2 = 2 << 20
KB4 = 4096


def crafted(tmp_path) -> str:
    # Intervals of 4 instructions. 1-4: superpage A pages 0, 0, 5, superpage B page 511 (A: 2
    # pages, B: 1); 5-8: A pages 1..4 (A: 4); 9 (the last, partial interval): B page 0 (B: 1).
    a, b = BASE, BASE + MB2
    acc = [(1, a), (2, a + 8), (3, a + 5 * KB4), (4, b + 511 * KB4)]
    acc += [(5, a + KB4), (6, a + 2 * KB4), (7, a + 3 * KB4), (8, a + 4 * KB4), (9, b)]
    return text_trace(tmp_path, [(ic, "L", x) for ic, x in acc])


def test_touched_pages_per_superpage_by_hand(tmp_path):
    r = analyze(crafted(tmp_path), interval=4)
    assert (r.data["intervals"], r.samples) == (3, 4)
    h = r.data["histogram"]
    assert (h[1], h[2], h[4]) == (2, 1, 1)
    assert (r.at_most(1), r.at_most(3), r.at_most(4)) == (0.5, 0.75, 1.0)
    # Table II's ranges: all four pairs have 1-32 touched pages.
    assert r.buckets()[0] == {"pages": "1-32", "share": 1.0}
    assert r.to_pandas().loc[2, "pairs"] == 1


def test_superpage_touch_cli(tmp_path, capsys):
    spec = crafted(tmp_path)
    png = tmp_path / "cdf.png"
    assert main(["superpage-touch", "--no-progress", spec, "--interval", "4", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "Table II's ranges" in out and "1-32" in out and "100.00%" in out
    assert png.stat().st_size > 1000
    assert main(["superpage-touch", "--no-progress", spec, "--interval", "4", "--json"]) == 0
    d = result(capsys.readouterr().out)
    assert d["samples"] == 4 and d["cdf"][1] == 0.5 and d["buckets"][0]["share"] == 1.0


@pytest.mark.parametrize(
    "args, msg",
    [
        (
            ["superpage-touch", "workload:gups?accesses=10", "--interval", "0"],
            "the interval must be at least 1 instruction",
        ),
        (["superpage-touch", "/nonexistent/t.xlat"], "/nonexistent/t.xlat"),
        (
            ["rainbow", "workload:gups?accesses=10", "--configs", "rainbow,nope"],
            "unknown configuration 'nope'",
        ),
        (
            ["rainbow", "workload:gups?accesses=10", "--set", "memory.size=1GiB"],
            "larger than the whole memory",
        ),
        (["rainbow", "workload:gups?accesses=10", "--dram", "lots"], "is not a size"),
        # Sizes are checked before any configuration runs, named as typed (not memory.size).
        (
            ["rainbow", "workload:gups?accesses=10", "--dram", "1B"],
            "--dram 1B is smaller than one 2MB superpage: each memory holds whole 2MB superpages",
        ),
        (["rainbow", "workload:gups?accesses=10", "--nvm", "3MiB"], "--nvm 3MiB is not a multiple of 2MiB"),
        (["rainbow", "workload:gups?accesses=10", "--nvm", "0"], "--nvm 0 is smaller than one 2MB superpage"),
        (
            ["rainbow", "workload:gups?accesses=10", "--dram", "1TiB", "--nvm", "4TiB"],
            "--dram 1TiB and --nvm 4TiB would make 5TiB of memory (DRAM 1TiB + NVM 4TiB), above the simulator's 4TiB",
        ),
        (
            ["rainbow", "workload:gups?accesses=10", "--set", "hybrid.top_superpages=0"],
            "hybrid.top_superpages = 0 must be at least 1",
        ),
    ],
)
def test_bad_input_is_one_sentence(capsys, args, msg):
    assert main([args[0], "--no-progress", *args[1:]]) == 1
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_the_five_configurations_on_gups():
    # GUPS over 256 MiB with 64 MiB of DRAM: random updates, every access a TLB miss with 4KB
    # pages; superpages (HSCC-2MB, Rainbow, DRAM-only) cover the table with 128 TLB entries.
    c = compare("workload:gups?size=256MiB&accesses=400000", dram="64MiB")
    rows = {r["config"]: r for r in c.rows()}
    assert list(rows) == list(CONFIGS)
    for r in rows.values():
        assert r["ipc"] > 0 and r["energy_nj"] > 0
        assert 0 <= r["translation_share"] < 1
    assert rows["rainbow"]["tlb_mpki"] < rows["hscc-4kb"]["tlb_mpki"] / 5, "superpages: far fewer TLB misses"
    assert rows["dram-only-2mb"]["ipc"] >= max(r["ipc"] for r in rows.values()) * 0.999, "the upper bound"
    assert rows["flat-static"]["migration_bytes"] == rows["dram-only-2mb"]["migration_bytes"] == 0
    assert rows["rainbow"]["case4"] + rows["rainbow"]["case3"] > 0
    # Flat-static spreads data by the zones' sizes, 64 MiB of DRAM to 32 GiB of NVM (1:512):
    # almost every read comes from NVM.
    assert rows["flat-static"]["dram_read_share"] < 0.05
    assert rows["dram-only-2mb"]["dram_read_share"] == 1.0
    assert rows["flat-static"]["ipc_vs_flat"] == 1.0
    # The overlap time model beside the additive one: gups' updates are independent, so its
    # misses overlap and every configuration runs at a far higher IPC than in series.
    assert rows["flat-static"]["ipc_overlap_vs_flat"] == 1.0
    for r in rows.values():
        assert r["ipc_overlap"] > 5 * r["ipc"], r["config"]
    assert rows["dram-only-2mb"]["ipc_overlap"] == max(r["ipc_overlap"] for r in rows.values())


def test_rainbow_cli_table_and_json(capsys):
    spec = "workload:gups?size=64MiB&accesses=20000"
    assert main(["rainbow", "--no-progress", spec, "--dram", "32MiB", "--configs", "hscc-4kb,rainbow"]) == 0
    out = capsys.readouterr().out
    assert "HSCC-4KB-mig" in out and "Rainbow" in out and "TLB misses / kilo-instruction" in out
    assert main(["rainbow", "--no-progress", spec, "--configs", "rainbow", "--json"]) == 0
    d = results(capsys.readouterr().out)
    assert [r["config"] for r in d] == ["rainbow"]


def test_dram_larger_than_nvm_is_a_warning_not_an_error(capsys):
    def run(config: str, *sizes: str) -> tuple[str, str]:
        spec = "workload:gups?size=16MiB&accesses=2000"
        assert main(["rainbow", "--no-progress", spec, "--configs", config, *sizes]) == 0
        return capsys.readouterr()

    out, err = run("hscc-4kb", "--dram", "64MiB", "--nvm", "32MiB")
    assert "HSCC-4KB-mig" in out
    assert err.count("\n") == 1 and err.startswith(
        "xlat: warning: DRAM (64.00 MiB) is larger than NVM (32.00 MiB): Rainbow and HSCC take NVM as the large"
    ), err
    # As large, or the default DRAM (4GiB) with a larger NVM: nothing to say.
    assert run("hscc-4kb", "--dram", "32MiB", "--nvm", "32MiB")[1] == ""
    assert run("flat-static", "--nvm", "8GiB")[1] == ""
    # The default DRAM above a smaller NVM given alone: said too.
    err = run("flat-static", "--nvm", "1GiB")[1]
    assert err.startswith("xlat: warning: DRAM (4.00 GiB) is larger than NVM (1.00 GiB)"), err
