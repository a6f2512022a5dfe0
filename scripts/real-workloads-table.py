#!/usr/bin/env python3
"""Measure the real-program recipes (``xlat workloads real``) and print the table of
docs/tracing.md: footprint (mapped, touched in the window), window, warm-up skip, trace wall
time and the memory each recipe asks for.

    PYTHONPATH=python .venv/bin/python scripts/real-workloads-table.py                 # print the table
    PYTHONPATH=python .venv/bin/python scripts/real-workloads-table.py --measure       # trace all, then print
    PYTHONPATH=python .venv/bin/python scripts/real-workloads-table.py --measure --recipes numpy-sort,xz

``--measure`` runs each chosen recipe natively to completion under ``/usr/bin/time -v`` (its
peak RSS), then traces it with ``xlat workloads real NAME -o DIR/NAME.xlat`` while sampling the
resident memory of the whole process tree (the recorder and QEMU) every 0.2 s, and reads the
trace with ``xlat trace-info``. Measurements are merged into the results JSON (default
``out/real-workloads/table.json``), so the recipes can be measured a few at a time; without
``--measure`` the table is printed from that JSON alone. Run one recipe at a time on a quiet
machine: the largest ones need about 10 GiB.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from xlat import real_workloads as rw  # noqa: E402

GIB = 1 << 30


def tree_pids(root: int) -> list[int]:
    """``root`` and all its descendants (through /proc/PID/task/TID/children)."""
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            continue
    return out


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def native_peak_rss(r: rw.Recipe) -> tuple[int | None, float]:
    """Peak RSS (bytes) and wall seconds of the recipe's program run natively to completion."""
    client = None
    if r.driver == "redis":
        # The server natively, driven by the recipe's own driver (redis-benchmark) to the end.
        d = rw._workdir()
        rw._redis_dump(d)
        sock = d / "redis-kv-native.sock"
        sock.unlink(missing_ok=True)
        driver = d / "redis-kv-driver.py"
        driver.write_text(rw.REDIS_DRIVER)
        client = subprocess.Popen([sys.executable, str(driver), str(sock), "run", str(rw.REDIS_KEYS)])
        argv = rw._redis_server_argv(d, sock, "redis-kv.rdb")
    elif r.driver:
        return None, 0.0
    else:
        argv = rw.command(r)
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True)
    secs = time.monotonic() - t0
    if client is not None:
        client.wait()
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if p.returncode != 0 or m is None:
        print(f"{r.name}: the native run failed:\n{p.stderr[-2000:]}", file=sys.stderr)
        return None, secs
    return int(m.group(1)) * 1024, secs


def traced_run(r: rw.Recipe, out: Path) -> dict:
    """Trace the recipe through the CLI, sampling the process tree's resident memory."""
    cmd = [sys.executable, "-m", "xlat", "workloads", "real", r.name, "-o", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while p.poll() is None:
        peak = max(peak, sum(rss_bytes(q) for q in tree_pids(p.pid)))
        time.sleep(0.2)
    stdout, stderr = p.communicate()
    secs = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{r.name}: tracing failed (exit {p.returncode}): {stderr.strip()[-2000:]}")
    info = subprocess.run(
        [sys.executable, "-m", "xlat", "trace-info", str(out), "--json", "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    i = json.loads(info.stdout)["results"][0]["info"]
    return {
        "trace_seconds": round(secs, 1),
        "traced_peak_rss": peak,
        "accesses": i["accesses"],
        "threads": len(i["threads"]),
        "touched_4k_pages": i["touched_4k_pages"],
        "touched_2m_regions": i["touched_2m_regions"],
        "peak_mapped_bytes": i["peak_mapped_bytes"],
        "trace_bytes": out.stat().st_size,
        "output": stdout.strip().splitlines()[-3:],
    }


def measure(r: rw.Recipe, out_dir: Path, native: bool) -> dict:
    res: dict = {"skip": r.skip, "max_accesses": r.max_accesses}
    if native:
        rss, secs = native_peak_rss(r)
        res |= {"native_peak_rss": rss, "native_seconds": round(secs, 1)}
    out_dir.mkdir(parents=True, exist_ok=True)
    res |= traced_run(r, out_dir / f"{r.name}.xlat")
    res["measured"] = datetime.date.today().isoformat()
    res["host"] = f"{platform.node()} {platform.release()}"
    return res


def size(b: int | None) -> str:
    if b is None:
        return "—"
    return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / (1 << 20):.0f} MiB"


def count(n: int) -> str:
    return f"{n / 1e9:g} G" if n >= 1e9 else f"{n / 1e6:g} M"


def table(results: dict) -> str:
    rows = [
        "| recipe | mapped: peak RSS native / peak mapped in trace | touched in the window (4 KiB pages) "
        "| window | warm-up skip | trace wall time | memory needed (`memory`) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rw.recipes():
        m = results.get(r.name)
        if m is None or "touched_4k_pages" not in m:
            rows.append(
                f"| `{r.name}` | not measured | — | {count(r.max_accesses)} accesses "
                f"| {count(r.skip)} | — | {size(r.memory)} |"
            )
            continue
        touched = m["touched_4k_pages"] * 4096
        rows.append(
            f"| `{r.name}` | {size(m.get('native_peak_rss'))} / {size(m['peak_mapped_bytes'])} "
            f"| {size(touched)} ({m['touched_4k_pages']:,}) | {count(m['max_accesses'])} accesses "
            f"| {count(m['skip'])} | {m['trace_seconds']:.0f} s | {size(r.memory)} "
            f"(traced peak {size(m['traced_peak_rss'])}) |"
        )
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--recipes", help="comma-separated recipe names (default: all)")
    ap.add_argument("--results", default=str(ROOT / "out" / "real-workloads" / "table.json"))
    ap.add_argument("--measure", action="store_true", help="trace and measure the chosen recipes first")
    ap.add_argument("--no-native", action="store_true", help="skip the native peak-RSS run")
    ap.add_argument("--out-dir", default="/tmp/rw", help="where the traces go (default /tmp/rw)")
    a = ap.parse_args()
    try:
        chosen = [rw.find(n) for n in a.recipes.split(",")] if a.recipes else rw.recipes()
    except rw.TracingError as e:
        print(f"real-workloads-table: {e}", file=sys.stderr)
        return 1
    path = Path(a.results)
    try:
        results = json.loads(path.read_text()) if path.exists() else {}
    except (OSError, ValueError) as e:
        print(f"real-workloads-table: cannot read {path}: {e}", file=sys.stderr)
        return 1
    if a.measure:
        for r in chosen:
            print(f"measuring {r.name} ...", file=sys.stderr)
            old = results.get(r.name, {})
            results[r.name] = measure(r, Path(a.out_dir), not a.no_native)
            if a.no_native:  # keep the native figures of an earlier measurement
                for k in ("native_peak_rss", "native_seconds"):
                    if k in old:
                        results[r.name][k] = old[k]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
            print(f"{r.name}: {json.dumps(results[r.name])}", file=sys.stderr)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
