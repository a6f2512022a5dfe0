"""Running a sweep on Dask distributed: a LocalCluster of worker processes by default, or an
existing cluster (``scheduler="tcp://HOST:PORT"``). Points that share a trace go to one task in
groups of up to ``group`` configurations, which the worker simulates decoding the trace once
(``_native.simulate_shared``); the client writes each finished point (xlat.sweep.store), so the
workers need no shared file system for the results, only the traces at the same paths.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xlat.sweep.spec import Point, Sweep, SweepError, axis_value
from xlat.sweep.store import (
    Results,
    config_hash,
    content_hash,
    file_stat_key,
    layout_hash,
    point_key,
    window_hash,
    xlat_version,
)

#: Seconds to wait for a scheduler before saying it cannot be reached.
CONNECT_TIMEOUT_S = 5.0
#: Points of one trace per Dask task: fewer tasks (each costs the scheduler about a millisecond)
#: against less work lost when a worker dies, and enough tasks to keep every worker busy.
DEFAULT_GROUP = 4

#: ``decode_once="auto"`` shares a trace's decoding when it took at least this share of a run
#: (decoding is then as costly as simulating; benches/sweep_bench.py measured 6-10% on the
#: synthetic traces, where sharing was slower: the simulators evict each other's state).
SHARE_WHEN = 0.5
DECODE_ONCE = ("auto", "always", "never")

_worker_hashes: dict[str, tuple[list[int], str]] = {}
_share_decision: dict[str, bool] = {}


def _separately(trace: str, args: list, window=None) -> list[tuple[str | None, str | None]]:
    from xlat import _native

    out: list[tuple[str | None, str | None]] = []
    for a in args:
        try:
            out.append((_native.simulate(trace, [a], 1, False, window)[0][0], None))
        except _native.XlatError as e:
            out.append((None, str(e)))
    return out


def run_group(trace: str, trace_hash: str | None, items: list, decode_once: str, window=None) -> list:
    """On a worker: simulate ``trace`` under each (key, native args) of ``items``; returns
    (key, result JSON or None, error or None) per item. A trace file is checked against the
    client's content hash first (a worker with another copy of the file must not mix results).

    ``decode_once``: ``always`` feeds every configuration from one decoding of the trace,
    ``never`` runs each on its own, ``auto`` decides once per trace on this worker from the
    first point's timing: share when decoding took at least ``SHARE_WHEN`` of its run.
    ``window``: (skip, warmup, limit) of every point (xlat.window), or None for the whole trace."""
    from xlat import _native

    if trace_hash is not None:
        path = os.path.abspath(trace)
        st = file_stat_key(path)
        hit = _worker_hashes.get(path)
        if hit is None or hit[0] != st:
            hit = (st, content_hash(path))
            _worker_hashes[path] = hit
        if hit[1] != trace_hash:
            import socket

            msg = f"trace {trace} on worker host {socket.gethostname()} differs from the one the sweep hashed"
            return [(k, None, msg) for k, _ in items]
    args = [a for _, a in items]
    out: list[tuple[str | None, str | None]] = []
    share = decode_once == "always"
    if decode_once == "auto":
        if trace not in _share_decision and args:
            try:
                s, _open, input_s, total_s = _native.simulate(trace, [args[0]], 1, False, window)[0]
                out.append((s, None))
                _share_decision[trace] = total_s > 0 and input_s >= SHARE_WHEN * total_s
            except _native.XlatError as e:
                out.append((None, str(e)))
            args = args[1:]
        share = _share_decision.get(trace, False)
    if share and len(args) > 1:
        out += _native.simulate_shared(trace, args, False, window)
    else:
        out += _separately(trace, args, window)
    return [(k, s, e) for (k, _), (s, e) in zip(items, out, strict=True)]


@dataclass
class Planned:
    point: Point
    key: str
    config_hash: str
    layout_hash: str
    trace_hash: str
    resolved: dict


@dataclass
class Outcome:
    total: int = 0
    skipped: int = 0
    ran: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    workers: int = 0
    scheduler: str = ""
    #: Every point's key (the results directory may also hold points of earlier sweep files).
    keys: set[str] = field(default_factory=set)
    #: Files found unreadable and moved to ``RESULTS/_damaged/`` (their points run again).
    damaged: list[str] = field(default_factory=list)


def recipe_trace_path(root: str, name: str) -> str:
    """Where a results directory ``root`` keeps the trace of recipe ``name``."""
    return os.path.join(root, "_traces", f"{name}.xlat")


def resolve_recipes(sweep: Sweep, results: Results, progress: bool) -> dict[str, str]:
    """``recipe:NAME`` traces: traced once into RESULTS/_traces/NAME.xlat (xlat workloads real)."""
    out = {}
    for t in sweep.traces:
        if not t.startswith("recipe:"):
            continue
        name = t.removeprefix("recipe:")
        from xlat import real_workloads as rw

        rw.find(name)  # an unknown recipe is one sentence before anything runs
        path = recipe_trace_path(results.root, name)
        if not os.path.exists(path):
            # Traced into a directory of its own, then renamed: a killed tracing leaves no trace
            # file that a later sweep would take for whole.
            part = os.path.join(results.root, "_traces", f".part-{name}")
            os.makedirs(part, exist_ok=True)
            rw.run(name, os.path.join(part, f"{name}.xlat"), progress=progress)
            os.replace(os.path.join(part, f"{name}.xlat"), path)
            shutil.rmtree(part, ignore_errors=True)  # what else the tracing left there
        out[t] = path
    return out


def plan(sweep: Sweep, results: Results, version: str) -> tuple[list[Planned], dict[str, str]]:
    """Key every point (hashing each trace once) and say where each trace is read from."""
    paths = resolve_recipes(sweep, results, False)
    th = {t: results.trace_hash(paths.get(t, t)) for t in sweep.traces}
    # A window is part of what a point reads (keys of whole-trace points stay as they were).
    kh = th if sweep.window.whole else {t: window_hash(h, sweep.window) for t, h in th.items()}
    lh: dict[str | None, str] = {}
    resolved_cache = dict(sweep.resolved)  # built when the sweep file was checked
    out = []
    for p in sweep.points:
        ck = (p.base_kind, p.base, p.sets, p.layout)
        if ck not in resolved_cache:
            resolved_cache[ck] = p.run().check()
        if p.layout not in lh:
            lh[p.layout] = layout_hash(p.layout)
        resolved = resolved_cache[ck]
        ch = config_hash(resolved)
        out.append(
            Planned(
                p, point_key(kh[p.trace], ch, lh[p.layout], version), ch, lh[p.layout], th[p.trace], resolved
            )
        )
    return out, paths


def row_of(
    pl: Planned, result: dict, version: str, axis_keys: list[str], window=None, axis_types=None
) -> dict[str, Any]:
    p = pl.point
    row: dict[str, Any] = {
        "key": pl.key,
        "trace": p.trace,
        "trace_hash": pl.trace_hash,
        "config_hash": pl.config_hash,
        "layout_hash": pl.layout_hash,
        "xlat_version": version,
        "base": p.base,
        "config_name": result["config_name"],
        "policy": result["policy"],
        "layout": "" if p.layout is None else os.path.basename(p.layout),
        "set": ";".join(p.sets),
        "sim_config_hash": result["config_hash"],
        "config_json": json.dumps(result["config"], sort_keys=True),
    }
    if window is not None and not window.whole:
        row.update({"window.skip": window.skip, "window.warmup": window.warmup, "window.limit": window.limit})
    ax = dict(p.axes)
    types = axis_types or {}
    for k in axis_keys:
        v = ax.get(k)
        row[f"axis.{k}"] = None if v is None else axis_value(v, types.get(k, "string"))
    row.update(result["counters"])
    row.update({f"derived.{k}": v for k, v in result["derived"].items()})
    if "contiguity" in result:  # sim.contiguity=true: the runs and entries, as JSON text
        row["contiguity_json"] = json.dumps(result["contiguity"], sort_keys=True)
    return row


def groups(todo: list[Planned], group: int) -> list[list[Planned]]:
    """Points of one trace together, in chunks of at most ``group``."""
    by_trace: dict[str, list[Planned]] = {}
    for pl in todo:
        by_trace.setdefault(pl.point.trace, []).append(pl)
    out = []
    for pls in by_trace.values():
        out += [pls[i : i + group] for i in range(0, len(pls), group)]
    return out


def connect(scheduler: str | None, workers: int | None, connect_timeout: float):
    """A Dask client: on the scheduler given, or on a new LocalCluster of worker processes."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.comm.timeouts.connect": f"{connect_timeout}s"})
    # The client's own log lines (lost connections, retries) would repeat what the sweep says.
    for name in ("distributed", "distributed.client", "distributed.core", "distributed.comm"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    if scheduler:
        try:
            return Client(scheduler, timeout=f"{connect_timeout}s"), None
        except (OSError, TimeoutError, ValueError) as e:
            why = str(e).split("\n")[0]
            raise SweepError(
                f"cannot reach the Dask scheduler at {scheduler} within {connect_timeout:g} s ({why})"
            ) from None
    n = workers or os.cpu_count() or 1
    cluster = LocalCluster(
        n_workers=n,
        threads_per_worker=1,
        processes=True,
        # A port of its own: None still binds the scheduler's HTTP server to 8787, and a second
        # sweep on the machine then warns ("Port 8787 is already in use").
        dashboard_address=":0",
        silence_logs=logging.ERROR,
    )
    return Client(cluster), cluster


def run_sweep(
    sweep: Sweep,
    results_dir: str,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    group: int = DEFAULT_GROUP,
    decode_once: str = "auto",
    connect_timeout: float = CONNECT_TIMEOUT_S,
    on_progress: Callable[[int, int, float], None] | None = None,
    on_notice: Callable[[str], None] | None = None,
) -> Outcome:
    """Run every point of ``sweep`` not yet in ``results_dir``; see the module's docs.
    ``on_notice`` gets one sentence per point file found unreadable (set aside and run again;
    default: a line ``xlat: ...`` on stderr)."""
    from xlat._optional import need_sweep

    need_sweep()
    if group < 1:
        raise SweepError(f"--group must be at least 1, not {group}")
    if decode_once not in DECODE_ONCE:
        raise SweepError(f"decode_once is one of {', '.join(DECODE_ONCE)}, not '{decode_once}'")
    version = xlat_version()
    results = Results(results_dir, version)
    planned, paths = plan(sweep, results, version)
    done = results.done()
    # One task per key: a sweep naming the same point twice runs it once.
    todo = list({pl.key: pl for pl in planned if pl.key not in done}.values())
    keys = {pl.key for pl in planned}
    out = Outcome(total=len(keys), skipped=len(keys & done), keys=keys)
    notice = on_notice or _notice
    for d in results.damaged:
        notice(d.message(d.key is None or d.key in keys))
        out.damaged.append(d.path)
    if not todo:
        return out
    from distributed import as_completed

    client, cluster = connect(scheduler, workers, connect_timeout)
    t0 = time.perf_counter()  # the rate counts from a ready cluster
    try:
        out.scheduler = scheduler or "LocalCluster"
        out.workers = (
            len(client.scheduler_info(n_workers=-1).get("workers", {}))
            if scheduler
            else (workers or os.cpu_count() or 1)
        )
        by_key = {pl.key: pl for pl in todo}
        futures = []
        carried: dict[str, list[str]] = {}
        for g in groups(todo, group):
            trace = g[0].point.trace
            path = paths.get(trace, trace)
            th = None if path.startswith("workload:") else g[0].trace_hash
            items = [(pl.key, pl.point.run()._native_args()) for pl in g]
            fut = client.submit(run_group, path, th, items, decode_once, sweep.window.native(), pure=False)
            carried[fut.key] = [pl.key for pl in g]
            futures.append(fut)
        if on_progress:
            on_progress(0, len(todo), 0.0)
        for fut in as_completed(futures):
            try:
                res = fut.result()
            except Exception as e:  # a task's own error: its points fail, the others go on
                if _lost_scheduler(client, e):
                    raise SweepError(
                        f"lost the Dask scheduler {out.scheduler} mid-sweep; the {out.ran} points finished "
                        "are kept: start it again and rerun the same command to run the rest"
                    ) from None
                for k in carried[fut.key]:
                    pt = by_key[k].point
                    out.failed.append({"key": k, "point": f"{pt.trace} {pt.label}", "error": str(e)})
                continue
            for k, s, err in res:
                pl = by_key[k]
                if s is None:
                    out.failed.append(
                        {"key": k, "point": f"{pl.point.trace} {pl.point.label}", "error": str(err)}
                    )
                    continue
                row = row_of(pl, json.loads(s), version, sweep.axis_keys, sweep.window, sweep.axis_types)
                results.write(k, row, sweep.axis_types)
                out.ran += 1
            if on_progress:
                on_progress(out.ran + len(out.failed), len(todo), time.perf_counter() - t0)
    finally:
        out.seconds = time.perf_counter() - t0
        client.close()
        if cluster is not None:
            cluster.close()
    return out


def _notice(msg: str) -> None:
    print(f"xlat: {msg}", file=sys.stderr, flush=True)


def _lost_scheduler(client, e: BaseException) -> bool:
    """Whether a task failed because the scheduler went away (then nothing else can finish)."""
    from distributed.client import FutureCancelledError

    return isinstance(e, FutureCancelledError) or client.status not in ("running", "newly-created")


def progress_printer(stream=sys.stderr) -> Callable[[int, int, float], None]:
    """A one-line progress bar: points done, rate and time left, redrawn in place."""

    def show(done: int, total: int, secs: float) -> None:
        rate = done / secs if secs > 0 else 0.0
        left = (total - done) / rate if rate > 0 else float("nan")
        width = 24
        fill = int(width * done / total) if total else width
        eta = f"{left:.0f} s left" if left == left else "time left unknown"
        stream.write(
            f"\rsweep [{'#' * fill}{'.' * (width - fill)}] {done}/{total} points, {rate * 60:.1f}/min, {eta}  "
        )
        if done == total:
            stream.write("\n")
        stream.flush()

    return show
