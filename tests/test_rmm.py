"""Redundant Memory Mappings (seed 000 chapter 4) from Python and the command line."""

from __future__ import annotations

import numpy as np
import pytest
import xlat.rmm as rmm
from conftest import results
from xlat.cli import main
from xlat.models import rmm_performance_model

# A gups over 512 MiB: every design touches most of it, so eager paging's extra memory is small.
GUPS = "workload:gups?size=512MiB&accesses=400000&seed=3"


def test_summarize_by_hand():
    # Runs of 64, 16, 16, 4, 4, 4 and ten of 1 page: 118 pages, 16 runs, 3 of at least 8 pages.
    runs = [(64, 1), (16, 2), (4, 3), (1, 10)]
    s = rmm.summarize(runs)
    assert (s["pages"], s["runs"], s["ranges"], s["max_pages"]) == (118, 16, 3, 64)
    assert s["coverage"] == pytest.approx(96 / 118)
    assert (s["median_pages"], s["average_pages"]) == (16.0, 32.0)
    # Largest first the sums are 64, 80, 96, 100, 104, 108, 109, ..., 118: 99% of 118 (116.82)
    # needs the first 15 runs.
    assert s["ranges_for_99"] == 15
    assert s["largest_share"] == pytest.approx(64 / 118)
    # The same runs as an array of sizes, in any order, give the same figures.
    sizes = np.repeat([1, 4, 16, 64], [10, 3, 2, 1])
    assert rmm.summarize(sizes[::-1]) == s
    # A threshold of 1 keeps every run.
    assert rmm.summarize(runs, threshold=1)["ranges"] == 16
    assert rmm.summarize(runs, {"entries_4k": 100, "entries_2m": 2})["page_entries"] == 102
    with pytest.raises(ValueError, match="positive"):
        rmm.summarize([(0, 3)])


def test_rmm_removes_the_walks_and_eager_paging_forms_few_ranges():
    ev = rmm.evaluate(GUPS, designs=("4KB", "THP", "RMM", "CTLB", "DS", "demand+THP", "eager"), threads=2)
    rows = {r["design"]: r for r in ev.rows}
    base, thp, r = rows["4KB"], rows["THP"], rows["RMM"]
    # Section 4.8: the 32-entry range TLB removes more than 99% of the L2 TLB misses.
    assert base["walks"] > 100_000
    assert r["walks_removed"] >= 0.99
    assert r["range_tlb_hits"] + r["walks"] >= base["walks"]
    # Every page walk inside a range is followed by a range-table walk: 2 lines per node.
    assert 1 <= r["range_walks"] <= r["walks"] and r["range_walk_loads"] >= 2 * r["range_walks"]
    assert base["range_walks"] == 0
    # Section 4.8's baselines: the direct segment maps the table (the largest range) and
    # removes nearly every walk; the Clustered TLB's 512 entries reach 512 x 8 pages = 16 MiB of
    # the 512 MiB table, so most random accesses still walk, but fewer than with 4KB pages.
    ds, ctlb = rows["DS"], rows["CTLB"]
    assert ds["walks_removed"] >= 0.99 and ds["direct_segment_hits"] > 0.99 * base["walks"]
    assert ctlb["cluster_tlb_hits"] > 0 and ctlb["walks"] < base["walks"]
    assert ctlb["walks"] + ctlb["cluster_tlb_hits"] >= base["walks"]
    # Table 4.7: eager paging maps the footprint with a handful of ranges, demand paging with
    # THP needs one per 2MB page at least (orders of magnitude more).
    assert rows["eager"]["contiguity.ranges_for_99"] <= 50
    assert rows["eager"]["contiguity.coverage"] > 0.99
    assert rows["demand+THP"]["contiguity.ranges"] >= 100 * rows["eager"]["contiguity.ranges"]
    assert rows["demand+THP"]["contiguity.median_pages"] == 512
    # Table 4.5 from the simulated counters, as the model function computes it.
    m = rmm_performance_model(
        t_2m=ev.results["THP"].derived["time.total_cycles"],
        c_2m=ev.results["THP"].derived["time.walk_cycles"],
        c_4k=ev.results["4KB"].derived["time.walk_cycles"],
        m_4k=base["walks"],
        m_sim=r["walks"],
    )
    assert r["over_sim"] == pytest.approx(m["overhead_sim"])
    assert base["over_sim"] == pytest.approx(base["over_4k"])
    assert r["over_sim"] < thp["over_sim"] < base["over_sim"]
    # Eager paging instantiates at least what demand paging touched.
    assert r["frames_in_use"] >= base["frames_in_use"]


def test_a_result_without_contiguity_says_so():
    import xlat.sim as sim

    with pytest.raises(ValueError, match=r"sim\.contiguity=true"):
        rmm.contiguity(sim.simulate("workload:gups?size=64MiB&accesses=1000"))


def test_cli_prints_the_table_and_json(capsys):
    assert main(["rmm", "--no-progress", GUPS, "--designs", "4KB,RMM", "--json"]) == 0
    rows = results(capsys.readouterr().out)
    assert [r["design"] for r in rows] == ["4KB", "RMM"]
    assert rows[1]["walks_removed"] >= 0.99
    assert main(["rmm", "--no-progress", GUPS, "--designs", "4KB,THP,RMM"]) == 0
    out = capsys.readouterr().out
    assert "Table 4.5" in out and "walks removed vs 4KB" in out


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--designs", "4KB,foo"], "unknown design 'foo'"),
        (["--threshold", "0"], "--threshold must be at least 1 page"),
        (
            ["--designs", "RMM", "--set", "range_tlb.range.entries=0"],
            "entries = 0 must be between 1 and 1024",
        ),
        (["--designs", "RMM", "--set", "os.range_threshold=0"], "os.range_threshold = 0 must be a positive"),
        # A field that defines a design: the 4KB column would silently be a second THP one.
        (
            ["--set", "os.policy=thp"],
            "--set os.policy=thp would change what design 4KB is (os.policy is part of its definition)",
        ),
        (["--designs", "THP,RMM", "--set", "os.allocation=demand"], "would change what design RMM is"),
    ],
)
def test_cli_bad_input_is_one_sentence(capsys, args, msg):
    assert main(["rmm", "--no-progress", "workload:gups?size=64MiB&accesses=1000", *args]) == 1
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


@pytest.mark.parametrize("threshold", [0, -3])
def test_a_bad_threshold_is_refused_before_simulating(monkeypatch, capsys, threshold):
    def never(*a, **k):
        raise AssertionError("simulated before checking the threshold")

    monkeypatch.setattr(rmm, "simulate_many", never)
    big = "workload:gups?size=4GiB&accesses=50000000"
    with pytest.raises(ValueError, match=f"the range threshold must be at least 1 page, not {threshold}"):
        rmm.evaluate(big, threshold=threshold)
    assert main(["rmm", "--no-progress", big, "--threshold", str(threshold)]) == 1
    err = capsys.readouterr().err
    assert f"--threshold must be at least 1 page, not {threshold}" in err and err.count("\n") == 1


def test_a_file_mapping_lies_outside_the_range_table_unless_backed_eagerly(tmp_path, capsys):
    # Two 4MiB private file mappings (fds 3 and 4) read page by page in turn: Algorithm 4.1 backs
    # anonymous memory only, so their pages are demand-paged, each fault taking the next free
    # frame: no two pages of one file on consecutive frames, no range (every page outside the
    # range table). RMM+files (os.eager_files) backs each at mmap time: two ranges cover them.
    a, b = 0x7F00_0000_0000, 0x7F10_0000_0000
    lines = ["#xlat-text 1", '#header {"format":"xlat-trace","producer":"test"}']
    lines.append(f"S 1 1 mmap 0x0 0x400000 0x1 0x2 0x3 0x0 {a}")
    lines.append(f"S 1 1 mmap 0x0 0x400000 0x1 0x2 0x4 0x0 {b}")
    for i in range(1024):
        lines += [f"A 1 {2 + 2 * i} L {a + i * 4096:#x} 8", f"A 1 {3 + 2 * i} L {b + i * 4096:#x} 8"]
    t = tmp_path / "file.txt"
    t.write_text("\n".join(lines) + "\n")
    assert main(["rmm", "--no-progress", str(t), "--designs", "4KB,RMM,RMM+files", "--json"]) == 0
    rows = {r["design"]: r for r in results(capsys.readouterr().out)}
    assert "outside_ranges" not in rows["4KB"]
    assert rows["RMM"]["outside_ranges"] == 1.0
    assert rows["RMM+files"]["outside_ranges"] == 0.0
    assert rows["RMM+files"]["walks"] < rows["RMM"]["walks"]
    assert main(["rmm", "--no-progress", str(t), "--designs", "4KB,RMM"]) == 0
    assert "footprint outside the range table" in capsys.readouterr().out


def test_the_help_names_every_design(capsys):
    # --designs' help is written out (the CLI imports xlat.rmm lazily): it must list every
    # design design_runs knows, and design_runs must know every design the help lists.
    with pytest.raises(SystemExit):
        main(["rmm", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    listed = text.split("designs among ", 1)[1].split(" (default", 1)[0].split(", ")
    assert set(rmm.design_runs(designs=tuple(listed))) == set(listed)
    with pytest.raises(ValueError) as e:
        rmm.design_runs(designs=("nonsense",))
    assert set(str(e.value).split("choose among ", 1)[1].split(", ")) == set(listed)


def test_rmm_with_the_overlap_time_model(xlat_cli):
    p = xlat_cli("rmm", "--time", "overlap", "--json", "-", "workload:gups?size=1GiB&accesses=100000")
    rows = {r["design"]: r for r in results(p.stdout)}
    assert rows["4KB"]["overlap_speedup_vs_4k"] == 1.0
    # RMM and THP remove the walks, so both run faster than 4KB under the overlap model too.
    assert rows["RMM"]["overlap_speedup_vs_4k"] > 1.2 and rows["THP"]["overlap_speedup_vs_4k"] > 1.2
    assert all(r["overlap_cycles"] > 0 for r in rows.values())


def test_cli_csv_and_plot(tmp_path):
    # Issue 37, item 15: xlat rmm had no --csv and no --plot.
    pytest.importorskip("matplotlib")
    pd = pytest.importorskip("pandas")
    import subprocess
    import sys

    csv, png = tmp_path / "r.csv", tmp_path / "r.png"
    p = subprocess.run(
        [sys.executable, "-m", "xlat", "rmm", "workload:gups?size=1GiB&accesses=20000", "--csv", str(csv),
         "--plot", str(png), "--no-progress"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    df = pd.read_csv(csv)
    assert list(df["design"]) == ["4KB", "THP", "RMM"] and (df["walks"] > 0).any()
    assert png.read_bytes()[:4] == b"\x89PNG"
