"""``xlat sweep`` (docs/sweep.md): 42 points over 3 traces on a LocalCluster and on a scheduler
and two workers started as separate processes equal the same points simulated one by one; kill
-9 of a worker, of the client and of the scheduler mid-sweep, then the same command again: every
point exactly once and equal to the uninterrupted run; a changed sweep file re-runs only what
changed; bad input is one sentence."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("distributed")
pytest.importorskip("pyarrow")

from conftest import result  # noqa: E402
from xlat import _native  # noqa: E402
from xlat.sim import simulate  # noqa: E402
from xlat.sweep import load  # noqa: E402

ACCESSES = 60_000
SWEEP = """\
traces = ["gups.xlat", "chase.xlat", "workload:stride?size=64MiB&stride=4096&accesses={n}"]
cpus = ["skylake"]

[axes]
"tlb.stlb.entries" = [384, 768, 1536, 3072]
"os.policy" = ["4k", "thp"]

[[points]]
"tlb.l1d-4k.entries" = 32
[[points]]
"tlb.l1d-4k.entries" = 128
[[points]]
"tlb.l1d-4k.entries" = 128
"os.policy" = "thp"
[[points]]
"tlb.stlb.ways" = 6
[[points]]
"tlb.stlb.ways" = 4
"tlb.stlb.entries" = 1024
[[points]]
"psc.pde.entries" = 4
"""
POINTS = 3 * 14
#: Every task feeds its 8 configurations from one decoding of the trace.
ALWAYS_SHARED = ("--group", "8", "--decode-once", "always")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONWARNINGS="error")


def sweep_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "xlat", "sweep", *args]


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sweep")
    _native.convert(f"workload:gups?size=1GiB&accesses={ACCESSES}&seed=3", str(d / "gups.xlat"))
    _native.convert(f"workload:chase?size=256MiB&accesses={ACCESSES}", str(d / "chase.xlat"))
    (d / "sweep.toml").write_text(SWEEP.format(n=ACCESSES))
    return d


@pytest.fixture(scope="module")
def reference(sweep_dir) -> dict[tuple[str, str], dict]:
    """Every point simulated on its own, in this process (xlat.sim.simulate, what `xlat sim` runs),
    by (trace, overrides)."""
    sw = load(str(sweep_dir / "sweep.toml"))
    assert len(sw.points) == POINTS
    ref = {}
    for p in sw.points:
        r = simulate(p.trace, cpu=p.base, set=p.sets)
        ref[(p.trace, ";".join(p.sets))] = r.data
    return ref


def check_dataset(results: Path, reference: dict) -> None:
    """One row per point, each equal to its separate simulation in every counter and figure."""
    df = pd.read_parquet(results)
    assert len(df) == POINTS
    assert df["key"].is_unique
    assert set(zip(df["trace"], df["set"], strict=True)) == set(reference)
    for _, row in df.iterrows():
        want = reference[(row["trace"], row["set"])]
        assert row["sim_config_hash"] == want["config_hash"]
        for k, v in want["counters"].items():
            assert row[k] == v, (row["trace"], row["set"], k)
        for k, v in want["derived"].items():
            got = row[f"derived.{k}"]
            assert got == v or (v is None and math.isnan(got)), (row["trace"], row["set"], k)


def finished(results: Path) -> int:
    return sum(1 for n in os.listdir(results) if n.startswith("point-")) if results.exists() else 0


def test_local_cluster_equals_separate_runs(sweep_dir, reference, tmp_path):
    out = tmp_path / "res"
    p = subprocess.run(
        sweep_cmd(
            *(str(sweep_dir / "sweep.toml"), "-o", str(out), "--workers", "2", *ALWAYS_SHARED, "--progress"),
            *("--json", str(tmp_path / "s.json"), "--plot", "walker.walks", "--against", "tlb.stlb.entries"),
        ),
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert p.returncode == 0, p.stderr
    s = result((tmp_path / "s.json").read_text())
    assert (s["points"], s["ran"], s["already_done"], s["failed"]) == (POINTS, POINTS, 0, [])
    check_dataset(out, reference)
    # The table: a header and the first 40 points; the bar's last state; the plot.
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["trace", "point", "accesses", "walks"]
    assert len(lines) == 1 + 40 + 1 and "and 2 more points" in lines[-1]
    assert f"{POINTS}/{POINTS} points" in p.stderr
    png = Path(s["plot"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # One spot check through the command line itself: `xlat sim --json` of one point.
    one = subprocess.run(
        [sys.executable, "-m", "xlat", "sim", str(sweep_dir / "chase.xlat"), "--set", "tlb.stlb.entries=384",
         "--set", "os.policy=thp", "--json"],
        capture_output=True, text=True, env=_env(), check=True,
    )  # fmt: skip
    sim = result(one.stdout)
    df = pd.read_parquet(out)
    row = df[
        (df["trace"] == str(sweep_dir / "chase.xlat")) & (df["set"] == "tlb.stlb.entries=384;os.policy=thp")
    ]
    assert len(row) == 1 and int(row["walker.walks"].iloc[0]) == sim["counters"]["walker.walks"]


class Cluster:
    """A `dask scheduler` and two `dask worker`s, each a process of its own."""

    def __init__(self, where: Path):
        self.where = where
        self.procs: dict[str, subprocess.Popen] = {}
        self.start()

    def _spawn(self, name: str, args: list[str]) -> None:
        log = open(self.where / f"{name}.log", "w")
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_" + args[0], *args[1:]],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
        log.close()

    def start(self) -> None:
        f = self.where / "scheduler.json"
        f.unlink(missing_ok=True)
        self._spawn("scheduler", ["scheduler", "--scheduler-file", str(f), "--port", "0", "--no-dashboard"])
        # The workers start alongside and wait for the scheduler's file.
        for i in (1, 2):
            self._spawn(
                f"worker{i}",
                ["worker", "--scheduler-file", str(f), "--nthreads", "1", "--no-nanny", "--no-dashboard"],
            )
        deadline = time.monotonic() + 60
        while not f.exists():
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.05)
        time.sleep(0.2)
        self.address = json.loads(f.read_text())["address"]
        from distributed import Client

        with Client(self.address, timeout="20s") as c:
            c.wait_for_workers(2, timeout=60)

    def kill(self, name: str) -> None:
        self.procs[name].send_signal(signal.SIGKILL)
        self.procs[name].wait()

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait()


def kill_mid_sweep(sweep: Path, out: Path, address: str, victim) -> subprocess.Popen:
    """Start the sweep (one point per task), call ``victim`` once a few points are written and
    before all are; returns the client's process."""
    cmd = sweep_cmd(str(sweep), "-o", str(out), "--scheduler", address, "--group", "1", "--json", "-")
    client = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    before = finished(out)
    deadline = time.monotonic() + 60
    while finished(out) < before + 3:
        assert client.poll() is None, client.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert finished(out) < POINTS
    victim(client)
    return client


def test_scheduler_and_two_workers_with_kills(sweep_dir, reference, tmp_path):
    """One results directory through two kills in a row, then finished: every point once, each
    equal to its separate simulation; then a changed sweep file re-runs only what changed. (The
    scheduler's kill: test_scheduler_kill.)"""
    sweep = sweep_dir / "sweep.toml"
    out = tmp_path / "res"
    cluster = Cluster(tmp_path)
    try:
        # kill -9 of the client: what it wrote stays, nothing half-written.
        client = kill_mid_sweep(sweep, out, cluster.address, lambda c: c.send_signal(signal.SIGKILL))
        client.communicate()
        after_client = finished(out)
        assert 3 <= after_client < POINTS
        assert all(n.endswith(".parquet") or n.startswith(("_", ".tmp-")) for n in os.listdir(out))

        # kill -9 of a worker: Dask gives its task to the other one; the sweep completes and
        # runs exactly the points still missing.
        client = kill_mid_sweep(sweep, out, cluster.address, lambda c: cluster.kill("worker1"))
        stdout, stderr = client.communicate(timeout=120)
        assert client.returncode == 0, stderr
        s = result(stdout)
        assert (s["already_done"], s["ran"], s["failed"]) == (after_client, POINTS - after_client, [])
        check_dataset(out, reference)
        assert not [n for n in os.listdir(out) if n.startswith(".tmp")]

        # A fixed override the points already had resolves to the same configurations: nothing runs.
        # Another axis value re-runs only its points: 3 traces x 2 policies.
        changed = sweep_dir / "changed.toml"
        text = SWEEP.format(n=ACCESSES).replace("[384, 768, 1536, 3072]", "[384, 768, 1536, 6144]")
        changed.write_text(text.replace('cpus = ["skylake"]', 'cpus = ["skylake"]\nset = ["os.policy=4k"]'))
        p = subprocess.run(
            sweep_cmd(str(changed), "-o", str(out), "--scheduler", cluster.address, "--json", "-"),
            capture_output=True,
            text=True,
            env=_env(),
        )
        assert p.returncode == 0, p.stderr
        s = result(p.stdout)
        assert (s["points"], s["ran"], s["already_done"], s["rows"], s["rows_in_results"]) == (
            POINTS,
            6,
            POINTS - 6,
            POINTS,
            POINTS + 6,
        )
    finally:
        cluster.stop()


def test_scheduler_kill(sweep_dir, reference, tmp_path):
    """kill -9 of the scheduler mid-sweep: one sentence from the client; a new scheduler and
    workers and the same command finish the sweep, every point once and exact."""
    sweep = sweep_dir / "sweep.toml"
    out = tmp_path / "res"
    cluster = Cluster(tmp_path)
    try:
        client = kill_mid_sweep(sweep, out, cluster.address, lambda c: cluster.kill("scheduler"))
        _, stderr = client.communicate(timeout=120)
        assert client.returncode == 1
        assert stderr.count("\n") == 1 and "lost the Dask scheduler" in stderr, stderr
        had = finished(out)
        assert 3 <= had < POINTS
        cluster.stop()
        cluster = Cluster(tmp_path)
        p = subprocess.run(
            sweep_cmd(str(sweep), "-o", str(out), "--scheduler", cluster.address, "--json", "-"),
            capture_output=True,
            text=True,
            env=_env(),
        )
        assert p.returncode == 0, p.stderr
        s = result(p.stdout)
        assert (s["already_done"], s["ran"], s["failed"]) == (had, POINTS - had, [])
        check_dataset(out, reference)
    finally:
        cluster.stop()


# ---- bad input: one sentence each -------------------------------------------------------------


def one_sentence(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlat: error: "), p.stderr
    for w in words:
        assert w in lines[0], lines[0]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(sweep_cmd(*args), capture_output=True, text=True, env=_env())


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('[axes]\n"tlb.nope.entries" = [64]\n', ("axis 'tlb.nope.entries'", "no tlb named 'nope'")),
        ('[axes]\n"tlb.stlb.entries" = []\n', ("axis 'tlb.stlb.entries' is empty",)),
        (
            '[axes]\n"tlb.stlb.entries" = [1536, 1024]\n"tlb.stlb.ways" = [4, 12]\n',
            ("point skylake[tlb.stlb.entries=1024,tlb.stlb.ways=12]", "does not divide"),
        ),
        ('tracez = ["a"]\n', ("unknown key 'tracez'",)),
        ('traces = ["recipe:nope"]\n', ("no real workload named 'nope'",)),
        ("window = { skip = 5, lmit = 3 }\n", ("window must be a table of skip, warmup and limit",)),
        ("window = { limit = 0 }\n", ("window: limit takes at least 1 access",)),
    ],
)
def test_bad_sweep_files(tmp_path, body, words):
    f = tmp_path / "s.toml"
    f.write_text(body if body.startswith("traces") else 'traces = ["workload:gups?accesses=10"]\n' + body)
    one_sentence(run_cli(str(f), "-o", str(tmp_path / "r")), *words)


def test_unreachable_scheduler_fails_fast(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('traces = ["workload:gups?accesses=10"]\n')
    t = time.monotonic()
    p = run_cli(
        str(f), "-o", str(tmp_path / "r"), "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1"
    )
    one_sentence(p, "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 1 s")
    assert time.monotonic() - t < 20


def test_results_of_another_version(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('traces = ["workload:gups?accesses=10"]\n')
    r = tmp_path / "r"
    r.mkdir()
    (r / "_manifest.json").write_text('{"format": 1, "xlat_version": "xlat 0.0.1 (native 0.0.1)"}')
    one_sentence(
        run_cli(str(f), "-o", str(r)), "was written by xlat 0.0.1 (native 0.0.1)", "another results directory"
    )


# ---- the results directory --------------------------------------------------------------------


def test_a_rewritten_trace_gets_a_new_hash_even_with_its_old_size_and_mtime(tmp_path):
    from xlat.sweep.store import Results

    t = tmp_path / "t.bin"
    t.write_bytes(b"a" * 100)
    res = Results(str(tmp_path / "r"), "v1")
    first = res.trace_hash(str(t))
    st = os.stat(t)
    t.write_bytes(b"b" * 100)
    os.utime(t, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime: only ctime moved
    assert res.trace_hash(str(t)) != first
    assert Results(str(tmp_path / "r"), "v1").trace_hash(str(t)) == res.trace_hash(str(t))  # cached


def test_points_with_different_counters_read_in_one_call(tmp_path):
    from xlat.sweep.store import Results

    res = Results(str(tmp_path), "v1")
    res.write("a" * 32, {"key": "a" * 32, "walks": 5, "derived.mpki": 1.5})
    res.write("b" * 32, {"key": "b" * 32, "walks": 7, "range_tlb.hits": 3})
    df = pd.read_parquet(tmp_path).sort_values("key")
    assert df["walks"].tolist() == [5, 7]
    assert df["range_tlb.hits"].tolist()[1] == 3 and math.isnan(df["range_tlb.hits"].tolist()[0])
    assert df["derived.mpki"].tolist()[0] == 1.5


# ---- damaged files (issue 38 item 7) ----------------------------------------------------------

TINY = """\
traces = ["workload:gups?size=64MiB&accesses=2000&seed=5"]
cpus = ["skylake"]

[axes]
"tlb.stlb.entries" = [384, 768, 1536]
"""


def _truncate(path: Path, keep: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(keep)


def test_a_truncated_point_is_reported_set_aside_and_run_again(tmp_path):
    f = tmp_path / "tiny.toml"
    f.write_text(TINY)
    out = tmp_path / "res"
    first = run_cli(str(f), "-o", str(out), "--workers", "1", "--json", "-")
    assert first.returncode == 0, first.stderr
    before = pd.read_parquet(out).sort_values("key").reset_index(drop=True)
    assert len(before) == 3
    victim = sorted(out.glob("point-*.parquet"))[1]
    half = victim.stat().st_size // 2
    _truncate(victim, half)

    again = run_cli(str(f), "-o", str(out), "--workers", "1", "--json", "-")
    assert again.returncode == 0, again.stderr
    s = result(again.stdout)
    assert (s["points"], s["already_done"], s["ran"], s["failed"]) == (3, 2, 1, [])
    assert s["damaged"] == [str(victim)]
    notes = [line for line in again.stderr.splitlines() if line.startswith("xlat: ")]
    assert notes == [
        f"xlat: sweep point {victim} is unreadable (truncated or damaged); moved it to "
        f"{out / '_damaged' / victim.name}, running it again"
    ], again.stderr
    after = pd.read_parquet(out).sort_values("key").reset_index(drop=True)
    pd.testing.assert_frame_equal(after, before)
    assert (out / "_damaged" / victim.name).stat().st_size == half  # kept for inspection
    # And now nothing is missing: a third run runs nothing and says nothing about damage.
    third = run_cli(str(f), "-o", str(out), "--workers", "1", "--json", "-")
    assert third.returncode == 0 and result(third.stdout)["ran"] == 0
    assert "unreadable" not in third.stderr


def test_unreadable_files_are_set_aside_without_a_cluster(tmp_path):
    """Results alone: an empty point file, one whose row is another key's, and a truncated
    schema file are set aside; the rest reads as one dataset with every column."""
    from xlat.sweep.store import Results

    res = Results(str(tmp_path), "v1")
    a, b, c = "a" * 32, "b" * 32, "c" * 32
    res.write(a, {"key": a, "walks": 5, "derived.mpki": 1.5})
    res.write(b, {"key": b, "walks": 7, "range_tlb.hits": 3})
    res.write(c, {"key": c, "walks": 9})
    # Opened again: the three are read whole and remembered, not read again while unchanged...
    assert Results(str(tmp_path), "v1").done() == {a, b, c}
    checked = json.loads((tmp_path / "_checked-points.json").read_text())
    assert sorted(checked) == [f"point-{k}.parquet" for k in (a, b, c)]
    # ... but any change to a file is seen.
    _truncate(tmp_path / f"point-{a}.parquet", 0)
    os.replace(tmp_path / f"point-{c}.parquet", tmp_path / f"point-{'d' * 32}.parquet")
    _truncate(tmp_path / "000-schema.parquet", 10)

    again = Results(str(tmp_path), "v1")
    assert again.done() == {b}
    why = {Path(d.path).name: (d.key, d.why) for d in again.damaged}
    assert why == {
        f"point-{a}.parquet": (a, "unreadable (truncated or damaged)"),
        f"point-{'d' * 32}.parquet": ("d" * 32, "not the one row of its key"),
        "000-schema.parquet": (None, "unreadable (truncated or damaged)"),
    }
    assert sorted(os.listdir(tmp_path / "_damaged")) == sorted(why)
    msg = {d.key: d.message(d.key != "d" * 32) for d in again.damaged}
    assert msg[a].endswith("running it again") and "not a point of this sweep" in msg["d" * 32]
    assert msg[None].startswith(f"sweep schema file {tmp_path / '000-schema.parquet'} is unreadable")
    df = pd.read_parquet(tmp_path)
    assert df["key"].tolist() == [b] and df["range_tlb.hits"].tolist() == [3]
    # The point set aside is written again like any other; the schema keeps every column.
    again.write(a, {"key": a, "walks": 5, "derived.mpki": 1.5})
    df = pd.read_parquet(tmp_path).sort_values("key")
    assert df["walks"].tolist() == [5, 7] and df["derived.mpki"].tolist()[0] == 1.5


def test_a_window_is_every_point_s_and_part_of_its_key(tmp_path):
    # Issue 37, item 1: `window = {skip, warmup, limit}` in the sweep file; each point equals
    # xlat.sim.simulate with the same window, and the same points over the whole trace are other
    # points (their keys differ), so neither is taken for the other.
    spec = "workload:gups?size=1GiB&accesses=60000"
    body = f'traces = ["{spec}"]\n[axes]\n"tlb.stlb.entries" = [768, 1536]\n'
    f = tmp_path / "w.toml"
    f.write_text("window = { skip = 5000, warmup = 10000, limit = 30000 }\n" + body)
    out = tmp_path / "res"
    p = run_cli(str(f), "-o", str(out), "--workers", "1", "--json", "-")
    assert p.returncode == 0, p.stderr
    df = pd.read_parquet(out)
    assert len(df) == 2 and set(df["window.warmup"]) == {10_000}
    for _, row in df.iterrows():
        e = int(row["axis.tlb.stlb.entries"])
        want = simulate(spec, set=[f"tlb.stlb.entries={e}"], skip=5000, warmup=10_000, limit=30_000)
        assert row["accesses"] == 30_000 and row["walker.walks"] == want.counters["walker.walks"]
    whole = tmp_path / "whole.toml"
    whole.write_text(body)
    p = run_cli(str(whole), "-o", str(out), "--workers", "1", "--json", "-")
    assert p.returncode == 0, p.stderr
    s = result(p.stdout)
    assert (s["already_done"], s["ran"]) == (0, 2)


def test_axis_columns_are_typed_from_the_sweep_file(tmp_path):
    # Issue 37, item 4: axis values were stored as text (1536 sorted before 768).
    spec = "workload:gups?size=1GiB&accesses=5000"
    f = tmp_path / "t.toml"
    f.write_text(
        f'traces = ["{spec}"]\n[axes]\n"tlb.stlb.entries" = [1536, 768]\n"os.policy" = ["4k"]\n'
        '"sim.data_through_caches" = [false]\n'
    )
    out = tmp_path / "res"
    p = run_cli(str(f), "-o", str(out), "--workers", "1")
    assert p.returncode == 0, p.stderr
    df = pd.read_parquet(out).sort_values("axis.tlb.stlb.entries")
    assert (
        list(df["axis.tlb.stlb.entries"]) == [768, 1536] and str(df["axis.tlb.stlb.entries"].dtype) == "int64"
    )
    assert list(df["axis.os.policy"]) == ["4k", "4k"] and df["axis.sim.data_through_caches"].dtype == bool
    # The same axis given text values into the same directory: one sentence, not a mixed dataset.
    g = tmp_path / "u.toml"
    g.write_text(f'traces = ["{spec}"]\n[axes]\n"tlb.stlb.entries" = [3072, "768"]\n')
    p = run_cli(str(g), "-o", str(out), "--workers", "1")
    assert p.returncode == 1 and "column axis.tlb.stlb.entries is int64" in p.stderr, p.stderr
