"""xlat.mrc and ``xlat mrc``: one-pass LRU miss-ratio curves (docs/mrc.md), by hand on a text
trace, against ``xlat.sim`` of the single-level configuration, and bad input."""

from __future__ import annotations

import pytest
import xlat
import xlat.sim as sim
from conftest import result
from xlat.cli import main
from xlat.missratio import TLB_NAMES, single_level_config

BASE = 0x7000_0000_0000
PAGE = 4096


def text_trace(tmp_path, pages: list[int]) -> str:
    """A text trace of one load per page number (4KB pages from BASE), one instruction apart."""
    lines = ["#xlat-text 1", '#header {"format":"xlat-trace","producer":"test"}']
    lines += [f"A 1 {ic} L {BASE + p * PAGE + 8:#x} 8" for ic, p in enumerate(pages)]
    path = tmp_path / "t.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_curves_by_hand(tmp_path):
    # Pages A B C A B D A (0, 1, 2, 0, 1, 3, 0). Fully associative LRU: A, B, C, D are new (4
    # misses at any size); the second A, second B and third A are at depth 3, so they hit from
    # 3 entries on: 7 misses with 1 or 2 entries, 4 from 3 entries on.
    # 2 sets (page number mod 2): set 0 sees A C A A (new, new, depth 2, depth 1), set 1 sees
    # B B D (new, depth 1, new): 1 way (2 entries): 3 + 2 = 5 misses; 2 ways (4 entries): 4.
    spec = text_trace(tmp_path, [0, 1, 2, 0, 1, 3, 0])
    r = xlat.mrc(spec, sets=[1, 2], max_entries=4, page_sizes=["4KB"])
    assert r.curve("4KB", 1)["misses"] == [7, 7, 4, 4]
    assert r.curve("4KB", 2)["misses"] == [5, 4]
    assert r.instructions == 7
    df = r.to_pandas()
    assert len(df) == 6
    at = df.set_index(["page_size", "sets", "entries"])
    assert at.loc[("4KB", 1, 3), "misses"] == 4
    assert at.loc[("4KB", 2, 2), "mpki"] == pytest.approx(1000 * 5 / 7)
    assert at.loc[("4KB", 1, 1), "miss_ratio"] == 1.0
    # Tidy: the three keys are columns, and to_csv(index=False) keeps them (issue 37, item 4).
    assert {"page_size", "sets", "entries"} <= set(df.columns) and list(df.index) == list(range(len(df)))
    header = df.to_csv(index=False).splitlines()[0].split(",")
    assert {"page_size", "sets", "entries"} <= set(header)


@pytest.mark.parametrize("policy", ["4k", "thp"])
def test_points_equal_separate_simulations(tmp_path, policy):
    spec = "workload:zipf?size=128MiB&accesses=20000&s=0.7"
    r = xlat.mrc(spec, policy=policy, sets=[1, 8], max_entries=512)
    cfg = tmp_path / "single.toml"
    cfg.write_text(single_level_config(cpu="skylake"))
    for sets, ways in [(1, 16), (1, 300), (8, 4), (8, 64)]:
        over = [f"os.policy={policy}"]
        for n in TLB_NAMES.values():
            over += [f"tlb.{n}.entries={sets * ways}", f"tlb.{n}.ways={ways}"]
        c = sim.simulate(spec, config=str(cfg), set=over).counters
        for size, suffix in [("4KB", "4k"), ("2MB", "2m")]:
            assert r.misses(size, entries=sets * ways, sets=sets) == c[f"walker.walks_{suffix}"], (
                sets,
                ways,
                size,
            )
    if policy == "thp":
        assert r.curve("2MB", 1)["accesses"] > 0


def test_cli_json_table_and_plot(tmp_path, capsys):
    spec = text_trace(tmp_path, [0, 1, 2, 0, 1, 3, 0])
    out, png = tmp_path / "m.json", tmp_path / "m.png"
    argv = ["mrc", "--no-progress", spec, "--sets", "1,2", "--max-entries", "4", "--page-sizes", "4KB"]
    assert main([*argv, "--json", str(out), "--plot", str(png)]) == 0
    d = result(out.read_text())
    assert [c["misses"] for c in d["curves"]] == [[7, 7, 4, 4], [5, 4]]
    assert png.stat().st_size > 1000
    table = capsys.readouterr().out
    # Entries 1, 2, 4: fully associative 7, 7, 4; 2 sets: (none), 5, 4.
    rows = [line.split() for line in table.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["1", "2", "4"]
    assert rows[2][1] == "4" and rows[2][3] == "4"
    assert main([*argv, "--json"]) == 0
    assert result(capsys.readouterr().out)["curves"][1]["misses"] == [5, 4]


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--sets", "1,12"], "set count 12 is not a power of two (1, 2, 4, ...; 1 is fully associative)"),
        (["--sets", "128", "--max-entries", "64"], "set count 128 is larger than --max-entries 64"),
        (["--page-sizes", "4KB,8KB"], "unknown page size '8KB' (known: 4KB, 2MB, 1GB)"),
        # An empty list is no page size, not all three; a size named twice is a mistake.
        (["--page-sizes", ""], "--page-sizes needs at least one page size (4KB, 2MB, 1GB)"),
        (["--page-sizes", "2MB,2MB"], "--page-sizes names 2MB twice; give each page size once"),
        (["--page-sizes", "4KB,2MiB,2mb"], "--page-sizes names 2MB twice"),
        (["--policy", "mosaic"], "--policy takes 4k or thp (mosaic comes from --layout), not 'mosaic'"),
        (["--max-entries", "0"], "--max-entries 0 must be from 1 to 16777216"),
        (["--set", "os.nonsense=1"], "nonsense"),
    ],
)
def test_cli_bad_input_is_one_sentence(capsys, args, msg):
    assert main(["mrc", "--no-progress", "workload:gups?size=64MiB&accesses=1000", *args]) == 1
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_a_page_size_given_twice_is_refused_before_reading():
    with pytest.raises(xlat.ConfigError, match="page size 2MB is given twice; give each page size once"):
        xlat.mrc("/nonexistent/t.xlat", page_sizes=["4KB", "2MB", "2MB"])


def test_cli_missing_trace_exits_non_zero(xlat_cli, tmp_path):
    p = xlat_cli("mrc", str(tmp_path / "none.xlat"), check=False)
    assert p.returncode == 1
    assert p.stderr.startswith("xlat: error: ") and p.stderr.count("\n") == 1


def test_plot_axes_and_range(tmp_path, capsys):
    # Issue 37, item 7: the y axis was linear (dominated by the 1-entry TLB) with no range option.
    pytest.importorskip("matplotlib")
    spec = "workload:gups?size=1GiB&accesses=20000"
    for extra in ([], ["--yscale", "linear", "--entries-range", "16,4096"]):
        png = tmp_path / f"m{len(extra)}.png"
        assert main(["mrc", spec, "--plot", str(png), "--no-progress", *extra]) == 0
        assert png.read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    assert main(["mrc", spec, "--plot", str(tmp_path / "x.png"), "--entries-range", "64,16"]) == 1
    assert "--entries-range takes LO,HI with 1 <= LO <= HI, not 64,16" in capsys.readouterr().err
