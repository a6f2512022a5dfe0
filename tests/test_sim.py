"""The simulator from Python and the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import xlat.sim as sim
from xlat.cli import main

ROOT = Path(__file__).resolve().parents[1]
GUPS = "workload:gups?size=1GiB&accesses=30000&seed=2"


def test_simulate_returns_counters_and_a_dataframe():
    r = sim.simulate(GUPS, cpu="skylake")
    c = r.counters
    assert c["accesses"] == 30000
    assert c["loads"] == c["stores"] == 15000
    # Every L1 miss either hits the STLB or walks.
    assert c["tlb_level1.data.misses"] == c["tlb_level2.data.lookups"]
    assert c["tlb_level2.data.misses"] == c["walker.walks"]
    assert r.derived["M"] == c["walker.walks"]
    df = r.to_pandas()
    assert df.shape[0] == 1
    assert (df.loc[0, "label"], df.loc[0, "walker.walks"]) == ("skylake/4k", c["walker.walks"])
    assert r.data["schema"] == "xlat-sim-result" and r.data["schema_version"] == 1


def test_several_configurations_in_order_and_deterministic():
    runs = [sim.Run(cpu="skylake"), sim.Run(cpu="skylake", set=["os.policy=thp"]), sim.Run(cpu="haswell")]
    a = sim.simulate_many(GUPS, runs, threads=1)
    b = sim.simulate_many(GUPS, runs, threads=2)
    assert [r.to_json() for r in a] == [r.to_json() for r in b]
    assert [r.label for r in a] == ["skylake/4k", "skylake/thp-always", "haswell/4k"]
    assert a[1].counters["walker.walks"] < a[0].counters["walker.walks"]
    assert list(a.to_pandas()["label"]) == [r.label for r in a]


def test_rows_carry_their_parameters():
    # Issue 37, item 2: 12 rows all indexed skylake/4k, no column for the overrides, no layout
    # name. Every row now says what made it, and the frame keeps it all through to_csv.
    pd = pytest.importorskip("pandas")
    runs = [
        sim.Run(cpu="skylake", set={"tlb.stlb.entries": 3072}),
        sim.Run(cpu="skylake", policy="thp"),
        sim.Run(cpu="skylake", layout=str(ROOT / "configs" / "layouts" / "mixed.toml")),
    ]
    df = sim.simulate_many(GUPS, runs, skip=100, limit=20_000).to_pandas()
    assert list(df.index) == [0, 1, 2]
    assert list(df["label"]) == ["skylake/4k", "skylake/thp-always", "skylake/mosaic:mixed"]
    assert list(df["layout"]) == ["", "", "mixed"]
    assert list(df["set"]) == ["tlb.stlb.entries=3072", "os.policy=thp", ""]
    assert df["set.tlb.stlb.entries"].tolist()[0] == 3072 and str(df["set.tlb.stlb.entries"].dtype) == "Int64"
    assert (df["trace"] == GUPS).all() and (df["window.limit"] == 20_000).all()
    back = pd.read_csv(io.StringIO(df.to_csv(index=False)))
    assert list(back["set.os.policy"].fillna("")) == ["", "thp", ""]


def test_time_series_is_sampled():
    r = sim.simulate(GUPS, cpu="skylake", set=["sim.interval_accesses=10000"])
    s = r.series_to_pandas()
    assert list(s["accesses"]) == [10000, 20000, 30000] == list(s["at"])
    assert s["walker.walks"].is_monotonic_increasing


def test_mosaic_layout(tmp_path):
    lay = tmp_path / "l.toml"
    lay.write_text(
        'version = 1\nname = "all-2MB"\n[anon]\nsize = "2GiB"\n'
        'windows = [ { offset = "0", length = "2GiB", page = "2MB" } ]\n'
    )
    r = sim.simulate(GUPS, cpu="skylake", layout=str(lay))
    assert r.policy == "mosaic" and r.label == "skylake/mosaic:all-2MB"
    assert r.counters["os.faults_2m"] > 0
    assert r.counters["walker.walks_4k"] <= 2  # the heap's first page at most


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--cpu", "pentium"], "there is no CPU preset named 'pentium'"),
        (["--set", "tlb.stlb.ways=7"], "ways = 7 does not divide entries = 1536"),
        (["--set", 'tlb.stlb.page_sizes=["4KB", "16KB"]'], "tlb[3] ('stlb').page_sizes[1]"),
        (["--set", "memory.size=-1"], "negative"),
        (["--set", "os.colour=blue"], "unknown field `colour`"),
        # issue 24 items 3 and 4: a traceback (inf -> None in the table) and a wrapped counter
        (["--set", "sim.base_cpi=inf"], "sim.base_cpi = inf must be between 0 and 10000"),
        (["--set", "sim.base_cpi=1e308"], "sim.base_cpi = 1e308 must be between 0 and 10000"),
        (
            ["--set", "memory.dram_latency=4611686018427387904"],
            "memory.dram_latency = 4611686018427387904 must be a whole number of cycles of at most 100000",
        ),
        (["--policies", "huge"], "--policies takes 4k and thp"),
    ],
)
def test_bad_configurations_are_one_sentence(capsys, argv, needle):
    assert main(["sim", "--no-progress", *argv, GUPS]) == 1
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("xlat: error: ")


def test_bad_layout_is_one_sentence(tmp_path, capsys):
    lay = tmp_path / "bad.toml"
    lay.write_text(
        'version = 1\n[heap]\nsize = "4GiB"\n'
        'windows = [ { offset = "1MiB", length = "2MiB", page = "2MB" } ]\n'
    )
    assert main(["sim", "--no-progress", "--layout", str(lay), GUPS]) == 1
    err = capsys.readouterr().err
    assert (
        "bad.toml: pool 'heap' window 0: offset '1MiB' (1048576 bytes) is not a multiple of the 2MB page size."
        in err
    )


def test_cli_writes_json_and_csv(tmp_path, capsys):
    out, csv = tmp_path / "r.json", tmp_path / "r.csv"
    rc = main(
        [
            "sim",
            "--no-progress",
            "--cpu",
            "zen4",
            "--policies",
            "4k,thp",
            GUPS,
            "--json",
            str(out),
            "--csv",
            str(csv),
        ]
    )
    assert rc == 0
    table = capsys.readouterr().out
    assert "zen4/4k" in table and "walks (M)" in table
    doc = json.loads(out.read_text())
    assert [r["policy"] for r in doc["results"]] == ["4k", "thp-always"]
    lines = csv.read_text().splitlines()
    assert len(lines) == 3 and lines[0].startswith("config,policy,config_hash,")


def test_cli_table_shows_walk_and_tlb_hit_cycle_shares_apart(capsys):
    """Walk cycles and L2-TLB hit cycles are different costs: one row each, no mixed row."""
    assert main(["sim", "--no-progress", "--policies", "4k,thp", GUPS]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines()[2:]:
        label, _, values = line.partition("  ")
        rows[label.strip()] = values.split()
    assert "translation share" not in rows
    runs = [sim.Run(cpu="skylake", set=[f"os.policy={p}"]) for p in ("4k", "thp")]
    expected = sim.simulate_many(GUPS, runs)
    for label, key in (("walk cycles share", "walk_share"), ("L2-TLB hit cycles share", "tlb_hit_share")):
        assert rows[label] == [f"{100 * r.derived[f'time.{key}']:.1f}%" for r in expected], label
    # THP turns most walks into L2-TLB hits, so the two shares differ in both configurations.
    assert rows["walk cycles share"] != rows["L2-TLB hit cycles share"]
    assert float(rows["L2-TLB hit cycles share"][1].rstrip("%")) > 0


def test_cli_plot_of_the_headline_figures(tmp_path):
    # Issue 37, item 7: xlat sim had no plot.
    pytest.importorskip("matplotlib")
    png = tmp_path / "s.png"
    rc = main(["sim", "--no-progress", "--policies", "4k,thp", GUPS, "--warmup", "1000", "--plot", str(png)])
    assert rc == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


REAL = ROOT / "crates/xlat-trace/tests/corpus/trace/dict-lookups-20k.xlat"


@pytest.mark.parametrize(
    ("trace", "window"),
    [
        (str(REAL), {}),  # a real trace (Python dict lookups traced under QEMU)
        (str(REAL), {"skip": 3000, "warmup": 2000, "limit": 9000}),
        ("workload:gups?size=4GiB&accesses=60000&seed=5", {"warmup": 10000}),
    ],
)
def test_several_configurations_read_the_input_once_and_equal_runs_of_their_own(trace, window):
    """simulate_many decodes the input once and hands every batch to all the simulators
    (issue 37, item 15); each result must equal that configuration run alone, counter for
    counter, whatever the threads (fewer threads than configurations too)."""
    runs = [
        sim.Run(cpu="skylake"),
        sim.Run(cpu="skylake", policy="thp"),
        sim.Run(cpu="haswell", layout="mixed"),
        sim.Run(cpu="zen4", set={"tlb.l2d.entries": 3072}),
        sim.Run(config="rmm/rmm"),
    ]
    alone = [sim.simulate_many(trace, [r], **window)[0] for r in runs]
    for threads in (1, 2, 3):
        together = sim.simulate_many(trace, runs, threads=threads, **window)
        for a, t in zip(alone, together, strict=True):
            assert t.counters == a.counters, (threads, t.config_name, t.policy)
            assert t.data.get("window") == a.data.get("window")
        # the input's time is shared: the configurations' input times add up to one reading
        assert all(r.timing["input_s"] <= r.timing["total_s"] for r in together)


def test_the_python_api_words_a_bad_override_as_set_not_as_the_command_line():
    """simulate(set={...}) named the override as the command line does ('--set ...'), which a
    notebook user never typed (issue 37, item 6)."""
    with pytest.raises(sim.ConfigError) as e:
        sim.simulate(GUPS, cpu="skylake", set={"tlb.l2d.entries": 3})
    msg = str(e.value)
    assert msg.startswith("set= 'tlb.l2d.entries=3': there is no tlb named 'l2d'") and "--set" not in msg
    # the command line keeps its own words
    p = io.StringIO()
    from contextlib import redirect_stderr

    with redirect_stderr(p):
        assert main(["sim", "--cpu", "skylake", "--set", "tlb.l2d.entries=3", GUPS]) == 1
    assert "--set 'tlb.l2d.entries=3'" in p.getvalue()
