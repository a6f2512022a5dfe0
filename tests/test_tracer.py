"""End-to-end tests of ``xlat trace``: small C programs built here, traced under qemu-x86_64 with
the xlat plugin, checked access by access against what the programs are known to do and against
``strace`` of a native run."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xlat
from conftest import result

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("qemu-x86_64", "gcc", "strace")),
    reason="needs qemu-x86_64 (apt-get install qemu-user), gcc and strace (scripts/setup.sh installs them)",
)

XLAT = [sys.executable, "-m", "xlat"]
PAGE = 4096

PAGES_C = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#define NPAGES 16
#define PAGE 4096
int main(void) {
    volatile uint64_t *p = mmap(NULL, NPAGES * PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    /* 16 stores of 8 bytes: page (5*i) mod 16, word i of that page */
    for (int i = 0; i < NPAGES; i++) p[((i * 5) % NPAGES) * (PAGE / 8) + i] = i;
    uint64_t sum = 0;
    /* 16 loads of 8 bytes: the same words, in reverse order */
    for (int i = NPAGES - 1; i >= 0; i--) sum += p[((i * 5) % NPAGES) * (PAGE / 8) + i];
    munmap((void *)p, NPAGES * PAGE);
    sbrk(1 << 20);
    sbrk(-(1 << 20));
    printf("%lu %p\n", (unsigned long)sum, (void *)p);
    return 3;
}
"""

THREADS_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#define N_MAIN 1000
#define N_WORKER 3000
static volatile uint64_t a_main[N_MAIN], a_worker[N_WORKER];
static long worker_tid;
static void *worker(void *arg) {
    worker_tid = syscall(SYS_gettid);
    for (int i = 0; i < N_WORKER; i++) a_worker[i] = i;
    return arg;
}
int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL)) return 1;
    for (int i = 0; i < N_MAIN; i++) a_main[i] = i;
    pthread_join(t, NULL);
    printf("%ld %ld %p %p\n", (long)getpid(), worker_tid, (void *)a_main, (void *)a_worker);
    return 0;
}
"""

FORK_C = r"""
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#define PAGE 4096
int main(void) {
    volatile uint32_t *r = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) return 1;
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 100; i++) r[i * 16] = i;      /* child: 100 stores of 4 bytes */
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    for (int i = 0; i < 50; i++) r[4 * PAGE / 4 + i] = i;  /* parent: 50 stores, page 4 on */
    printf("%d %d %p\n", (int)getpid(), (int)c, (void *)r);
    return WEXITSTATUS(st);
}
"""


def build(tmp: Path, name: str, src: str, *flags: str) -> Path:
    c = tmp / f"{name}.c"
    c.write_text(src)
    exe = tmp / name
    subprocess.run(["gcc", "-O1", "-static", "-o", str(exe), str(c), *flags], check=True)
    return exe


def xlat_trace(out: Path, argv: list[str], *opts: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*XLAT, "trace", "--no-progress", *opts, "-o", str(out), "--", *argv], capture_output=True, text=True
    )


def accesses(path: Path) -> dict:
    return xlat.read_accesses(str(path))


def syscalls(path: Path) -> list[xlat.Event]:
    return [e for e in xlat.open(str(path)).events() if e.type == "syscall"]


def in_range(acc: dict, lo: int, hi: int) -> np.ndarray:
    return (acc["addr"] >= lo) & (acc["addr"] < hi)


PROT = {"PROT_NONE": 0, "PROT_READ": 1, "PROT_WRITE": 2, "PROT_EXEC": 4}


def strace_events(tmp: Path, exe: Path) -> list[tuple]:
    """mmap/munmap/brk of a native run, normalised: (name, length, prot) for mmap, (name,
    length) for munmap, (name, arg - first brk result) for brk."""
    log = tmp / "strace.log"
    subprocess.run(
        ["strace", "-f", "-o", str(log), "-e", "trace=mmap,munmap,brk", str(exe)],
        check=False,
        capture_output=True,
    )
    out, brk0 = [], None
    for line in log.read_text().splitlines():
        m = re.match(r"\d+\s+(mmap|munmap|brk)\((.*)\)\s+=\s+(\S+)", line)
        if not m:
            continue
        name, args, ret = m.group(1), [a.strip() for a in m.group(2).split(",")], int(m.group(3), 0)
        if name == "mmap":
            prot = sum(PROT[p] for p in args[2].split("|"))
            out.append(("mmap", int(args[1]), prot))
        elif name == "munmap":
            out.append(("munmap", int(args[1])))
        else:
            if brk0 is None:
                brk0 = ret
            out.append(("brk", 0 if args[0] == "NULL" else int(args[0], 16) - brk0))
    return out


def trace_events(evs: list[xlat.Event]) -> list[tuple]:
    out, brk0 = [], None
    for e in evs:
        if e.name == "mmap":
            out.append(("mmap", e.args[1], e.args[2]))
        elif e.name == "munmap":
            out.append(("munmap", e.args[1]))
        elif e.name == "brk":
            if brk0 is None:
                brk0 = e.ret
            out.append(("brk", 0 if e.args[0] == 0 else e.args[0] - brk0))
    return out


def test_known_pages_in_known_order(tmp_path: Path) -> None:
    exe = build(tmp_path, "pages", PAGES_C)
    out = tmp_path / "pages.xlat"
    r = xlat_trace(out, [str(exe)])
    assert r.returncode == 3, r.stderr  # the program's own exit status
    printed_sum, printed_p = r.stdout.split()
    assert int(printed_sum) == sum(range(16))

    evs = syscalls(out)
    mmaps = [e for e in evs if e.name == "mmap" and e.args[1] == 16 * PAGE]
    assert len(mmaps) == 1
    m = mmaps[0]
    base = m.ret
    assert base == int(printed_p, 16)  # the address the program saw
    assert m.args[2] == 3 and m.args[3] == 0x22 and m.args[4] == 2**64 - 1  # RW, private|anon, fd -1
    munmaps = [e for e in evs if e.name == "munmap"]
    assert [(e.args[0], e.args[1], e.ret) for e in munmaps] == [(base, 16 * PAGE, 0)]
    assert evs[-1].name == "exit" and evs[-1].args == (3,)

    acc = accesses(out)
    sel = in_range(acc, base, base + 16 * PAGE)
    addr, kind, size = acc["addr"][sel] - base, acc["kind"][sel], acc["size"][sel]
    words = [((i * 5) % 16) * PAGE + 8 * i for i in range(16)]
    expected = words + words[::-1]
    assert addr.tolist() == expected
    assert kind.tolist() == [1] * 16 + [0] * 16
    assert size.tolist() == [8] * 32
    assert int(size[kind == 1].sum()) == 128  # bytes written to the mapping
    # Accesses sit between the mmap and the munmap in the event order.
    tid = acc["tid"][sel]
    assert set(tid.tolist()) == {int(acc["tid"][0])}
    ic = acc["icount"][sel]
    assert (np.diff(ic.astype(np.int64)) > 0).all()  # one instruction per access, in order
    assert ic[0] > m.icount

    # The address-space syscalls match strace's view of a native run (addresses differ under
    # QEMU, so brk is compared relative to the first break, mmap/munmap by length and prot).
    native = strace_events(tmp_path, exe)
    assert trace_events(evs) == native
    assert ("mmap", 16 * PAGE, 3) in native and ("munmap", 16 * PAGE) in native
    brks = [b for name, b, *_ in native if name == "brk"]
    assert any(b2 - b1 == 1 << 20 for b1, b2 in itertools.pairwise(brks))  # the program's sbrk(1 MiB)

    info = xlat.trace_info(str(out))
    h = info["header"]
    assert h["command"] == [str(exe)]
    assert h["metadata"]["skip_instructions"] == 0 and h["metadata"]["max_accesses"] is None
    assert "qemu-x86_64 version" in h["metadata"]["qemu"]


def test_skip_and_max(tmp_path: Path) -> None:
    exe = build(tmp_path, "pages", PAGES_C)
    full = tmp_path / "full.xlat"
    assert xlat_trace(full, [str(exe)]).returncode == 3
    n_full = xlat.trace_info(str(full))["info"]["accesses"]

    capped = tmp_path / "max.xlat"
    r = xlat_trace(capped, [str(exe)], "--max", "1000")
    assert r.returncode in (0, 3), r.stderr  # 3 if the short program ended before it was stopped
    assert xlat.trace_info(str(capped))["info"]["accesses"] == 1000
    a, b = accesses(capped), accesses(full)
    assert (a["addr"] == b["addr"][:1000]).all()

    # A program that never ends is stopped at --max, and xlat exits 0.
    forever = tmp_path / "forever.xlat"
    summary = tmp_path / "summary.json"
    r = xlat_trace(forever, ["sh", "-c", "while :; do :; done"], "--max", "200000", "--json", str(summary))
    assert r.returncode == 0, r.stderr
    assert result(summary.read_text())["stopped_at_max"] is True
    assert xlat.trace_info(str(forever))["info"]["accesses"] == 200000

    skipped = tmp_path / "skip.xlat"
    assert xlat_trace(skipped, [str(exe)], "--skip", "20000").returncode == 3
    s = xlat.read_accesses(str(skipped))
    assert 0 < len(s["addr"]) < n_full
    assert s["icount"].min() > 20000
    # Address-space syscalls are kept from the start, so the trace still knows every mapping.
    assert trace_events(syscalls(skipped)) == trace_events(syscalls(full))


def test_two_threads(tmp_path: Path) -> None:
    exe = build(tmp_path, "threads", THREADS_C, "-pthread")
    out = tmp_path / "threads.xlat"
    r = xlat_trace(out, [str(exe)])
    assert r.returncode == 0, r.stderr
    pid, wtid, a_main, a_worker = r.stdout.split()
    pid, wtid, a_main, a_worker = int(pid), int(wtid), int(a_main, 16), int(a_worker, 16)
    acc = accesses(out)
    assert set(acc["tid"].tolist()) == {pid, wtid}
    for tid, lo, n in [(pid, a_main, 1000), (wtid, a_worker, 3000)]:
        sel = in_range(acc, lo, lo + 8 * n)
        assert set(acc["tid"][sel].tolist()) == {tid}
        assert acc["addr"][sel].tolist() == [lo + 8 * i for i in range(n)]
        assert (acc["kind"][sel] == 1).all()
        mine = acc["icount"][acc["tid"] == tid].astype(np.int64)
        assert (np.diff(mine) >= 0).all()  # per-thread order holds in the interleaved trace
    threads = {t: v for t, v in xlat.trace_info(str(out))["info"]["threads"].items()}
    assert {int(t) for t in threads} == {pid, wtid}
    exits = [e for e in syscalls(out) if e.name == "exit"]
    assert {e.tid for e in exits} == {pid, wtid}


def test_fork_gets_its_own_trace(tmp_path: Path) -> None:
    exe = build(tmp_path, "forker", FORK_C)
    out = tmp_path / "fork.xlat"
    r = xlat_trace(out, [str(exe)])
    assert r.returncode == 0, r.stderr
    pid, child, base = r.stdout.split()
    pid, child, base = int(pid), int(child), int(base, 16)
    child_out = tmp_path / f"fork.{child}.xlat"
    assert child_out.exists(), sorted(os.listdir(tmp_path))

    parent = accesses(out)
    sel = in_range(parent, base, base + 8 * PAGE)
    assert parent["addr"][sel].tolist() == [base + 4 * PAGE + 4 * i for i in range(50)]
    assert set(parent["tid"].tolist()) == {pid}

    kid = accesses(child_out)
    sel = in_range(kid, base, base + 8 * PAGE)
    assert kid["addr"][sel].tolist() == [base + 64 * i for i in range(100)]
    assert (kid["size"][sel] == 4).all() and (kid["kind"][sel] == 1).all()
    assert set(kid["tid"].tolist()) == {child}
    h = xlat.open(str(child_out)).header
    assert h["metadata"]["pid"] == child and h["metadata"]["ppid"] == pid
    # The child's own exit is in its trace, not the parent's.
    assert [e.args for e in syscalls(child_out) if e.name == "exit"] == [(0,)]


def test_clear_errors(tmp_path: Path) -> None:
    r = xlat_trace(tmp_path / "x.xlat", ["no-such-program-xlat"])
    assert r.returncode == 1
    assert r.stderr.strip() == "xlat: error: cannot start 'no-such-program-xlat': it is not found in PATH"

    text = tmp_path / "data.txt"
    text.write_text("hello\n")
    text.chmod(0o755)
    r = xlat_trace(tmp_path / "x.xlat", [str(text)])
    assert r.returncode == 1 and "neither an ELF program nor a #! script" in r.stderr

    # Without qemu-x86_64 on PATH the error says how to install it.
    env = dict(os.environ, PATH=str(Path(sys.executable).parent))
    r = subprocess.run(
        [*XLAT, "trace", "-o", str(tmp_path / "x.xlat"), "--", "/bin/true"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 1
    assert "qemu-x86_64 is not installed" in r.stderr and "apt-get install qemu-user" in r.stderr
    assert "Traceback" not in r.stderr


def test_disk_full(tmp_path: Path) -> None:
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a small tmpfs here (needs root) to fill a disk")
    try:
        r = xlat_trace(mnt / "big.xlat", ["/bin/ls", "-lR", "/usr/lib"], "--max", "20000000")
        assert r.returncode == 1, r.stderr
        assert "the disk is full" in r.stderr and "Traceback" not in r.stderr
        assert not (mnt / "big.xlat").exists()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_json_summary_and_provenance(tmp_path: Path) -> None:
    out, summary = tmp_path / "echo.xlat", tmp_path / "summary.json"
    r = subprocess.run(
        [*XLAT, "trace", "--no-progress", "--json", str(summary), "-o", str(out), "--", "echo", "hello"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello\n"  # stdout belongs to the traced program
    s = result(summary.read_text())
    assert s["processes"][0]["path"] == str(out) and s["status"] == 0
    assert s["processes"][0]["accesses"] == xlat.trace_info(str(out))["info"]["accesses"] > 0
    h = xlat.open(str(out)).header
    assert h["command"] == ["echo", "hello"] and h["metadata"]["program_path"] == shutil.which("echo")
    assert h["metadata"]["max_accesses"] is None and h["metadata"]["argv_run"][1:] == ["hello"]


def test_ifetch(tmp_path: Path) -> None:
    exe = build(tmp_path, "pages", PAGES_C)
    out = tmp_path / "ifetch.xlat"
    assert xlat_trace(out, [str(exe)], "--ifetch").returncode == 3
    acc = accesses(out)
    fetch = acc["kind"] == 2
    ic = acc["icount"][fetch].astype(np.int64)
    assert ic[0] == 1
    steps = np.diff(ic)
    # One fetch per executed instruction; a block left early (a fault, a syscall) overcounts by
    # the instructions it skipped, so a few steps may be larger than 1, never smaller.
    assert (steps >= 1).all() and (steps == 1).mean() > 0.999
    assert np.isin(acc["icount"][~fetch], ic).all()  # every data access has its fetch
    assert ((acc["size"][fetch] >= 1) & (acc["size"][fetch] <= 15)).all()  # x86 instruction lengths


def test_workloads_real_listing() -> None:
    r = subprocess.run([*XLAT, "workloads", "real"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in ("numpy-gather", "csgraph-bfs", "ortools-mcf", "dict-lookups", "xz"):
        assert f"\n{name}: " in r.stdout
    assert "warm-up skip" in r.stdout
    plain = subprocess.run([*XLAT, "workloads"], capture_output=True, text=True)
    assert plain.returncode == 0 and "Synthetic workloads" in plain.stdout  # unchanged
    bad = subprocess.run([*XLAT, "workloads", "real", "nope", "-o", "x.xlat"], capture_output=True, text=True)
    assert bad.returncode == 1 and "no real workload named 'nope'" in bad.stderr


ABORT_C = r"""
#include <stdio.h>
#include <stdlib.h>
static volatile int a[1000];
int main(void) {
    for (int i = 0; i < 1000; i++) a[i] = i;
    printf("%p\n", (void *)a);
    fflush(stdout);
    abort();
}
"""


def test_program_killed_by_signal(tmp_path: Path) -> None:
    exe = build(tmp_path, "aborter", ABORT_C)
    out = tmp_path / "abort.xlat"
    r = xlat_trace(out, [str(exe)])
    assert r.returncode == 128 + 6, r.stderr  # SIGABRT, as a shell reports it
    base = int(r.stdout.split()[0], 16)
    acc = accesses(out)
    sel = in_range(acc, base, base + 4000)
    assert acc["addr"][sel].tolist() == [base + 4 * i for i in range(1000)]


def test_plugin_file_mode_matches_recorder(tmp_path: Path) -> None:
    """The plugin's out=PATH mode (read back as qemu-raw:PATH) and the recorder see the same
    events; a forked child writes PATH.<pid>."""
    from xlat.tracing import find_plugin

    exe = build(tmp_path, "forker", FORK_C)
    raw = tmp_path / "run.raw"
    r = subprocess.run(
        ["qemu-x86_64", "-plugin", f"{find_plugin()},out={raw}", "--", str(exe)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    _, child, base = r.stdout.split()
    base = int(base, 16)
    a = xlat.read_accesses(f"qemu-raw:{raw}")
    kid = xlat.read_accesses(f"qemu-raw:{raw}.{child}")
    out = tmp_path / "rec.xlat"
    r2 = xlat_trace(out, [str(exe)])
    assert r2.returncode == 0, r2.stderr
    _, child2, base2 = r2.stdout.split()
    b = accesses(out)
    kid2 = accesses(tmp_path / f"rec.{child2}.xlat")
    # Same program, same QEMU: the same accesses relative to the mapping, in the same order.
    for x, y, bx, by in [(a, b, base, int(base2, 16)), (kid, kid2, base, int(base2, 16))]:
        assert len(x["addr"]) == len(y["addr"])
        assert (x["kind"] == y["kind"]).all() and (x["size"] == y["size"]).all()
        sx, sy = in_range(x, bx, bx + 8 * PAGE), in_range(y, by, by + 8 * PAGE)
        assert (x["addr"][sx] - bx).tolist() == (y["addr"][sy] - by).tolist()


def test_script_runs_through_its_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "hello.sh"
    script.write_text('#!/bin/sh\necho "hello $1"\nexit 5\n')
    script.chmod(0o755)
    out = tmp_path / "sh.xlat"
    r = xlat_trace(out, [str(script), "world"])
    assert r.returncode == 5, r.stderr
    assert r.stdout == "hello world\n"
    h = xlat.open(str(out)).header
    assert h["metadata"]["argv_run"] == ["/bin/sh", str(script), "world"]
    assert xlat.trace_info(str(out))["info"]["accesses"] > 0


def _processes_with(cmdline: str) -> list[int]:
    """PIDs whose command line is `cmdline`."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            if cmd == cmdline:
                pids.append(int(d.name))
    return pids


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_killing_the_tracer_ends_the_traced_program_and_its_children(tmp_path: Path, sig: str) -> None:
    # Issue 38, item 3: a killed `xlat trace` left the program running under QEMU for 35-60 s
    # (a server, for ever). A watchdog the kernel signals when the recorder dies kills QEMU's
    # process group, forked children included.
    import signal
    import time

    marker = f"61.{os.getpid()}{len(sig)}"
    out = tmp_path / "t.xlat"
    p = subprocess.Popen(
        [
            *XLAT,
            "trace",
            "--no-progress",
            "-o",
            str(out),
            "--",
            "/bin/sh",
            "-c",
            f"sleep {marker} & sleep {marker}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while len(_processes_with(f"sleep {marker}")) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_processes_with(f"sleep {marker}")) >= 2, "the traced program and its child started"
    p.send_signal(getattr(signal, sig))
    p.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(f"sleep {marker}") == [], "nothing of the traced program is left"
    # What was written stays a trace cut short, and says so (here nothing reached the file
    # yet: empty).
    partial = Path(f"{out}.partial")
    assert partial.exists()
    info = subprocess.run([*XLAT, "trace-info", str(partial)], capture_output=True, text=True)
    assert info.returncode != 0 and ("truncated" in info.stderr or "is empty" in info.stderr), info.stderr
