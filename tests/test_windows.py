"""Windows of a trace (issue 37, item 1; docs/windows.md): ``--skip``, ``--warmup`` and
``--limit`` on every command that reads a trace, and ``xlat cut``.

- A warm-up by hand: an independent LRU model of a 16-entry fully associative TLB, fed the
  accesses after the skip, counting misses only after the warm-up, equals xlat's walks.
- ``xlat cut`` then ``xlat sim`` equals ``xlat sim --skip --limit`` in every counter, on a
  workload with side events (address-space switches, mmaps) in the skipped part.
- The result names its window (JSON, pandas); bad windows are one sentence.
(The exactness of a warm-up for every design: crates/xlat-core/tests/window.rs.)"""

from __future__ import annotations

import random
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest
import xlat
from conftest import result
from xlat.sim import simulate

MACH = str(Path(__file__).resolve().parents[1] / "configs" / "mach" / "ptlb.toml")

PAGE = 4096
BASE = 0x7F00_0000_0000
ONE_TLB = """
name = "one-tlb"
[[tlb]]
name = "l1"
level = 1
role = "unified"
entries = 16
ways = 16
page_sizes = ["4KB"]
replacement = "lru"
"""


def text_trace(path, pages: list[int]) -> str:
    lines = ["#xlat-text 1", '#header {"format":"xlat-trace","producer":"test"}']
    lines += [f"A 1 {ic} L {BASE + p * PAGE + 8:#x} 8" for ic, p in enumerate(pages)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def lru_misses(pages: list[int], entries: int, counted_from: int) -> int:
    """Misses of a fully associative LRU TLB of ``entries`` over ``pages``, counting only the
    accesses at index ``counted_from`` and after (the ones before warm it)."""
    tlb: OrderedDict[int, None] = OrderedDict()
    misses = 0
    for i, p in enumerate(pages):
        if p in tlb:
            tlb.move_to_end(p)
            continue
        misses += i >= counted_from
        tlb[p] = None
        if len(tlb) > entries:
            tlb.popitem(last=False)
    return misses


@pytest.mark.parametrize(
    ("skip", "warmup", "limit"),
    [(0, 0, None), (0, 500, None), (700, 0, 1000), (700, 300, 1000), (1, 2998, 1), (2999, 0, None)],
)
def test_a_warm_up_by_hand_against_an_lru_model(tmp_path, skip, warmup, limit):
    rng = random.Random(7)
    # Page reuse at distances around the TLB's 16 entries: hits and misses both.
    pages = [rng.randrange(24) if rng.random() < 0.8 else rng.randrange(200) for _ in range(3000)]
    spec = text_trace(tmp_path / "t.txt", pages)
    cfg = tmp_path / "one.toml"
    cfg.write_text(ONE_TLB)
    r = simulate(spec, config=str(cfg), skip=skip, warmup=warmup, limit=limit)
    seen = pages[skip:][: None if limit is None else warmup + limit]
    assert r.counters["accesses"] == len(seen) - warmup
    assert r.counters["walker.walks"] == lru_misses(seen, 16, warmup)
    assert r.counters["tlb.l1.misses"] == r.counters["walker.walks"]
    assert r.counters["instructions"] == len(seen) - warmup
    assert r.window == (
        None if (skip, warmup, limit) == (0, 0, None) else {"skip": skip, "warmup": warmup, "limit": limit}
    )


def test_cut_then_sim_equals_sim_with_skip_and_limit(tmp_path):
    # The client/server workload switches address spaces and maps memory throughout: the cut
    # keeps the skipped part's side events, so the OS builds the same mappings.
    spec = "workload:clientserver?servers=3&rounds=40"
    out = tmp_path / "cut.xlat"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlat",
            "cut",
            spec,
            str(out),
            "--skip",
            "9_000",
            "--limit",
            "12k",
            "--json",
            "-",
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    summary = result(p.stdout)
    assert summary["accesses"] == 12_000 and summary["side_events"] > 100
    info = xlat.trace_info(str(out))
    assert info["info"]["accesses"] == 12_000
    direct = simulate(spec, config=MACH, skip=9_000, limit=12_000)
    via_cut = simulate(str(out), config=MACH)
    assert via_cut.counters == direct.counters
    assert direct.counters["os.context_switches"] > 0
    # Every mapping made in the skipped part reached the OS (none had to be inferred from an
    # access); with no warm-up they are counted in the window, where they were applied.
    whole = simulate(spec, config=MACH, limit=21_000)
    assert direct.counters["os.mmaps"] == whole.counters["os.mmaps"] > 0
    assert direct.counters["os.inferred_vmas"] == 0


def test_the_cli_reports_its_window(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "xlat", "sim", "workload:gups?size=1GiB&accesses=100000", "--skip", "10k",
         "--warmup", "20000", "--limit", "30_000", "--json", str(tmp_path / "r.json"), "--csv", str(tmp_path / "r.csv")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    d = result((tmp_path / "r.json").read_text())
    assert d["window"] == {"skip": 10_000, "warmup": 20_000, "limit": 30_000}
    assert d["counters"]["accesses"] == 30_000
    assert "window  skip 10,000, warm-up 20,000 (not counted), counted 30,000 accesses" in p.stdout
    header = (tmp_path / "r.csv").read_text().splitlines()[0].split(",")
    assert {"window.skip", "window.warmup", "window.limit"} <= set(header)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["sim", "--warmup", "5000"],
            "the warm-up of 5000 accesses is longer than the trace (1000 accesses)",
        ),
        (
            ["sim", "--skip", "600", "--warmup", "500"],
            "longer than the trace after --skip 600 (400 accesses)",
        ),
        (["sim", "--limit", "0"], "limit takes at least 1 access"),
        (["sim", "--skip", "ten"], "expected a count of accesses such as 2000000 or 2M, not 'ten'"),
        (["mrc", "--warmup", "10"], "unrecognized arguments: --warmup"),
    ],
)
def test_bad_windows_are_one_sentence(args, words):
    spec = "workload:stream?size=64MiB&accesses=1000"
    p = subprocess.run(
        [sys.executable, "-m", "xlat", *args[:1], spec, *args[1:]], capture_output=True, text=True
    )
    assert p.returncode != 0
    lines = p.stderr.strip().splitlines()
    assert words in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len([ln for ln in lines if ln.startswith("xlat")]) <= 2, p.stderr


def test_analyses_take_skip_and_limit():
    spec = "workload:stream?size=64MiB&accesses=20000"
    a = xlat.mrc(spec, skip=5000, limit=10_000, page_sizes=["4KB"])
    b = xlat.mrc(spec, page_sizes=["4KB"])
    assert a.instructions < b.instructions
    cols = xlat.read_accesses(spec, limit=10, skip=19_995)
    assert len(cols["addr"]) == 5


def test_accesses_make_a_dataframe():
    # Issue 37, item 4: pd.DataFrame(xlat.read_accesses(...)) failed (a side list beside the
    # numpy columns); the side events are now an attribute.
    pd = pytest.importorskip("pandas")
    acc = xlat.read_accesses("workload:clientserver?servers=2&rounds=5", limit=2000)
    df = pd.DataFrame(acc)
    assert len(df) == 2000 and list(df.columns) == ["addr", "icount", "tid", "size", "kind"]
    assert df["addr"].dtype == "uint64" and len(acc.side) > 0 and "side" not in acc
