"""Recipes that trace real programs nobody on the xlat team wrote (``xlat workloads real``).

Each recipe installs what it needs (Python packages into the project's virtualenv with pip,
Debian packages with apt-get), prepares its input, and runs ``xlat trace`` with a documented
warm-up skip, so that the recorded window starts in the phase that matters (the lookups, the
search, the solve, the compression) instead of in imports and set-up. The skip counts were
measured with ``calibrate`` (below) on Debian 12, CPython 3.11, qemu-user 7.2 and the package
versions of the time; they are instructions of the process's first thread. Each recipe also
caps the window (``max_accesses``); both can be overridden.
"""

from __future__ import annotations

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


@dataclass
class Recipe:
    name: str
    help: str
    #: Instructions of the first thread to skip (the warm-up) and how they were measured.
    skip: int
    skip_note: str
    max_accesses: int
    pip: list[str] = field(default_factory=list)
    apt: list[str] = field(default_factory=list)
    #: Python source run with the project's interpreter, or None for a plain program.
    script: str | None = None
    argv: list[str] = field(default_factory=list)


RECIPES = [
    Recipe(
        "numpy-gather",
        "numpy random gather (table[idx]) over a 1 GiB int64 table, 16M random indices, 4 rounds",
        skip=1_700_000_000,
        skip_note="import numpy, build the 1 GiB table and the 16M indices: 1.63 G measured",
        max_accesses=200_000_000,
        pip=["numpy"],
        script=NUMPY_GATHER,
    ),
    Recipe(
        "csgraph-bfs",
        "scipy.sparse.csgraph breadth-first search on an R-MAT scale-22 graph (4M vertices, 64M edges)",
        skip=84_000_000_000,
        skip_note="import scipy, generate the R-MAT edges, build the CSR matrix: 83.9 G measured",
        max_accesses=200_000_000,
        pip=["numpy", "scipy"],
        script=CSGRAPH_BFS,
    ),
    Recipe(
        "ortools-mcf",
        "OR-Tools SimpleMinCostFlow on a 1M-node, 4M-arc random network (an mcf-like solve)",
        skip=1_700_000_000,
        skip_note="import ortools, generate the network, load arcs and supplies: 1.59 G measured",
        max_accesses=200_000_000,
        pip=["numpy", "ortools"],
        script=MIN_COST_FLOW,
    ),
    Recipe(
        "dict-lookups",
        "CPython dict lookups: 4M string keys, 2M random probes, 3 rounds",
        skip=26_500_000_000,
        skip_note="build the 4M-key dict and the probe list: 26.36 G measured",
        max_accesses=200_000_000,
        script=DICT_LOOKUPS,
    ),
    Recipe(
        "xz",
        "xz -9 compressing 64 MiB of generated text (LZMA2 with a 64 MiB dictionary)",
        skip=2_000_000_000,
        skip_note="start-up and encoder set-up are only 0.5 M (measured on empty input); the rest lets "
        "the first MiBs of input fill the dictionary, so the window sees steady-state match finding",
        max_accesses=200_000_000,
        apt=["xz-utils"],
        argv=["xz", "-9", "-T1", "-k", "-f", "{input}"],  # writes {input}.xz next to the input
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


def command(r: Recipe, phase: str | None = None) -> list[str]:
    """The argv the recipe traces (``phase="setup"`` stops a script after its warm-up)."""
    d = _workdir()
    if r.script is not None:
        path = d / f"{r.name}.py"
        path.write_text(r.script)
        return [sys.executable, str(path), *([phase] if phase else [])]
    inp = _xz_input(d)
    return [a.replace("{input}", str(inp)) for a in r.argv]


def calibrate(r: Recipe) -> int:
    """Count the warm-up instructions: run the script's set-up only (a program: on empty input),
    recording nothing, and read the instruction count of the first thread's exit event."""
    import xlat

    out = _workdir() / f"{r.name}.calibrate.xlat"
    if r.script is None:
        # A program's set-up: the same command on empty input.
        argv = [a.replace("{input}", "/dev/null") for a in r.argv]
    else:
        argv = command(r, "setup")
    trace(argv, str(out), skip=1 << 62, progress=False)
    exits = [e for e in xlat.open(str(out)).events() if e.type == "syscall" and e.name == "exit"]
    out.unlink()
    if not exits:
        raise TracingError(f"{r.name}: the set-up run recorded no exit")
    return max(e.icount for e in exits)


def run(
    name: str, out: str, *, skip: int | None = None, max_accesses: int | None = None, progress: bool = False
) -> dict[str, Any]:
    """Install, prepare and trace recipe ``name`` into ``out``."""
    r = find(name)
    install(r)
    argv = command(r)
    if r.apt and shutil.which(argv[0]) is None:
        raise TracingError(f"{argv[0]} is still missing after installing {' '.join(r.apt)}")
    return trace(
        argv,
        out,
        skip=r.skip if skip is None else skip,
        max_accesses=r.max_accesses if max_accesses is None else max_accesses,
        progress=progress,
    )
