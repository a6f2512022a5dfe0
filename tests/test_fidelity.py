"""xlat.fidelity and ``xlat fidelity``: fidelity loss of access/dirty bits at G bits per 2MB page
(PRISM, seed 004 Section 3) on hand-made text traces, every figure by hand."""

from __future__ import annotations

import pytest
from conftest import result
from trace_support import text_trace
from xlat.cli import main
from xlat.fidelity import analyze

BASE = 0x7000_0000_0000  # 2MB-aligned
REGION = 2 << 20


def test_loss_entropy_and_dirty_bits_by_hand(tmp_path):
    # Epoch 0 (instructions 1..=10): region 0 loads page 0, stores page 2; region 1 loads page 0.
    # Epoch 1: region 0 loads page 511.
    spec = text_trace(
        tmp_path,
        [(0, "L", BASE), (1, "S", BASE + 2 * 4096), (2, "L", BASE + REGION), (10, "L", BASE + 511 * 4096)],
    )
    r = analyze(spec, epoch=10, epochs=[10, 20])
    d = r.data
    assert (d["epochs"], d["samples"], d["regions"], d["dirty_samples"]) == (2, 3, 2, 1)
    # Accessed: {0,2} loses 510 at one bit, {0} and {511} 511 each.
    assert r.loss("accessed", 1) == pytest.approx((510 + 511 + 511) / 3 / 512)
    # G=128 (4 pages a bit): {0,2} one bit, 2 wrong; {0} 3; {511} 3.
    assert r.loss("accessed", 128) == pytest.approx((2 + 3 + 3) / 3 / 512)
    assert r.loss("accessed", 512) == 0
    # Dirty only from the store: {2}, and two clear vectors.
    assert r.loss("dirty", 1) == pytest.approx(511 / 3 / 512)
    # Entropy at 512 bits: {0,2}, {0}, {511}: log2 3; at 2 bits: (1,0), (1,0), (0,1): 1 bit.
    df = r.to_pandas()
    assert df.loc[("accessed", 512), "distinct"] == 3
    assert df.loc[("accessed", 2), "entropy"] == pytest.approx(1.0)
    assert df.loc[("dirty", 512), "distinct"] == 2  # {2} and the clear vector
    # Windows of 2 epochs: region 0 accumulates {0,2,511} (1 window), region 1 {0}.
    sc = r.scales_to_pandas()
    assert sc.loc[(20, 1), "samples"] == 2
    assert sc.loc[(20, 1), "spatial_accessed"] == pytest.approx((509 + 511) / 2 / 512)
    # Temporal: region 0: 3 bits x 2 epochs = 6 readings, 3 true; region 1: one epoch only
    # (the run has 2, the region's bit {0} is clear in epoch 1): 1 wrong of 2. Pairs 512 x 2 x 2.
    assert sc.loc[(20, 1), "temporal_accessed"] == pytest.approx((3 + 1) / 2048)


def test_cli_table_json_and_plot(tmp_path, capsys):
    spec = "workload:zipf?size=64MiB&accesses=20000&writes=0.5"
    png = tmp_path / "loss.png"
    assert (
        main(
            [
                "fidelity",
                "--no-progress",
                spec,
                "--epoch",
                "10000",
                "--epochs",
                "10000,40000",
                "--plot",
                str(png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "fidelity loss per granularity" in out and "A entropy" in out and "40,000" in out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    assert (
        main(["fidelity", "--no-progress", spec, "--epoch", "10000", "--granularities", "1,32,512", "--json"])
        == 0
    )
    d = result(capsys.readouterr().out)
    assert [s["g"] for s in d["accessed"]] == [1, 32, 512]
    # zipf: 6 instructions an access, the first counts 1: 119,995 instructions, 12 epochs.
    assert (d["instructions"], d["epochs"], d["accesses"]) == (119_995, 12, 20_000)
    a = [s["mean"] for s in d["accessed"]]
    assert a[0] > a[1] > a[2] == 0


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--granularities", "1,3"], "granularity 3 is not a power of two from 1 to 512"),
        (["--granularities", "1024"], "granularity 1024 is not a power of two from 1 to 512"),
        (["--granularities", "-2"], "granularity -2 is not a power of two from 1 to 512"),
        (["--epoch", "0"], "the epoch must be at least 1 instruction, not 0"),
        (["--epoch", "10", "--epochs", "15"], "epoch length 15 is not a positive multiple of the epoch (10"),
    ],
)
def test_cli_bad_input_is_one_sentence(capsys, args, msg):
    assert main(["fidelity", "--no-progress", "workload:gups?size=64MiB&accesses=1000", *args]) == 1
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


def test_cli_bad_input_exits_non_zero(xlat_cli):
    p = xlat_cli("fidelity", "workload:gups?accesses=10", "--epoch", "0", check=False)
    assert p.returncode == 1
    assert p.stderr == "xlat: error: the epoch must be at least 1 instruction, not 0\n"


def _reference(accesses: list[tuple[int, str, int]], epoch: int, k: int):
    """An independent, naive reading of docs/prism.md: per (region, epoch) sets of pages; loss
    per G by counting pages; distinct coarse vectors as tuples; windows of k epochs."""
    first = accesses[0][0]
    epochs: dict[int, dict[int, tuple[set, set]]] = {}
    for ic, kind, addr in accesses:
        e = (ic - first) // epoch  # instruction n = ic - first + 1: epoch (n - 1) // N
        region, page = addr >> 21, (addr >> 12) & 511
        a, d = epochs.setdefault(e, {}).setdefault(region, (set(), set()))
        a.add(page)
        if kind == "S":
            d.add(page)
    out = {}
    for t in (0, 1):
        for g in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
            s = 512 // g
            losses, vecs = [], set()
            for regions in epochs.values():
                for pair in regions.values():
                    coarse = tuple(any(p // s == j for p in pair[t]) for j in range(g))
                    vecs.add(coarse)
                    losses.append((s * sum(coarse) - len(pair[t])) / 512)
            out[(t, g)] = (sum(losses) / len(losses), len(vecs))
    # Temporal loss over windows of k epochs (pooled over pairs).
    n_epochs = max(epochs) + 1
    wrong = pairs = 0
    for w in range(0, n_epochs, k):
        kw = min(k, n_epochs - w)
        union: dict[int, list] = {}
        for e in range(w, w + kw):
            for region, (a, _) in epochs.get(e, {}).items():
                union.setdefault(region, []).append(a)
        for sets in union.values():
            ored = set().union(*sets)
            wrong += kw * len(ored) - sum(len(x) for x in sets)
            pairs += 512 * kw
    return out, wrong / pairs


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_matches_a_naive_reference_on_random_traces(tmp_path, seed):
    import random

    rng = random.Random(seed)
    accesses, ic = [], 0
    for _ in range(3000):
        ic += rng.randint(1, 3)
        region = rng.randint(0, 3)
        # Clustered pages in some regions, scattered in others.
        page = rng.randint(0, 40) if region < 2 else rng.randint(0, 511)
        accesses.append((ic, rng.choice("LLS"), BASE + region * REGION + page * 4096 + rng.randint(0, 4095)))
    spec = text_trace(tmp_path, accesses)
    r = analyze(spec, epoch=500, epochs=[500, 2000])
    ref, temporal = _reference(accesses, 500, 4)
    for (t, g), (mean, distinct) in ref.items():
        kind = ("accessed", "dirty")[t]
        s = next(s for s in r.data[kind] if s["g"] == g)
        assert s["mean"] == pytest.approx(mean, abs=1e-12), (kind, g)
        assert s["distinct"] == distinct, (kind, g)
    assert r.data["scales"][1]["temporal_accessed"] == pytest.approx(temporal, abs=1e-12)


def test_a_trace_shorter_than_the_epoch_or_the_windows_is_warned_about(tmp_path):
    # Issue 37, item 13: the default 100M-instruction epoch on a short trace gave rows that all
    # looked alike, with 0% temporal loss, and no word.
    import subprocess
    import sys

    spec = "workload:stream?size=64MiB&accesses=100000"
    p = subprocess.run(
        [sys.executable, "-m", "xlat", "fidelity", spec, "--json", str(tmp_path / "f.json")],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "fewer than one epoch of 100,000,000" in p.stderr and "exceed the trace's" in p.stderr
    d = result((tmp_path / "f.json").read_text())
    assert len(d["warnings"]) == 2
    short = analyze(spec, epoch=10_000, epochs=[10_000, 20_000, 40_000])
    assert short.warnings() == []
