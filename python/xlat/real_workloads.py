"""Recipes that trace real programs nobody on the xlat team wrote (``xlat workloads real``).

Each recipe installs what it needs (Python packages into the project's virtualenv with pip,
Debian packages with apt-get), prepares its input, and runs ``xlat trace`` with a documented
warm-up skip, so that the recorded window starts in the phase that matters (the lookups, the
search, the solve, the compression) instead of in imports and set-up. The skip counts were
measured with ``calibrate`` (below) on Debian 12, CPython 3.11, qemu-user 7.2 and the package
versions of the time; they are instructions of the process's first thread. Each recipe also
caps the window (``max_accesses``); both can be overridden.

Each recipe says how much memory tracing it needs (``memory``), and ``run`` refuses to start
when /proc/meminfo's MemAvailable is lower. The figure is the larger of the program's native
peak RSS (run to completion under ``/usr/bin/time -v``) plus 0.25 GiB, and the peak resident
memory of the whole traced process tree (the recorder and QEMU, sampled every 0.2 s by
``scripts/real-workloads-table.py``), rounded up to 0.1 GiB. The 0.25 GiB margin for QEMU, its
translation cache and the recorder's buffers was measured the same way: the traced tree of
``numpy-gather`` peaked 0.20 GiB above the native run, ``dict-lookups`` 0.15 GiB above.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xlat._data import cache_dir, checkout
from xlat.tracing import TracingError, trace

# The Python part of each workload. Argument "setup" makes the script stop after its warm-up
# (used by `calibrate` to count warm-up instructions).
NUMPY_GATHER = """\
import sys
import numpy as np
rng = np.random.default_rng(1)
table = np.arange(1 << 27, dtype=np.int64)          # 1 GiB table, touched once while built
idx = rng.integers(0, table.size, 1 << 24)          # 16M random indices
if sys.argv[-1] == "setup":
    sys.exit(0)
total = 0
for _ in range(4):
    total += int(table[idx].sum())                  # the gather: random 8-byte loads over 1 GiB
print(total)
"""

CSGRAPH_BFS = """\
import sys
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

def rmat(scale, edge_factor, rng, a=0.57, b=0.19, c=0.19):
    # Graph500 R-MAT: each edge picks one quadrant per bit of the vertex ids.
    m = edge_factor << scale
    src = np.zeros(m, dtype=np.int64)
    dst = np.zeros(m, dtype=np.int64)
    for bit in range(scale):
        r = rng.random(m)
        down = r >= a + b                 # quadrants c and d set the source bit
        right = ((r >= a) & (r < a + b)) | (r >= a + b + c)
        src |= down.astype(np.int64) << bit
        dst |= right.astype(np.int64) << bit
    perm = rng.permutation(1 << scale)    # Graph500 permutes vertex labels
    return perm[src], perm[dst]

rng = np.random.default_rng(2)
scale = 22
src, dst = rmat(scale, 16, rng)
n = 1 << scale
g = csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
del src, dst
root = int(np.argmax(np.diff(g.indptr)))   # start from a hub so the search covers the giant component
if sys.argv[-1] == "setup":
    sys.exit(0)
order = breadth_first_order(g, root, directed=False, return_predecessors=False)
print(order.size)
"""

MIN_COST_FLOW = """\
import sys
import numpy as np
from ortools.graph.python import min_cost_flow

rng = np.random.default_rng(3)
n = 1_000_000
arcs_per_node = 4
# A connected random network: a ring (so every supply can reach every demand) plus random arcs,
# like the transportation networks of SPEC's mcf.
tails = np.concatenate([np.arange(n), rng.integers(0, n, n * (arcs_per_node - 1))])
heads = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, n * (arcs_per_node - 1))])
caps = rng.integers(10, 1000, tails.size)
costs = rng.integers(1, 100, tails.size)
supplies = np.zeros(n, dtype=np.int64)
sources = rng.choice(n, 2000, replace=False)
supplies[sources[:1000]] = 50
supplies[sources[1000:]] = -50
smcf = min_cost_flow.SimpleMinCostFlow()
smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
smcf.set_nodes_supplies(np.arange(n), supplies)
if sys.argv[-1] == "setup":
    sys.exit(0)
status = smcf.solve()
print(status, smcf.optimal_cost())
"""

DICT_LOOKUPS = """\
import random
import sys
random.seed(4)
n = 4_000_000
d = {f"key{i:08d}": i for i in range(n)}     # 4M string keys: a ~300 MiB dict plus the strings
probe = [f"key{random.randrange(n):08d}" for _ in range(2_000_000)]
if sys.argv[-1] == "setup":
    sys.exit(0)
total = 0
for _ in range(3):
    for k in probe:
        total += d[k]                      # hash, probe the table, compare the key string
print(total)
"""

NUMPY_SORT = """\
import sys
import numpy as np
rng = np.random.default_rng(6)
a = rng.integers(0, 1 << 62, 1 << 30)              # 8 GiB of random int64 keys
idx = rng.integers(0, a.size, 1 << 24)             # 16M random indices
if sys.argv[-1] == "setup":
    sys.exit(0)
g = a[idx]                                         # random gathers over the 8 GiB
a.sort()                                           # then sort the 8 GiB in place
print(int(g[:1000].sum() % 1000003), int(a[0]), int(a[-1]))
"""

XSBENCH_LOOKUP = """\
import sys
import numpy as np
# A Monte Carlo cross-section lookup kernel in the style of XSBench (unionised energy grid):
# each nuclide has its own sorted energy grid with five cross sections per point; the union of
# all grids carries, for every union point and every nuclide, the index of that nuclide's grid
# point at or below it. A lookup draws an energy and a material, binary-searches the union
# grid, reads the index row, and interpolates each of the material's nuclides.
rng = np.random.default_rng(7)
n_nuc, n_grid = 68, 220_000
energy = np.sort(rng.random((n_nuc, n_grid)), axis=1)
energy[:, 0], energy[:, -1] = 0.0, 1.0              # every grid spans the whole range
xs = rng.random((n_nuc * n_grid, 5))               # total, elastic, absorption, fission, nu-fission
flat_e = energy.ravel()
order = np.argsort(flat_e, kind="stable")
union_e = flat_e[order]
owner = (order // n_grid).astype(np.int16)          # which nuclide each union point comes from
del order
index = np.empty((union_e.size, n_nuc), dtype=np.int32)   # 15M x 68 x 4 bytes: about 4 GiB
nuc_ids = np.arange(n_nuc, dtype=np.int16)
seen = np.zeros(n_nuc, dtype=np.int32)
step = 1 << 15
for lo in range(0, union_e.size, step):
    c = np.cumsum(owner[lo:lo + step, None] == nuc_ids, axis=0, dtype=np.int32)
    c += seen
    seen = c[-1].copy()
    np.clip(c - 1, 0, n_grid - 2, out=index[lo:lo + step])
del owner
sizes = [34, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9]  # nuclides per material (0: the fuel)
mats = [np.sort(rng.choice(n_nuc, k, replace=False)) for k in sizes]
dens = [rng.random(k) for k in sizes]
p_mat = np.array([0.14, 0.05, 0.05, 0.05, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.03, 0.03])
p_mat /= p_mat.sum()
if sys.argv[-1] == "setup":
    sys.exit(0)
total = np.zeros(5)
for _ in range(200):
    e = rng.random(1 << 16)
    mat = rng.choice(len(sizes), e.size, p=p_mat)
    u = np.clip(np.searchsorted(union_e, e, side="right") - 1, 0, union_e.size - 1)
    for m, nucs in enumerate(mats):
        sel = np.flatnonzero(mat == m)
        if sel.size == 0:
            continue
        lo = index[u[sel][:, None], nucs[None, :]]         # the index row, this material's columns
        pos = nucs[None, :] * n_grid + lo
        e0, e1 = flat_e[pos], flat_e[pos + 1]
        f = (e[sel][:, None] - e0) / np.maximum(e1 - e0, 1e-300)
        x0, x1 = xs[pos], xs[pos + 1]
        micro = x0 + f[..., None] * (x1 - x0)
        total += np.einsum("lkx,k->x", micro, dens[m])
print(np.round(total, 3).tolist())
"""

DUCKDB_JOIN = """\
import sys
import duckdb
con = duckdb.connect()                              # an in-memory database
# The tables are made on the main thread alone, so that the warm-up skip (which counts the main
# thread's instructions) ends at the same point of the program in every run; the query then runs
# on 2 threads.
con.execute("SET threads TO 1")
con.execute("SET preserve_insertion_order = false")
con.execute(
    "CREATE TABLE customers AS SELECT range AS id, (range * 7919) % 1000 AS region, "
    "(range % 97)::DOUBLE AS weight FROM range(4000000)"
)
con.execute(
    "CREATE TABLE orders AS SELECT range AS oid, hash(range) % 4000000 AS cid, "
    "(range % 1000)::DOUBLE AS amount, range % 7 AS kind FROM range(160000000)"
)
if sys.argv[-1] == "setup":
    sys.exit(0)
con.execute("SET threads TO 2")
rows = con.execute(
    "SELECT c.region, count(*) AS n, sum(o.amount * c.weight) AS value "
    "FROM orders o JOIN customers c ON o.cid = c.id WHERE o.kind < 5 "
    "GROUP BY c.region ORDER BY c.region"
).fetchall()
print(len(rows), rows[0], rows[-1])
"""

# Generating a scale-24 R-MAT graph takes hundreds of billions of instructions, far too long
# under QEMU even without callbacks, so the graph is made natively once (``_rmat24``) and the
# traced script only loads its CSR arrays: the warm-up is then imports and reading 1.1 GiB.
CSGRAPH_BFS_24_GEN = """\
import sys
import numpy as np
from scipy.sparse import csr_matrix

def rmat_table(levels, bits, a=0.57, b=0.19, c=0.19):
    # R-MAT's choice for `levels` bit levels at once: entry x holds the source bits (high
    # nibble) and target bits (low nibble) of the quadrant sequence whose cumulative
    # probability interval holds (x + 0.5) / 2**bits.
    p = np.array([a, b, c, 1 - a - b - c])
    prob, sbits, dbits = np.ones(1), np.zeros(1, np.uint8), np.zeros(1, np.uint8)
    for _ in range(levels):
        prob = (prob[:, None] * p).ravel()
        sbits = ((sbits[:, None] << 1) | np.array([0, 0, 1, 1], np.uint8)).ravel()
        dbits = ((dbits[:, None] << 1) | np.array([0, 1, 0, 1], np.uint8)).ravel()
    pick = np.searchsorted(np.cumsum(prob), (np.arange(1 << bits) + 0.5) / (1 << bits))
    pick = np.minimum(pick, prob.size - 1)
    return ((sbits << levels) | dbits)[pick].astype(np.uint8)

out = sys.argv[1]
rng = np.random.default_rng(2)
scale, edge_factor, levels, bits = 24, 16, 4, 24
table = rmat_table(levels, bits)
n, m = 1 << scale, edge_factor << scale
src = np.empty(m, dtype=np.int32)
dst = np.empty(m, dtype=np.int32)
chunk = 1 << 22
mask = np.uint64((1 << bits) - 1)
for lo in range(0, m, chunk):
    s = np.zeros(chunk, dtype=np.int32)
    d = np.zeros(chunk, dtype=np.int32)
    for shift in range(0, scale, 2 * levels):       # two table draws (8 levels) per 64 random bits
        raw = rng.bit_generator.random_raw(chunk)
        for half in (0, 1):
            t = table[(raw >> np.uint64(half * 32)) & mask]
            s |= (t >> levels).astype(np.int32) << (shift + half * levels)
            d |= (t & 15).astype(np.int32) << (shift + half * levels)
    src[lo:lo + chunk], dst[lo:lo + chunk] = s, d
perm = rng.permutation(n).astype(np.int32)          # Graph500 permutes vertex labels
src, dst = perm[src], perm[dst]
del perm
g = csr_matrix((np.ones(m, dtype=np.int8), (src, dst)), shape=(n, n))   # duplicates summed
np.save(out + "-indptr.npy", g.indptr.astype(np.int64))
np.save(out + "-indices.npy", g.indices.astype(np.int32))
"""

CSGRAPH_BFS_24 = """\
import sys
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

prefix = sys.argv[1]
indptr = np.load(prefix + "-indptr.npy")
indices = np.load(prefix + "-indices.npy")
# float64 weights: csgraph works on a float64 CSR, so this one is used as it is, without a copy
g = csr_matrix((np.ones(indices.size), indices, indptr), shape=(indptr.size - 1,) * 2)
root = int(np.argmax(np.diff(indptr)))     # start from a hub so the search covers the giant component
if sys.argv[-1] == "setup":
    sys.exit(0)
order = breadth_first_order(g, root, directed=True, return_predecessors=False)
print(order.size)
"""


GIB = 1 << 30


def _measured(native_gib: float, traced_gib: float) -> str:
    """The note of a ``memory`` measured as this module's docstring says."""
    return (
        f"native peak RSS {native_gib:.2f} GiB, run to completion under /usr/bin/time -v, plus "
        f"0.25 GiB for QEMU and the recorder; the traced run's process tree peaked at {traced_gib:.2f} GiB"
    )


@dataclass
class Recipe:
    name: str
    help: str
    #: Instructions of the first thread to skip (the warm-up) and how they were measured.
    skip: int
    skip_note: str
    max_accesses: int
    #: Bytes of memory tracing needs: the traced program's peak RSS plus QEMU's and the
    #: recorder's, measured (``memory_note`` says how). ``run`` refuses to start when
    #: MemAvailable is below it.
    memory: int
    memory_note: str
    #: What the program maps and what the window touches, measured.
    footprint_note: str
    pip: list[str] = field(default_factory=list)
    apt: list[str] = field(default_factory=list)
    #: Python source run with the project's interpreter, or None for a plain program.
    script: str | None = None
    argv: list[str] = field(default_factory=list)
    #: The generated input a plain program reads as ``{input}`` (a key of ``INPUTS``).
    input: str = ""
    #: A client/server recipe: the name of the driver that runs beside the traced server.
    driver: str = ""


RECIPES = [
    Recipe(
        "numpy-gather",
        "numpy random gather (table[idx]) over a 1 GiB int64 table, 16M random indices, 4 rounds",
        skip=1_700_000_000,
        skip_note="import numpy, build the 1 GiB table and the 16M indices: 1.63 G measured",
        max_accesses=200_000_000,
        memory=int(1.6 * GIB),
        memory_note=_measured(1.28, 1.45),
        footprint_note="maps 1.39 GiB (peak in the trace); the window touches 405,248 4 KiB pages (1.55 GiB)",
        pip=["numpy"],
        script=NUMPY_GATHER,
    ),
    Recipe(
        "csgraph-bfs",
        "scipy.sparse.csgraph breadth-first search on an R-MAT scale-22 graph (4M vertices, 64M edges)",
        skip=84_000_000_000,
        skip_note="import scipy, generate the R-MAT edges, build the CSR matrix: 83.9 G measured",
        max_accesses=200_000_000,
        memory=int(3.1 * GIB),
        memory_note=_measured(2.71, 3.02),
        footprint_note="maps 2.93 GiB (peak in the trace); the window touches 80,445 4 KiB pages (314 MiB)",
        pip=["numpy", "scipy"],
        script=CSGRAPH_BFS,
    ),
    Recipe(
        "ortools-mcf",
        "OR-Tools SimpleMinCostFlow on a 1M-node, 4M-arc random network (an mcf-like solve)",
        skip=1_700_000_000,
        skip_note="import ortools, generate the network, load arcs and supplies: 1.59 G measured",
        max_accesses=200_000_000,
        memory=int(0.8 * GIB),
        memory_note=_measured(0.47, 0.67),
        footprint_note="maps 682 MiB (peak in the trace); the window touches 37,200 4 KiB pages (145 MiB)",
        pip=["numpy", "ortools"],
        script=MIN_COST_FLOW,
    ),
    Recipe(
        "dict-lookups",
        "CPython dict lookups: 4M string keys, 2M random probes, 3 rounds",
        skip=26_500_000_000,
        skip_note="build the 4M-key dict and the probe list: 26.36 G measured",
        max_accesses=200_000_000,
        memory=int(0.9 * GIB),
        memory_note=_measured(0.62, 0.75),
        footprint_note="maps 654 MiB (peak in the trace); the window touches 122,779 4 KiB pages (480 MiB)",
        script=DICT_LOOKUPS,
    ),
    Recipe(
        "xz",
        "xz -9 compressing 64 MiB of generated text (LZMA2 with a 64 MiB dictionary)",
        skip=2_000_000_000,
        skip_note="start-up and encoder set-up are only 0.5 M (measured on empty input); the rest lets "
        "the first MiBs of input fill the dictionary, so the window sees steady-state match finding",
        max_accesses=200_000_000,
        memory=int(0.9 * GIB),
        memory_note=_measured(0.59, 0.17),
        footprint_note="maps 676 MiB (peak in the trace); the window touches 10,095 4 KiB pages (39 MiB)",
        apt=["xz-utils"],
        argv=["xz", "-9", "-T1", "-k", "-f", "{input}"],  # writes {input}.xz next to the input
        input="xz-text",
    ),
    Recipe(
        "numpy-sort",
        "numpy over an 8 GiB int64 array: 16M random gathers (a[idx]), then an in-place sort",
        skip=47_000_000_000,
        skip_note="import numpy, draw the 8 GiB array and the 16M indices: 46.89 G measured",
        max_accesses=200_000_000,
        memory=int(8.6 * GIB),
        memory_note=_measured(8.28, 8.49),
        footprint_note=(
            "maps 8.39 GiB (peak in the trace); the window touches 2,058,248 4 KiB pages (7.85 GiB)"
        ),
        pip=["numpy"],
        script=NUMPY_SORT,
    ),
    Recipe(
        "xsbench-lookup",
        "XSBench-style Monte Carlo cross-section lookups (numpy): binary search of a unionised "
        "energy grid of 68 nuclides x 220K points, a 4 GiB index grid, gathers into nuclide grids",
        skip=26_000_000_000,
        skip_note=(
            "import numpy, build the nuclide grids, the unionised grid and its 4 GiB index grid, the "
            "materials: 25.68 G measured"
        ),
        max_accesses=200_000_000,
        memory=int(5.0 * GIB),
        memory_note=_measured(4.68, 4.93),
        footprint_note=(
            "maps 4.85 GiB (peak in the trace); the window touches 188,416 4 KiB pages (736 MiB) "
            "spread over 2,313 2 MiB regions"
        ),
        pip=["numpy"],
        script=XSBENCH_LOOKUP,
    ),
    Recipe(
        "duckdb-join",
        "DuckDB (in memory): the tables made on the main thread alone, then a hash join of 160M "
        "orders with 4M customers, filter and group-by aggregate on 2 threads",
        skip=34_500_000_000,
        skip_note=(
            "import duckdb, create the two tables on the main thread alone: 34.46 G measured "
            "(`calibrate`), so the window starts at the query in every run; with 2 threads for the "
            "tables too, the main thread's share of them varied from run to run (30.02 G in one run, "
            "14.4 G in another, whose trace then recorded nothing), so the tables are made single-threaded"
        ),
        max_accesses=200_000_000,
        memory=int(5.8 * GIB),
        memory_note=_measured(5.46, 5.60),
        footprint_note=(
            "maps 6.97 GiB (peak in the trace; 5.46 GiB RSS at the native peak, measured with the tables "
            "made on 2 threads); the window touches 65,234 4 KiB pages (255 MiB) over 189 2 MiB regions, "
            "the query's threads together"
        ),
        pip=["duckdb"],
        script=DUCKDB_JOIN,
    ),
    Recipe(
        "csgraph-bfs-24",
        "scipy.sparse.csgraph breadth-first search (directed, from the top hub) on an R-MAT scale-24 "
        "graph (16M vertices, 256M edges before duplicates), generated natively once, loaded as a "
        "float64 CSR",
        skip=2_100_000_000,
        skip_note=(
            "import scipy, load the CSR arrays, make the float64 weights, find the hub: 2.07 G measured"
        ),
        max_accesses=200_000_000,
        memory=int(3.6 * GIB),
        memory_note=_measured(3.31, 3.51),
        footprint_note="maps 3.53 GiB (peak in the trace); the window touches 192,087 4 KiB pages (750 MiB)",
        pip=["numpy", "scipy"],
        script=CSGRAPH_BFS_24,
        input="rmat24",
    ),
    Recipe(
        "gcc-control",
        "the small-footprint control: GCC's cc1 -O2 compiling a generated 1500-function C file",
        skip=5_000_000_000,
        skip_note=(
            "start-up is 15.3 M (measured on empty input); 5 G lets cc1 parse the unit and reach the "
            "-O2 passes"
        ),
        max_accesses=200_000_000,
        memory=int(0.6 * GIB),
        memory_note=_measured(0.30, 0.26),
        footprint_note=(
            "maps 107 MiB at the window's end (peak in the trace; 0.30 GiB RSS at the native run's "
            "peak); the window touches 2,121 4 KiB pages (8.3 MiB)"
        ),
        apt=["gcc"],
        argv=["{cc1}", "-quiet", "-O2", "{input}", "-o", "{dir}/gcc-control.s"],
        input="c-source",
    ),
    Recipe(
        "redis-kv",
        "redis-server holding 1.2M keys of 1 KiB values (1.54 GiB by its INFO, loaded from an RDB file) "
        "serving random GETs from redis-benchmark (run natively, 4 clients, pipeline 8)",
        skip=7_200_000_000,
        skip_note=(
            "start-up and loading the 1.2M keys from the RDB file: 6.99 G measured (calibrate starts "
            "the server and shuts it down once it answers PING); 0.2 G more lands in the GETs"
        ),
        max_accesses=200_000_000,
        memory=int(1.9 * GIB),
        memory_note=_measured(1.56, 1.72),
        footprint_note=(
            "maps 1.70 GiB (peak in the trace; redis reports 1.54 GiB used); the window touches "
            "137,363 4 KiB pages (537 MiB; 138,958 in an earlier run: the native client's timing "
            "varies)"
        ),
        apt=["redis-server", "redis-tools"],
        driver="redis",
    ),
]


def recipes() -> list[Recipe]:
    return RECIPES


def find(name: str) -> Recipe:
    for r in recipes():
        if r.name == name:
            return r
    known = ", ".join(r.name for r in RECIPES)
    raise TracingError(f"no real workload named '{name}' (known: {known})")


def _workdir() -> Path:
    """Where recipes keep their scripts and inputs: ``out/real-workloads`` of the checkout, or
    ``real-workloads`` in the user's cache for an installed wheel."""
    root = checkout()
    d = root / "out" / "real-workloads" if root is not None else cache_dir() / "real-workloads"
    d.mkdir(parents=True, exist_ok=True)
    return d


def install(r: Recipe) -> None:
    """Install what the recipe needs: pip packages into this interpreter's environment (the
    project's virtualenv), Debian packages with apt-get."""
    missing = [p for p in r.pip if importlib.util.find_spec(p) is None]
    if missing:
        print(f"installing {' '.join(missing)} into {sys.prefix} with pip", file=sys.stderr)
        res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", *missing])
        if res.returncode != 0:
            raise TracingError(f"pip install {' '.join(missing)} failed")
    need = [p for p in r.apt if not _dpkg_installed(p)]
    if need:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        print(f"installing {' '.join(need)} with apt-get", file=sys.stderr)
        res = subprocess.run([*sudo, "apt-get", "install", "-y", "-qq", *need])
        if res.returncode != 0:
            raise TracingError(f"apt-get install {' '.join(need)} failed")


def _dpkg_installed(pkg: str) -> bool:
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def _xz_input(d: Path) -> Path:
    """64 MiB of word-like text, generated once (deterministic)."""
    p = d / "xz-input.txt"
    if not p.exists() or p.stat().st_size < 64 << 20:
        import numpy as np

        rng = np.random.default_rng(5)
        letters = np.frombuffer(b"etaoinshrdlucmfwypvbgkjqxz", dtype=np.uint8)
        weights = np.linspace(2.0, 0.1, letters.size)
        text = letters[rng.choice(letters.size, 64 << 20, p=weights / weights.sum())]
        text[rng.random(text.size) < 0.17] = ord(" ")
        text[rng.random(text.size) < 0.012] = ord("\n")
        tmp = p.with_suffix(".partial")
        tmp.write_bytes(text.tobytes())
        tmp.rename(p)
    return p


def _c_source(d: Path) -> Path:
    """A generated C translation unit (no #include, so cc1 needs no headers): 1500 functions
    with loops, switches, structs and calls between them, deterministic."""
    p = d / "gcc-control.c"
    if p.exists():
        return p
    lines = [
        "struct rec { long a, b; int tag; double w[4]; };",
        "static long sink;",
    ]
    n = 1500
    for i in range(n):
        k1, k2, k3 = (i * 7919) % 97 + 3, (i * 104729) % 31 + 2, (i * 31) % 13 + 1
        callee = f"f{(i * 37) % i}" if i else ""
        lines += [
            f"long f{i}(struct rec *r, int n, long x) {{",
            f"    long acc = x ^ {k1};",
            "    for (int j = 0; j < n; j++) {",
            f"        switch ((j + r[j % 8].tag) % {k3 + 3}) {{",
            f"        case 0: acc += r[j % 8].a * {k2}; break;",
            f"        case 1: acc ^= (acc << {k3 % 7 + 1}) | r[j % 8].b; break;",
            f"        case 2: r[j % 8].w[j & 3] += (double)acc / {k1}.0; break;",
            f"        default: acc = acc * {k1} + j;",
            "        }",
            f"        if (acc > {k1 * 100003}) acc -= r[(j + {k2}) % 8].a;",
            "    }",
            f"    for (int j = 0; j < 4; j++) acc += (long)(r[{i % 8}].w[j] * {k3});",
            (f"    if (n > 1) acc += {callee}(r, n - 1, acc & 0xffff);" if callee else ""),
            "    sink += acc;",
            "    return acc;",
            "}",
        ]
    lines += [
        "int main(void) {",
        "    struct rec r[8] = {{0}};",
        "    long t = 0;",
        *(f"    t += f{i}(r, {i % 17 + 2}, t);" for i in range(0, n, 7)),
        "    return (int)(t & 1);",
        "}",
    ]
    tmp = p.with_suffix(".partial")
    tmp.write_text("\n".join(line for line in lines if line) + "\n")
    tmp.rename(p)
    return p


def _rmat24(d: Path) -> Path:
    """The scale-24 R-MAT graph's CSR arrays (``PREFIX-indptr.npy``, ``PREFIX-indices.npy``),
    generated once, natively, with this interpreter; returns PREFIX."""
    prefix = d / "rmat24"
    if not Path(f"{prefix}-indices.npy").exists():
        gen = d / "rmat24-gen.py"
        gen.write_text(CSGRAPH_BFS_24_GEN)
        part = d / "rmat24.partial"
        print("generating the scale-24 R-MAT graph natively (about 1 GiB of CSR arrays)", file=sys.stderr)
        if subprocess.run([sys.executable, str(gen), str(part)]).returncode != 0:
            raise TracingError("generating the scale-24 R-MAT graph failed (see the message above)")
        Path(f"{part}-indptr.npy").rename(f"{prefix}-indptr.npy")
        Path(f"{part}-indices.npy").rename(f"{prefix}-indices.npy")
    return prefix


#: Inputs generated once under the work directory: a plain program reads one as ``{input}``, a
#: script gets it as its first argument.
INPUTS = {"xz-text": _xz_input, "c-source": _c_source, "rmat24": _rmat24}


def _cc1() -> str:
    """GCC's compiler proper: traced directly, since the gcc driver runs it with execve (which
    ``xlat trace`` leaves untraced)."""
    try:
        out = subprocess.run(["gcc", "-print-prog-name=cc1"], capture_output=True, text=True).stdout.strip()
    except OSError:
        out = ""
    if not out or not os.path.isabs(out):
        raise TracingError("gcc cannot say where its cc1 is (gcc -print-prog-name=cc1)")
    return out


def command(r: Recipe, phase: str | None = None) -> list[str]:
    """The argv the recipe traces (``phase="setup"`` stops a script after its warm-up)."""
    d = _workdir()
    if r.script is not None:
        path = d / f"{r.name}.py"
        path.write_text(r.script)
        inp = [str(INPUTS[r.input](d))] if r.input else []
        return [sys.executable, str(path), *inp, *([phase] if phase else [])]
    inp = str(INPUTS[r.input](d)) if r.input else ""
    argv = [a.replace("{input}", inp).replace("{dir}", str(d)) for a in r.argv]
    if argv and argv[0] == "{cc1}":
        argv[0] = _cc1()
    return argv


def calibrate(r: Recipe) -> int:
    """Count the warm-up instructions: run the script's set-up only (a program: on empty input),
    recording nothing, and read the instruction count of the first thread's exit event."""
    import xlat

    out = _workdir() / f"{r.name}.calibrate.xlat"
    if r.driver:
        # A server's set-up: start it, wait until it answers (its data loaded), shut it down.
        install(r)
        DRIVERS[r.driver](r, str(out), skip=1 << 62, max_accesses=None, progress=False, phase="setup")
        argv = None
    elif r.script is None:
        # A program's set-up: the same command on empty input.
        argv = [a.replace("{input}", "/dev/null") for a in command(r)]
        if r.input:
            inp = str(INPUTS[r.input](_workdir()))
            argv = [a.replace(inp, "/dev/null") for a in argv]
    else:
        argv = command(r, "setup")
    if argv is not None:
        trace(argv, str(out), skip=1 << 62, progress=False)
    exits = [e for e in xlat.open(str(out)).events() if e.type == "syscall" and e.name == "exit"]
    out.unlink()
    if not exits:
        raise TracingError(f"{r.name}: the set-up run recorded no exit")
    return max(e.icount for e in exits)


def mem_available(path: str = "/proc/meminfo") -> int | None:
    """MemAvailable of /proc/meminfo in bytes, or None where the kernel does not say."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def check_memory(r: Recipe) -> None:
    """Refuse, in one sentence, to trace a recipe that needs more memory than is available."""
    avail = mem_available()
    if avail is not None and avail < r.memory:
        raise TracingError(
            f"the real workload '{r.name}' needs {_gib(r.memory)} of memory to trace but only "
            f"{_gib(avail)} is available (MemAvailable in /proc/meminfo), so it was not started"
        )


def run(
    name: str, out: str, *, skip: int | None = None, max_accesses: int | None = None, progress: bool = False
) -> dict[str, Any]:
    """Install, prepare and trace recipe ``name`` into ``out``. A window that recorded no access
    (the program ended before its warm-up skip ran out) is an error, and its trace is removed."""
    r = find(name)
    check_memory(r)
    install(r)
    if r.driver:
        summary = DRIVERS[r.driver](r, out, skip=skip, max_accesses=max_accesses, progress=progress)
    else:
        argv = command(r)
        if r.apt and shutil.which(argv[0]) is None:
            raise TracingError(f"{argv[0]} is still missing after installing {' '.join(r.apt)}")
        summary = trace(
            argv,
            out,
            skip=r.skip if skip is None else skip,
            max_accesses=r.max_accesses if max_accesses is None else max_accesses,
            progress=progress,
        )
    first = summary["processes"][0] if summary.get("processes") else {"accesses": 0}
    if first["accesses"] == 0:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out)
        raise TracingError(
            f"the real workload '{r.name}' recorded no access: it ended before its warm-up skip of "
            f"{r.skip if skip is None else skip:,} instructions of the main thread ran out (this version of the "
            "program runs fewer there), so no trace was kept"
        )
    return summary


# The redis-kv recipe: redis-server (Debian) holding 1.2M keys of 1 KiB values, loaded from an
# RDB file written once by a native server; while the traced server runs, a native
# redis-benchmark drives random GETs against it over a unix socket.
REDIS_KEYS = 1_200_000
REDIS_VALUE = 1024

# Run natively beside the traced server: wait for it to answer PING (it answers -LOADING while
# it reads the RDB file), then either shut it down (set-up only) or run redis-benchmark against
# it and shut it down when the benchmark ends (if the window has not stopped it first).
REDIS_DRIVER = """\
import socket, subprocess, sys, time
sock, phase, keys = sys.argv[1], sys.argv[2], sys.argv[3]
def ask(cmd):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(600)
    s.connect(sock)
    s.sendall(cmd)
    data = s.recv(4096)
    s.close()
    return data
deadline = time.monotonic() + 3600
while time.monotonic() < deadline:
    try:
        if ask(b"PING\\r\\n").startswith(b"+PONG"):
            break
    except OSError:
        pass
    time.sleep(0.2)
else:
    sys.exit("redis-server never answered")
if phase == "run":
    subprocess.run(["redis-benchmark", "-s", sock, "-t", "get", "-n", "20000000", "-r", keys,
                    "-c", "4", "-P", "8", "-q"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    ask(b"SHUTDOWN NOSAVE\\r\\n")
except OSError:
    pass
"""


def _redis_server_argv(d: Path, sock: Path, dump: str) -> list[str]:
    return [
        "redis-server",
        "--port", "0",
        "--unixsocket", str(sock),
        "--dir", str(d),
        "--dbfilename", dump,
        "--save", "",
        "--appendonly", "no",
        "--daemonize", "no",
        "--loglevel", "warning",
        "--logfile", str(d / "redis-kv.log"),
        "--io-threads", "1",
    ]  # fmt: skip


def _redis_dump(d: Path) -> Path:
    """The RDB file with the keys ``key:%012d`` (redis-benchmark's names for -r) holding
    deterministic 1 KiB values, written once by a native redis-server fed over its socket."""
    import socket
    import time

    dump = d / "redis-kv.rdb"
    if dump.exists():
        return dump
    sock = d / "redis-kv-load.sock"
    sock.unlink(missing_ok=True)
    server = subprocess.Popen(
        _redis_server_argv(d, sock, "redis-kv.rdb.partial"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        for _ in range(300):
            if sock.exists():
                break
            time.sleep(0.1)
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(sock))
        batch, pending = [], 0

        def drain(n: int) -> None:
            got = 0
            while got < n:
                chunk = s.recv(1 << 16)
                if not chunk:
                    raise TracingError("redis-server closed the connection while the keys were loaded")
                got += chunk.count(b"\r\n")

        for i in range(REDIS_KEYS):
            key = b"key:%012d" % i
            val = (b"%012d" % (i * 2654435761 % 10**12)) * (REDIS_VALUE // 12) + b"x" * (REDIS_VALUE % 12)
            batch.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(val), val))
            pending += 1
            if pending == 1000:
                s.sendall(b"".join(batch))
                drain(pending)
                batch, pending = [], 0
        if batch:
            s.sendall(b"".join(batch))
            drain(pending)
        s.sendall(b"*1\r\n$4\r\nSAVE\r\n")
        drain(1)
        s.sendall(b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n")
        s.close()
        server.wait(timeout=600)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    (d / "redis-kv.rdb.partial").rename(dump)
    return dump


def _redis(
    r: Recipe, out: str, *, skip: int | None, max_accesses: int | None, progress: bool, phase: str = "run"
) -> dict[str, Any]:
    """Trace redis-server loading the RDB file and serving a native redis-benchmark."""
    d = _workdir()
    _redis_dump(d)
    sock = d / "redis-kv.sock"
    sock.unlink(missing_ok=True)
    driver = d / "redis-kv-driver.py"
    driver.write_text(REDIS_DRIVER)
    client = subprocess.Popen([sys.executable, str(driver), str(sock), phase, str(REDIS_KEYS)])
    try:
        return trace(
            _redis_server_argv(d, sock, "redis-kv.rdb"),
            out,
            skip=r.skip if skip is None else skip,
            max_accesses=r.max_accesses if max_accesses is None else max_accesses,
            progress=progress,
        )
    finally:
        if client.poll() is None:
            client.kill()
        client.wait()


#: Client/server recipes: the function that traces the server while driving it.
DRIVERS: dict[str, Any] = {"redis": _redis}
