"""The programs the experiment traces and times: :class:`Program` and the built-in ones."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass, field

from xlat.experiment.common import ExperimentError

#: A C program (built with the system's ``cc`` on first use: :func:`resolve`).
GATHER_C = r"""/* Random 8-byte loads over a malloc'd table, each load's index depending on the one before (so
 * the loads do not overlap and a page walk adds its latency to every one): a small TLB-bound
 * program for the experiment's end-to-end test and
 * `xlat reproduce mosmodel --quick`.  usage: gather MIB LOADS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoull(argv[1], 0, 10) : 64;
  size_t loads = argc > 2 ? strtoull(argv[2], 0, 10) : 1000000;
  size_t n = (mib << 20) / sizeof(uint64_t);
  uint64_t *t = malloc(n * sizeof *t);
  if (!t) return 1;
  for (size_t i = 0; i < n; i++) t[i] = i;
  uint64_t x = 88172645463325252ull, sum = 0, j = 0;
  for (size_t i = 0; i < loads; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    j = (x ^ t[j]) % n;                       /* the next index needs this load's value */
    sum += j;
  }
  printf("%llu\n", (unsigned long long)sum);
  return 0;
}
"""

NUMPY_GATHER = """\
import numpy as np
rng = np.random.default_rng(1)
table = np.arange(1 << 26, dtype=np.int64)      # 512 MiB, from the heap pool
idx = rng.integers(0, table.size, 1 << 22)      # 4M random indices
total = 0
for _ in range(8):
    total += int(table[idx].sum())              # random 8-byte loads over 512 MiB
print(total)
"""

INDEX_JOIN = """\
import numpy as np
rng = np.random.default_rng(1)
gaps = rng.integers(1, 16, 1 << 24, dtype=np.uint8)
build = np.cumsum(gaps, dtype=np.int64)             # build side: 16M sorted int64 keys (128 MiB)
probe = rng.integers(0, int(build[-1]), 1 << 19)    # probe side: 512K keys
pos = np.searchsorted(build, probe)                 # index join: a binary search per probe key
hit = build[np.minimum(pos, build.size - 1)] == probe
print(int(hit.sum()), int(pos[hit].sum()))          # the matches, and where they are
"""


DICT_LOOKUPS = """\
import random
rng = random.Random(1)
n = 5 << 17                                                     # 655,360 keys
keys = list(memoryview(rng.randbytes(8 * n)).cast("Q"))        # random 64-bit int keys
d = dict(zip(keys, range(n)))                                  # key -> insertion index
probe = memoryview(rng.randbytes(4 << 18)).cast("I")           # 262,144 random positions
total = sum(map(d.__getitem__, map(keys.__getitem__, map(n.__rmod__, probe))))  # random lookups
print(len(d), total)
"""

XZ_9 = """\
import lzma, random, zlib
rng = random.Random(1)
pool = rng.randbytes(640 << 10)                                 # 640 KiB of random bytes
data = b"".join(pool[o:o + 4096] for o in (rng.randrange(len(pool) - 4096) for _ in range(640)))
out = lzma.compress(data, preset=9)     # xz -9: LZMA2, 64 MiB dictionary, bt4 match finder (~674 MiB)
print(len(data), len(out), zlib.crc32(out))
"""

GRAPH_BFS = """\
import numpy as np
n, d = 1 << 21, 8                                      # 2M nodes, out-degree 8: 16M directed edges
raw = np.random.default_rng(1).bit_generator.random_raw(n * d // 2)   # PCG64, seed 1
adj = (raw.view(np.uint32) & (n - 1)).astype(np.intp).reshape(n, d)  # adjacency lists (128 MiB)
del raw
dist = np.full(n, -1, dtype=np.int32)                  # BFS level of every node, -1: not reached yet
seen = np.zeros(n, dtype=np.intp)                      # de-duplicates a level's new nodes
dist[0] = 0
frontier = np.zeros(1, dtype=np.intp)
level = 0
while frontier.size:                                   # level-synchronous BFS from node 0
    level += 1
    nbrs = adj.take(frontier, axis=0).ravel()          # the frontier's edge lists (random rows)
    nbrs = nbrs[dist.take(nbrs) < 0]                   # random loads: the nodes not reached yet
    dist[nbrs] = level                                 # random stores
    pos = np.arange(nbrs.size)
    seen[nbrs] = pos                                   # one position per new node wins ...
    frontier = nbrs[seen.take(nbrs) == pos]            # ... so each enters the next frontier once
print(level, int((dist >= 0).sum()), int(dist.sum(dtype=np.int64)))
"""

SQLITE_JOIN = """\
import sqlite3
db = sqlite3.connect(":memory:")
db.execute("PRAGMA cache_size = -1048576")            # 1 GiB page cache: every page stays in memory
db.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, region INTEGER, profile BLOB)")
db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, cust INTEGER, amount INTEGER)")
db.execute("WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < 1 << 14) "
           "INSERT INTO customers SELECT i, (i * 40503) % 64, zeroblob(3000) FROM s")
db.execute("WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i + 1 < 1 << 16) "
           "INSERT INTO orders SELECT i, (i * 2654435761) % (1 << 14), (i * 40503) % 1000 FROM s")
rows = db.execute("SELECT c.region, count(*), sum(o.amount) FROM orders o JOIN customers c ON c.id = o.cust "
                  "GROUP BY c.region ORDER BY c.region").fetchall()
print(len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows), rows[0])
"""

NUMPY_SORT = """\
import numpy as np
rng = np.random.default_rng(1)
keys = rng.integers(0, 1 << 62, 1 << 22)            # 4M random int64 keys (32 MiB)
order = np.argsort(keys)                             # the sorting permutation (introsort, 32 MiB of int64)
ranked = keys[order]                                 # apply it: random 8-byte loads over 32 MiB
print(bool((ranked[1:] >= ranked[:-1]).all()), int(ranked[:: 1 << 12].sum() % 1000003),
      int(order[: 1 << 12].sum()))
"""


@dataclass(frozen=True)
class Program:
    """A command to trace and time. ``argv[0]`` is looked up on PATH; ``env`` is added to the
    environment of both the traced and the timed runs."""

    name: str
    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""
    apt: tuple[str, ...] = ()
    #: C source that ``argv[0]`` is built from when it does not exist yet (``cc -O2``).
    c_source: str = ""


def _python() -> str:
    # The interpreter binary itself, never a wrapper script (pyenv shims fork under hugetlb pools).
    return os.path.realpath(sys.executable)


def _built(name: str, source: str) -> str:
    """Where a built-in C program's binary goes: the user's cache, named by its source's hash
    (a changed source is built again)."""
    import hashlib

    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    return os.path.join(cache, "xlat", "experiment", f"{name}-{digest}")


def programs() -> dict[str, Program]:
    """The built-in experiment programs (real programs, small enough to trace whole)."""
    pyenv = {
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    return {
        "gather": Program(
            "gather",
            (_built("gather", GATHER_C), "48", "2000000"),
            {},
            "C: 2M dependent random 8-byte loads over a 48 MiB malloc'd table (whole run, ~0.03G "
            "accesses; built with cc on first use)",
            ("gcc",),
            GATHER_C,
        ),
        "gather-1g": Program(
            "gather-1g",
            (_built("gather", GATHER_C), "1024", "3000000"),
            {},
            "C: 3M dependent random 8-byte loads over a 1 GiB malloc'd table (whole run, ~0.14G accesses; "
            "nearly every load walks with 4KB pages)",
            ("gcc",),
            GATHER_C,
        ),
        "numpy-gather": Program(
            "numpy-gather",
            (_python(), "-c", NUMPY_GATHER),
            pyenv,
            "CPython + NumPy: 8 gathers of 4M random int64 from a 512 MiB table (whole run, ~0.47G accesses)",
        ),
        "index-join": Program(
            "index-join",
            (_python(), "-c", INDEX_JOIN),
            pyenv,
            "CPython + NumPy: an index join, 512K probe keys binary-searched (np.searchsorted) in 16M "
            "sorted build keys (whole run, ~0.38G accesses)",
        ),
        "sysbench-rnd": Program(
            "sysbench-rnd",
            (
                "sysbench",
                "memory",
                "--memory-block-size=256M",
                "--memory-total-size=256M",
                "--memory-access-mode=rnd",
                "--rand-seed=1",
                "--threads=1",
                "--time=0",  # no time limit: the (slower) traced run must do the same work
                "run",
            ),
            {},
            "sysbench 1.0 memory test: 32M random 8-byte writes over a 256 MiB buffer (whole run, ~0.5G accesses)",
            ("sysbench",),
        ),
        "dict-lookups": Program(
            "dict-lookups",
            (_python(), "-c", DICT_LOOKUPS),
            # Objects from malloc, not from pymalloc's arenas (which are mmaps, in the anon pool): the
            # int objects the lookups reach are then in the heap pool with the dict, and the layouts
            # over that one pool cover all of the hot memory.
            {**pyenv, "PYTHONMALLOC": "malloc"},
            "CPython: a dict of 655K random int64 keys built, then 262K lookups of random keys "
            "(whole run, ~0.6G accesses)",
        ),
        "xz-9": Program(
            "xz-9",
            (_python(), "-c", XZ_9),
            pyenv,
            "CPython's lzma module (liblzma, as xz -9 -T1): 2.5 MiB of generated data (4 KiB pieces of "
            "640 KiB of random bytes) compressed with preset 9 (whole run, ~0.54G accesses)",
        ),
        "graph-bfs": Program(
            "graph-bfs",
            (_python(), "-c", GRAPH_BFS),
            pyenv,
            "CPython + NumPy: level-synchronous BFS over a random directed graph, 2M nodes and 16M edges "
            "(whole run, ~0.65G accesses)",
        ),
        "sqlite-join": Program(
            "sqlite-join",
            (_python(), "-c", SQLITE_JOIN),
            pyenv,
            "CPython's sqlite3, in memory: 64K orders joined on the primary key of 16K customers of one "
            "page each, GROUP BY region (whole run, ~0.62G accesses)",
        ),
        "numpy-sort": Program(
            "numpy-sort",
            (_python(), "-c", NUMPY_SORT),
            # numpy's baseline (non-SIMD) sort everywhere: QEMU has no AVX-512 and numpy's AVX2 sort
            # takes 2.5-4x the accesses, so the traced and the timed runs run the same sort code.
            {**pyenv, "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"},
            "CPython + NumPy: argsort of 4M random int64 keys, then the permutation applied (a random "
            "gather) (whole run, ~0.58G accesses)",
        ),
    }


def resolve(prog: Program) -> Program:
    exe = prog.argv[0]
    if prog.c_source and not os.path.exists(exe):
        _build(prog, exe)
    found = exe if "/" in exe else shutil.which(exe)
    if not found or not os.access(found, os.X_OK):
        hint = f" (Debian package: apt-get install {' '.join(prog.apt)})" if prog.apt else ""
        raise ExperimentError(f"program '{exe}' of experiment '{prog.name}' was not found{hint}.")
    return dataclasses.replace(prog, argv=(found, *prog.argv[1:]))


def _build(prog: Program, exe: str) -> None:
    import subprocess
    import tempfile

    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise ExperimentError(
            f"experiment '{prog.name}' is a C program and needs a C compiler (apt-get install gcc)."
        )
    os.makedirs(os.path.dirname(exe), exist_ok=True)
    with tempfile.TemporaryDirectory(dir=os.path.dirname(exe)) as d:
        c = os.path.join(d, f"{prog.name}.c")
        with open(c, "w") as f:
            f.write(prog.c_source)
        p = subprocess.run([cc, "-O2", "-o", os.path.join(d, prog.name), c], capture_output=True, text=True)
        if p.returncode != 0:
            last = (p.stderr.strip().splitlines() or ["no message"])[-1]
            raise ExperimentError(f"building experiment '{prog.name}' with {cc} failed: {last}")
        os.replace(os.path.join(d, prog.name), exe)  # atomic: a concurrent build sees one or the other
