#!/usr/bin/env python3
"""Soak test of ``xlat sweep`` under kills (issue 38): many random sweep points on a Dask
cluster of separate processes whose worker, scheduler and client are killed at random times,
checked point by point against an uninterrupted run.

What it does, all under ``--work DIR`` (default: a new temporary directory):

1. Makes a few small traces (``_native.convert`` of gups, chase, stride and stream workloads, plus
   a ``workload:zipf`` spec the workers generate themselves) and a sweep file whose ``[axes]`` and
   ``[[points]]`` hold random valid configurations of the Skylake preset (L2 TLB entries, ways and
   replacement, L1 TLB sizes, paging-structure caches, page policy), drawn from a seeded RNG, so
   that the sweep has exactly ``--points`` distinct points (traces x configurations: the number
   of traces is the largest divisor of ``--points`` up to 5).
2. Runs the sweep once uninterrupted into ``ref/`` (``xlat sweep FILE -o ref/ --workers 2``) and
   spot-checks a few of its rows against ``xlat.sim.simulate``.
3. Runs it again into ``soak/`` on one ``dask scheduler`` and two ``dask worker --nthreads 1
   --no-nanny`` processes and the client ``xlat sweep FILE -o soak/ --scheduler ADDR --group G
   --json -`` (G drawn per client run from 1, 2, 4, 8), and every ``--kill-every`` seconds (drawn
   uniformly) kills one of worker / scheduler / client, in shuffled rounds of the three so that
   each is killed about as often; by SIGKILL, or by SIGTERM for a share ``--sigterm`` of each
   kind's kills (one in each shuffled round of 1/sigterm). It restarts what is needed: a new
   worker; after the scheduler, the client must exit 1 with exactly one line on stderr
   containing "lost the Dask scheduler" (checked), then a new scheduler, new workers and the
   client again; after the client, the client again. A client that exits 0 with every point
   done ends the run. Kills stop once 75% of ``--max-minutes`` (counted from the script's start)
   has gone, so that the sweep can finish; the soak gives up when all of it has gone.
4. Checks that ``pandas.read_parquet("soak/")`` has exactly ``--points`` rows, unique keys, the
   same keys as ``ref/`` and every column of every row equal to ``ref/``'s (NaN equal to NaN);
   that no ``.tmp*`` file is left; counts the files set aside under ``soak/_damaged/`` (allowed:
   they were unreadable, and run again); checks the final client's ``--json`` summary
   (``already_done + ran == points``) and counts how many points each client run wrote.
5. Prints a summary (also ``DIR/summary.json``): kills by kind and signal, restarts, points
   simulated more than once because of kills (counted by a ``--preload`` of the workers that
   logs each finished ``run_group`` task's points: it wraps the function, not its results),
   damaged files, rows compared, mismatches, wall time. Exits 1 on any mismatch, lost or
   duplicated point, left-over temporary file or unexpected client exit.

Run from the repository (2 cores shared with other work: use nice)::

    nice .venv/bin/python scripts/soak-sweep.py --seed 38 --work /tmp/xlat-soak
    nice .venv/bin/python scripts/soak-sweep.py --points 60 --kill-every 1 4   # a quick one

Other options: ``--accesses`` (per trace, default 3,000,000: about 0.01-0.2 s a point here; stream
gets 4 x as many, zipf half), ``--sigterm``, ``--spot-check``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

PY = sys.executable
LOST = "lost the Dask scheduler"
UNREACHABLE = "cannot reach the Dask scheduler"
#: A worker preload: wraps xlat.sweep.run.run_group (tasks name it by reference) to log, per
#: worker process, each task started (its point count) and finished (the points it simulated).
PRELOAD = '''\
"""Soak instrumentation (scripts/soak-sweep.py): log the points each task simulated."""
import os

import xlat.sweep.run as _run

# Dask may load a preload twice (from its path and from a copy): always wrap the original.
_orig = getattr(_run, "_soak_original", _run.run_group)
_run._soak_original = _orig
_log = os.path.join(os.environ["XLAT_SOAK_SIMLOG"], f"sims-{os.getpid()}.log")


def _write(line):
    fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\\n").encode())
    finally:
        os.close(fd)


def run_group(trace, trace_hash, items, decode_once):
    _write(f"start {len(items)}")
    out = _orig(trace, trace_hash, items, decode_once)
    _write("done " + ",".join(k for k, s, _e in out if s is not None))
    return out


run_group.__module__ = _orig.__module__
run_group.__qualname__ = _orig.__qualname__
_run.run_group = run_group
'''


# ---- 1. the sweep -------------------------------------------------------------------------------


def make_traces(work: Path, rng: random.Random, accesses: int, n_traces: int) -> list[str]:
    """``n_traces`` of: gups, chase, stride, stream files and a zipf spec (generated by workers);
    ``accesses`` each, but 4 x as many for stream (cheap per access) and half for zipf (its
    generation is costly), so that a point takes about 0.01-0.2 s here."""
    from xlat import _native

    tdir = work / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    specs = [
        ("gups.xlat", f"workload:gups?size=1GiB&accesses={accesses}&seed={rng.randrange(1, 1000)}"),
        ("chase.xlat", f"workload:chase?size={rng.choice([128, 256, 512])}MiB&accesses={accesses}"
                       f"&seed={rng.randrange(1, 1000)}"),
        ("stride.xlat", f"workload:stride?size={rng.choice([64, 256])}MiB"
                        f"&stride={rng.choice([4096, 4160, 8192, 65536])}&accesses={accesses}"),
        ("stream.xlat", f"workload:stream?size={rng.choice([64, 256, 512])}MiB"
                        f"&kernel={rng.choice(['copy', 'scale', 'add', 'triad'])}&accesses={4 * accesses}"),
        (None, f"workload:zipf?size=512MiB&s={rng.choice([0.8, 0.99, 1.2])}&accesses={accesses // 2}"
               f"&seed={rng.randrange(1, 1000)}"),
    ]  # fmt: skip
    out = []
    for name, spec in specs[:n_traces]:
        if name is None:
            out.append(spec)
            continue
        _native.convert(spec, str(tdir / name))
        out.append(f"traces/{name}")
    return out


def random_overrides(rng: random.Random) -> dict[str, object]:
    """A random set of valid-looking overrides of the Skylake preset (checked by the caller)."""
    o: dict[str, object] = {}
    if rng.random() < 0.8:
        ways = rng.choice([4, 6, 8, 12, 16])
        o["tlb.stlb.entries"] = ways * rng.choice([16, 32, 48, 64, 96, 128, 256])
        o["tlb.stlb.ways"] = ways
    if rng.random() < 0.25:
        o["tlb.stlb.replacement"] = rng.choice(["lru", "tree-plru", "fifo", "random"])
    if rng.random() < 0.6:
        o["os.policy"] = rng.choice(["4k", "thp"])
    if rng.random() < 0.5:
        ways = rng.choice([2, 4, 8])
        o["tlb.l1d-4k.entries"] = ways * rng.choice([4, 8, 16, 32])
        o["tlb.l1d-4k.ways"] = ways
    if rng.random() < 0.25:
        o["tlb.l1d-2m.entries"] = 4 * rng.choice([2, 4, 8, 16])
    if rng.random() < 0.5:
        o["psc.pde.entries"] = 4 * rng.choice([1, 2, 4, 8, 16])
    if rng.random() < 0.2:
        o["psc.pdpte.entries"] = 4 * rng.choice([1, 2, 4])
    if not o:
        o["tlb.stlb.entries"] = 12 * rng.choice([16, 32, 64, 256])
    return o


def toml_value(v: object) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def make_sweep(work: Path, rng: random.Random, points: int, accesses: int) -> tuple[Path, int, int]:
    """Write ``work/sweep.toml`` with exactly ``points`` distinct points; returns its path, the
    number of traces and of configurations."""
    from xlat.sim import Run
    from xlat.sweep.store import config_hash

    n_traces = max(t for t in range(1, 6) if points % t == 0)
    n_configs = points // n_traces
    traces = make_traces(work, rng, accesses, n_traces)
    seen: set[str] = set()

    def fresh(o: dict[str, object]) -> bool:
        try:
            h = config_hash(Run(cpu="skylake", set=[f"{k}={v}" for k, v in o.items()]).check())
        except Exception:  # a combination the preset cannot take: draw another
            return False
        if h in seen:
            return False
        seen.add(h)
        return True

    # [axes]: a few L2 TLB sizes (the preset's 12 ways) x both page policies, when they fit.
    axes: dict[str, list[object]] = {}
    if n_configs >= 8:
        sizes = sorted(rng.sample([12 * s for s in (16, 32, 64, 96, 128, 256, 512)], 3))
        combos = [{"tlb.stlb.entries": e, "os.policy": p} for e in sizes for p in ("4k", "thp")]
        if all(fresh(c) for c in combos):
            axes = {"tlb.stlb.entries": sizes, "os.policy": ["4k", "thp"]}
        else:
            seen.clear()
    explicit: list[dict[str, object]] = []
    tries = 0
    while len(seen) < n_configs:
        tries += 1
        if tries > 100 * n_configs:
            raise SystemExit(f"soak: could not draw {n_configs} distinct configurations")
        o = random_overrides(rng)
        if fresh(o):
            explicit.append(o)
    lines = [
        "# Written by scripts/soak-sweep.py: random configurations of the Skylake preset.",
        "traces = [" + ", ".join(f'"{t}"' for t in traces) + "]",
        'cpus = ["skylake"]',
        "",
    ]
    if axes:
        lines.append("[axes]")
        lines += [f'"{k}" = [{", ".join(toml_value(v) for v in vs)}]' for k, vs in axes.items()]
        lines.append("")
    for o in explicit:
        lines.append("[[points]]")
        lines += [f'"{k}" = {toml_value(v)}' for k, v in o.items()]
    path = work / "sweep.toml"
    path.write_text("\n".join(lines) + "\n")
    return path, n_traces, n_configs


def sweep_keys(sweep_file: Path, scratch: Path) -> list[str]:
    """The keys of the sweep's points, as ``xlat sweep`` computes them."""
    from xlat.sweep import load
    from xlat.sweep.run import plan
    from xlat.sweep.store import Results, xlat_version

    version = xlat_version()
    planned, _ = plan(load(str(sweep_file)), Results(str(scratch), version), version)
    return [p.key for p in planned]


# ---- 2. the reference -----------------------------------------------------------------------


def xlat_sweep(*args: str) -> list[str]:
    return [PY, "-m", "xlat", "sweep", *args]


def spot_check(ref_df, sweep_file: Path, n: int, rng: random.Random) -> int:
    """Compare ``n`` random rows of the reference with xlat.sim.simulate of the same point."""
    from xlat.sim import simulate
    from xlat.sweep import load

    sw = load(str(sweep_file))
    by = {(p.trace, ";".join(p.sets)): p for p in sw.points}
    rows = ref_df.sample(n=min(n, len(ref_df)), random_state=rng.randrange(1 << 30))
    bad = 0
    for _, row in rows.iterrows():
        p = by[(row["trace"], row["set"])]
        want = simulate(p.trace, cpu=p.base, set=list(p.sets)).data
        for k, v in want["counters"].items():
            bad += row[k] != v
        for k, v in want["derived"].items():
            got = row[f"derived.{k}"]
            bad += not (got == v or (v is None and math.isnan(got)))
    return bad


# ---- 3. the soak ----------------------------------------------------------------------------


class Soak:
    """The processes of the soak: a scheduler, two worker slots, the client; and what happened."""

    def __init__(self, work: Path, sweep_file: Path, out: Path, rng: random.Random, args, budget_s: float):
        self.work, self.sweep_file, self.out, self.rng, self.args = work, sweep_file, out, rng, args
        self.logs = work / "logs"
        self.logs.mkdir(exist_ok=True)
        self.simlog = work / "sims"
        self.simlog.mkdir(exist_ok=True)
        self.preload = work / "soak_preload.py"
        self.preload.write_text(PRELOAD)
        self.dask = os.path.join(os.path.dirname(PY), "dask")
        self.gen = 0  # cluster generation (a new scheduler each)
        self.nspawn = Counter()
        self.scheduler: subprocess.Popen | None = None
        self.workers: dict[int, subprocess.Popen] = {}
        self.client: subprocess.Popen | None = None
        self.client_run: dict | None = None
        self.address = ""
        self.t0 = time.monotonic()
        self.budget_s = budget_s  # what is left of --max-minutes
        self.kills: Counter = Counter()  # (kind, signal name)
        self.runs: list[dict] = []  # one per client run
        self.anomalies: list[str] = []
        self.sigterm_escalations = 0
        self.tmp_after_client_kill = 0
        self.workers_left_after_scheduler = 0
        self.events = open(work / "events.log", "w")
        self.finished: dict | None = None

    # -- logging
    def say(self, msg: str) -> None:
        line = f"[{time.monotonic() - self.t0:7.1f} s] {msg}"
        print(line, flush=True)
        self.events.write(line + "\n")
        self.events.flush()

    def anomaly(self, msg: str) -> None:
        self.anomalies.append(msg)
        self.say("ANOMALY: " + msg)

    # -- processes
    def _spawn(self, name: str, cmd: list[str], env: dict | None = None, stdout=None) -> subprocess.Popen:
        self.nspawn[name] += 1
        log = open(self.logs / f"{name}-{self.nspawn[name]:03d}.log", "w")
        p = subprocess.Popen(
            cmd, stdout=stdout or log, stderr=log, env=env or dict(os.environ), stdin=subprocess.DEVNULL
        )
        log.close()
        return p

    def _sched_file(self) -> Path:
        return self.work / f"scheduler-{self.gen:03d}.json"

    def start_worker(self, slot: int) -> None:
        env = dict(os.environ, XLAT_SOAK_SIMLOG=str(self.simlog))
        self.workers[slot] = self._spawn(
            "worker",
            [self.dask, "worker", "--scheduler-file", str(self._sched_file()), "--nthreads", "1", "--no-nanny",
             "--no-dashboard", "--preload", str(self.preload)],
            env=env,
        )  # fmt: skip

    def start_cluster(self) -> None:
        self.gen += 1
        f = self._sched_file()
        self.scheduler = self._spawn(
            "scheduler", [self.dask, "scheduler", "--scheduler-file", str(f), "--port", "0", "--no-dashboard"]
        )
        for slot in (1, 2):
            self.start_worker(slot)
        deadline = time.monotonic() + 90
        while not f.exists():
            if time.monotonic() > deadline or self.scheduler.poll() is not None:
                raise SystemExit(f"soak: the scheduler did not start (see {self.logs})")
            time.sleep(0.05)
        time.sleep(0.2)
        self.address = json.loads(f.read_text())["address"]
        from distributed import Client

        with Client(self.address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=120)
        self.say(f"cluster {self.gen}: scheduler {self.address}, 2 workers")

    def points_on_disk(self) -> int:
        return sum(1 for n in os.listdir(self.out) if n.startswith("point-")) if self.out.exists() else 0

    def start_client(self) -> None:
        group = self.rng.choice([1, 2, 4, 8])
        n = len(self.runs) + 1
        out_path = self.logs / f"client-{n:03d}.json"
        err_path = self.logs / f"client-{n:03d}.err"
        cmd = xlat_sweep(str(self.sweep_file), "-o", str(self.out), "--scheduler", self.address,
                         "--group", str(group), "--json", "-")  # fmt: skip
        with open(out_path, "w") as so, open(err_path, "w") as se:
            self.client = subprocess.Popen(cmd, stdout=so, stderr=se, stdin=subprocess.DEVNULL)
        self.client_run = {
            "run": n,
            "group": group,
            "cluster": self.gen,
            "started": round(time.monotonic() - self.t0, 1),
            "on_disk_before": self.points_on_disk(),
            "stdout": str(out_path),
            "stderr": str(err_path),
        }
        self.runs.append(self.client_run)
        self.say(f"client run {n} (--group {group}); {self.client_run['on_disk_before']} points on disk")

    def end_client_run(self, how: str) -> dict:
        """Record how the current client run ended (after its process exited)."""
        r = self.client_run
        assert r is not None and self.client is not None
        r["rc"] = self.client.returncode
        r["how"] = how
        r["ended"] = round(time.monotonic() - self.t0, 1)
        r["on_disk_after"] = self.points_on_disk()
        r["wrote"] = r["on_disk_after"] - r["on_disk_before"]
        err = Path(r["stderr"]).read_text()
        r["stderr_lines"] = err.splitlines()
        out = Path(r["stdout"]).read_text()
        try:
            r["summary"] = json.loads(out)["results"][0] if out.strip() else None
        except ValueError:
            r["summary"] = None
            self.anomaly(f"client run {r['run']}: stdout is not JSON: {out[:200]!r}")
        self.client = None
        self.client_run = None
        s = r["summary"]
        extra = f", summary ran={s['ran']} already_done={s['already_done']}" if s else ""
        self.say(f"client run {r['run']} ended ({how}, rc {r['rc']}): wrote {r['wrote']} points{extra}")
        return r

    @staticmethod
    def stop(p: subprocess.Popen | None, sig: int = signal.SIGKILL, timeout: float = 30) -> bool:
        """Send ``sig`` to ``p`` and wait; a SIGTERM not obeyed in ``timeout`` s becomes SIGKILL.
        Returns whether it had to be escalated."""
        if p is None or p.poll() is not None:
            return False
        p.send_signal(sig)
        try:
            p.wait(timeout=timeout)
            return False
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return True

    def stop_all(self) -> None:
        for p in [self.client, self.scheduler, *self.workers.values()]:
            self.stop(p)

    # -- kills
    def kill(self, kind: str, sig: int) -> bool:
        """Kill one process of ``kind`` and restart what is needed; False: the client had
        exited on its own (the loop judges its exit first)."""
        if self.client is None or self.client.poll() is not None:
            return False
        name = signal.Signals(sig).name
        self.kills[(kind, name)] += 1
        if kind == "worker":
            slot = self.rng.choice(sorted(self.workers))
            self.say(f"kill {name} worker {slot} (pid {self.workers[slot].pid})")
            self.sigterm_escalations += self.stop(self.workers[slot], sig)
            self.start_worker(slot)
        elif kind == "client":
            assert self.client is not None
            self.say(f"kill {name} client (pid {self.client.pid})")
            self.sigterm_escalations += self.stop(self.client, sig)
            if self.out.exists() and any(n.startswith(".tmp") for n in os.listdir(self.out)):
                self.tmp_after_client_kill += 1  # killed mid-write: the next run removes it
            if self.client.returncode in (-signal.SIGKILL, -signal.SIGTERM):
                self.end_client_run(f"killed ({name})")["outcome"] = f"killed ({name})"
                self.start_client()
            else:  # it exited by itself just before the signal
                self.client_exited()
        else:
            assert self.scheduler is not None
            self.say(f"kill {name} scheduler (pid {self.scheduler.pid})")
            self.sigterm_escalations += self.stop(self.scheduler, sig)
            self.after_scheduler_died()
        return True

    def after_scheduler_died(self) -> None:
        """The client must stop with one sentence; then a new cluster and the client again."""
        assert self.client is not None
        try:
            self.client.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.anomaly(f"client run {self.client_run['run']} still running 120 s after the scheduler died")
            self.client.kill()
            self.client.wait()
        r = self.end_client_run("scheduler died")
        notes = [x for x in r["stderr_lines"] if DAMAGED_NOTE.match(x)]
        rest = [x for x in r["stderr_lines"] if not DAMAGED_NOTE.match(x)]
        if (
            r["rc"] == 0
            and r["summary"]
            and r["summary"]["already_done"] + r["summary"]["ran"] == r["summary"]["points"]
        ):
            r["outcome"] = "finished (exit 0) as the scheduler was killed"
            self.finished = r
        elif r["rc"] == 1 and len(rest) == 1 and LOST in rest[0]:
            r["outcome"] = "lost scheduler (one line)"
        elif r["rc"] == 1 and len(rest) == 1 and UNREACHABLE in rest[0]:
            r["outcome"] = "not yet connected: cannot reach (one line)"
        else:
            r["outcome"] = "unexpected"
            self.anomaly(
                f"client run {r['run']} after the scheduler died: rc {r['rc']}, stderr {rest!r} (+{len(notes)} notes)"
            )
        # Without their scheduler the workers should stop by themselves (docs/sweep.md).
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(w.poll() is None for w in self.workers.values()):
            time.sleep(0.05)
        self.workers_left_after_scheduler += sum(1 for w in self.workers.values() if w.poll() is None)
        for w in self.workers.values():
            self.stop(w)
        self.workers.clear()
        if self.finished is None:
            self.start_cluster()
            self.start_client()

    def client_exited(self) -> None:
        """Judge a client that exited on its own: finished (ends the soak), some points failed
        (run again), or anything else (an anomaly; run again)."""
        assert self.client is not None
        rc = self.client.returncode
        r = self.end_client_run("exited")
        s = r["summary"]
        notes = [x for x in r["stderr_lines"] if DAMAGED_NOTE.match(x)]
        rest = [x for x in r["stderr_lines"] if not DAMAGED_NOTE.match(x)]
        if rc == 0 and s and s["already_done"] + s["ran"] == s["points"] and not s["failed"]:
            r["outcome"] = "finished"
            self.finished = r
            return
        if rc == 1 and s and s["failed"]:
            r["outcome"] = "some points failed"
            r["failed"] = len(s["failed"])
            self.say(f"  {len(s['failed'])} failed, e.g. {s['failed'][0]['error'][:300]}")
        else:
            r["outcome"] = "unexpected"
            self.anomaly(f"client run {r['run']} exited {rc}: {rest[-3:]!r} (+{len(notes)} notes)")
        self.start_client()

    # -- the loop
    def run(self) -> dict | None:
        """Until a client exits 0 having every point: the final run's record (None: gave up)."""
        a = self.args
        deadline = self.t0 + self.budget_s
        stop_killing = self.t0 + self.budget_s - a.max_minutes * 60 * 0.25
        kinds: list[str] = []
        signals: dict[str, list[int]] = {"worker": [], "scheduler": [], "client": []}
        self.start_cluster()
        self.start_client()
        next_kill = time.monotonic() + self.rng.uniform(*a.kill_every)
        while self.finished is None:
            now = time.monotonic()
            if now > deadline:
                self.anomaly(f"gave up after {a.max_minutes} minutes")
                return None
            assert self.client is not None
            if self.client.poll() is not None:
                self.client_exited()
                if len([x for x in self.runs if x.get("outcome") == "unexpected"]) > 20:
                    self.anomaly("too many unexpected client exits")
                    return None
                continue
            if now >= next_kill and now < stop_killing:
                if not kinds:
                    kinds = ["worker", "scheduler", "client"]
                    self.rng.shuffle(kinds)
                kind = kinds[-1]
                if not signals[kind]:  # rounds of 1/sigterm kills of a kind, one of them SIGTERM
                    n = max(1, round(1 / a.sigterm)) if a.sigterm > 0 else 1
                    signals[kind] = [signal.SIGTERM] * (a.sigterm > 0) + [signal.SIGKILL] * (
                        n - (a.sigterm > 0)
                    )
                    self.rng.shuffle(signals[kind])
                if self.kill(kind, signals[kind][-1]):
                    kinds.pop()
                    signals[kind].pop()
                next_kill = time.monotonic() + self.rng.uniform(*a.kill_every)
                continue
            time.sleep(0.05)
        return self.finished


DAMAGED_NOTE = re.compile(r"^xlat: sweep (point|schema file) .* is .*; moved it to ")


# ---- 4. the checks --------------------------------------------------------------------------


def compare(ref, soak) -> tuple[int, int, list[str]]:
    """Rows compared, cells that differ (NaN equals NaN), and the first few differences."""
    r = ref.set_index("key").sort_index()
    s = soak.set_index("key").sort_index()
    common = r.index.intersection(s.index)
    r, s = r.loc[common], s.loc[common]
    notes = []
    bad = 0
    for c in sorted(set(r.columns) | set(s.columns)):
        if c not in r.columns or c not in s.columns:
            notes.append(f"column {c} only in {'ref' if c in r.columns else 'soak'}")
            bad += len(common)
            continue
        a, b = r[c], s[c]
        same = (a == b) | (a.isna() & b.isna())
        n = int((~same).sum())
        if n:
            bad += n
            k = same[~same].index[0]
            notes.append(f"column {c}: {n} rows differ, e.g. {k}: ref {a[k]!r} soak {b[k]!r}")
        if str(a.dtype) != str(b.dtype):
            notes.append(f"column {c}: ref {a.dtype}, soak {b.dtype}")
    return len(common), bad, notes


def sim_log(simlog: Path) -> tuple[Counter, int, int]:
    """Points simulated (key -> times, by tasks that finished), tasks started, tasks finished."""
    times: Counter = Counter()
    started = finished = 0
    for f in simlog.glob("sims-*.log"):
        for line in f.read_text().splitlines():
            if line.startswith("start "):
                started += 1
            elif line.startswith("done"):
                finished += 1
                times.update(k for k in line[5:].split(",") if k)
    return times, started, finished


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=1000, help="distinct sweep points (default 1000)")
    ap.add_argument("--seed", type=int, default=38, help="seed of every random draw (default 38)")
    ap.add_argument(
        "--work", type=Path, help="working directory, new or empty (default: a new temporary one)"
    )
    ap.add_argument("--max-minutes", type=float, default=45, help="give up when the whole soak "
                    "has taken this long (default 45); kills stop at 75%% of it")  # fmt: skip
    ap.add_argument("--accesses", type=int, default=3_000_000, help="accesses per trace (default 3,000,000)")
    ap.add_argument("--kill-every", type=float, nargs=2, default=(1.0, 8.0), metavar=("MIN", "MAX"),
                    help="seconds between kills, drawn uniformly (default 1 8)")  # fmt: skip
    ap.add_argument(
        "--sigterm", type=float, default=0.2, help="share of each kind's kills by SIGTERM (default 0.2)"
    )
    ap.add_argument("--spot-check", type=int, default=12, help="reference rows checked against xlat.sim")
    a = ap.parse_args()
    if a.points < 1:
        ap.error("--points must be at least 1")
    t_start = time.monotonic()
    work = a.work or Path(tempfile.mkdtemp(prefix="xlat-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    if any(work.iterdir()):
        ap.error(f"{work} is not empty")
    work = work.resolve()
    rng = random.Random(a.seed)

    import pandas as pd

    # 1.
    sweep_file, n_traces, n_configs = make_sweep(work, rng, a.points, a.accesses)
    keys = sweep_keys(sweep_file, work / "plan-scratch")
    shutil.rmtree(work / "plan-scratch")
    if len(keys) != a.points or len(set(keys)) != a.points:
        raise SystemExit(
            f"soak: the sweep has {len(set(keys))} distinct points of {len(keys)}, not {a.points}"
        )
    print(
        f"soak: {sweep_file}: {n_traces} traces x {n_configs} configurations = {a.points} points", flush=True
    )

    # 2.
    ref = work / "ref"
    t = time.monotonic()
    p = subprocess.run(xlat_sweep(str(sweep_file), "-o", str(ref), "--workers", "2", "--json", "-"),
                       capture_output=True, text=True)  # fmt: skip
    ref_seconds = time.monotonic() - t
    if p.returncode != 0:
        raise SystemExit(f"soak: the reference run failed ({p.returncode}): {p.stderr[-2000:]}")
    ref_summary = json.loads(p.stdout)["results"][0]
    ref_df = pd.read_parquet(ref)
    print(f"soak: reference: {len(ref_df)} rows in {ref_seconds:.0f} s "
          f"({ref_summary['points_per_minute']} points/min)", flush=True)  # fmt: skip
    spot_bad = spot_check(ref_df, sweep_file, a.spot_check, rng)

    # 3.
    out = work / "soak"
    soak = Soak(work, sweep_file, out, rng, a, a.max_minutes * 60 - (time.monotonic() - t_start))
    t = time.monotonic()
    try:
        final = soak.run()
    finally:
        soak.stop_all()
    soak_seconds = time.monotonic() - t

    # 4.
    problems: list[str] = list(soak.anomalies)
    if ref_summary["ran"] != a.points or len(ref_df) != a.points or not ref_df["key"].is_unique:
        problems.append(f"reference: ran {ref_summary['ran']}, {len(ref_df)} rows")
    if spot_bad:
        problems.append(f"reference: {spot_bad} values differ from xlat.sim.simulate")
    rows = compared = mismatches = 0
    notes: list[str] = []
    if final is None:
        problems.append("the soak did not finish")
    soak_df = pd.read_parquet(out) if out.exists() else pd.DataFrame()
    if "key" not in soak_df.columns:  # no point written at all
        soak_df = pd.DataFrame({"key": pd.Series([], dtype=object)})
    rows = len(soak_df)
    dup = int(soak_df["key"].duplicated().sum())
    missing = sorted(set(ref_df["key"]) - set(soak_df["key"]))
    extra = sorted(set(soak_df["key"]) - set(ref_df["key"]))
    compared, mismatches, notes = compare(ref_df, soak_df)
    if rows != a.points:
        problems.append(f"soak: {rows} rows, not {a.points}")
    if dup:
        problems.append(f"soak: {dup} duplicated keys")
    if missing or extra:
        problems.append(f"soak: {len(missing)} keys of the reference missing, {len(extra)} not in it")
    if set(ref_df["key"]) != set(keys):
        problems.append("reference keys are not the sweep's keys")
    if mismatches:
        problems.append(f"soak: {mismatches} values differ from the reference: {notes[:5]}")
    elif notes:
        problems.append(f"soak: {notes[:5]}")
    tmp = [str(q.relative_to(out)) for q in out.rglob(".tmp*")] if out.exists() else []
    if tmp:
        problems.append(f"soak: temporary files left: {tmp[:5]}")
    damaged_dir = sorted(n.name for n in (out / "_damaged").iterdir()) if (out / "_damaged").exists() else []
    damaged_noted = [x for r in soak.runs for x in r.get("stderr_lines", []) if DAMAGED_NOTE.match(x)]
    damaged_json = [d for r in soak.runs if r.get("summary") for d in r["summary"]["damaged"]]
    if final is not None:
        s = final["summary"]
        if s["already_done"] + s["ran"] != a.points or s["points"] != a.points or s["rows"] != a.points:
            problems.append(f"final client run: {s}")
    sims, started, finished = sim_log(soak.simlog)
    wrote = sum(r.get("wrote", 0) for r in soak.runs)
    if wrote != a.points:  # every point written once, plus any set aside and written again
        if wrote != a.points + len(damaged_dir):
            problems.append(f"client runs wrote {wrote} point files in all for {a.points} points")
    ran_json = sum(r["summary"]["ran"] for r in soak.runs if r.get("summary"))
    outcomes = Counter(r.get("outcome") or r.get("how") for r in soak.runs)

    kills_by_kind = Counter()
    for (kind, _sig), n in soak.kills.items():
        kills_by_kind[kind] += n
    summary = {
        "seed": a.seed,
        "points": a.points,
        "traces": n_traces,
        "configurations": n_configs,
        "accesses_per_trace": a.accesses,
        "kill_every_seconds": list(a.kill_every),
        "sigterm_share": a.sigterm,
        "reference_seconds": round(ref_seconds, 1),
        "reference_points_per_minute": ref_summary["points_per_minute"],
        "reference_spot_checked": min(a.spot_check, len(ref_df)),
        "kills": {f"{k} {s}": n for (k, s), n in sorted(soak.kills.items())},
        "kills_by_kind": dict(sorted(kills_by_kind.items())),
        "kills_total": sum(soak.kills.values()),
        "sigterm_escalated_to_sigkill": soak.sigterm_escalations,
        "clusters_started": soak.gen,
        "workers_started": soak.nspawn["worker"],
        "client_runs": len(soak.runs),
        "client_restarts": len(soak.runs) - 1,
        "client_outcomes": dict(outcomes),
        "client_runs_stopped_before_writing_a_point": sum(
            1 for r in soak.runs if r.get("outcome") != "finished" and r.get("wrote") == 0
        ),
        "client_kills_that_left_a_tmp_file": soak.tmp_after_client_kill,
        "workers_running_10s_after_scheduler_died": soak.workers_left_after_scheduler,
        "point_files_written_by_client_runs": wrote,
        "ran_in_json_summaries": ran_json,
        "json_summaries": sum(1 for r in soak.runs if r.get("summary")),
        "final_run": {k: final["summary"][k] for k in ("points", "already_done", "ran", "rows")}
        if final
        else None,
        "tasks_started_on_workers": started,
        "tasks_finished_on_workers": finished,
        "point_simulations_finished": sum(sims.values()),
        "points_simulated_more_than_once": sum(1 for n in sims.values() if n > 1),
        "extra_simulations": sum(sims.values()) - len(sims),
        "damaged_files": len(damaged_dir),
        "damaged_notices": len(damaged_noted),
        "damaged_in_json": len(damaged_json),
        "rows": rows,
        "rows_compared": compared,
        "duplicates": dup,
        "missing": len(missing),
        "mismatches": mismatches,
        "temporary_files_left": len(tmp),
        "soak_seconds": round(soak_seconds, 1),
        "wall_seconds": round(time.monotonic() - t_start, 1),
        "problems": problems,
        "work": str(work),
    }
    (work / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    (work / "client-runs.json").write_text(json.dumps(soak.runs, indent=1) + "\n")

    # 5.
    print("\n=== soak summary ===")
    w = max(len(k) for k in summary)
    for k, v in summary.items():
        if k != "problems":
            print(f"{k:<{w}}  {v}")
    print(f"{'problems':<{w}}  {len(problems)}")
    for pr in problems:
        print(f"  - {pr}")
    print("PASS" if not problems else "FAIL")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
