"""Soak test of `xlat run --verify` (issue 38): many short runs of the mosaic corpus, each under a
random layout, compared byte for byte with the program's native run, with every verdict checked.

Each run picks, from a seeded RNG:

- a program with deterministic output: a tests/mosaic_progs program (built as tests/conftest.py
  builds them; probe and reuse_faults are left out, because they print the library's presence and
  page-fault counts, which differ from a native run by design), gcc compiling and running a small C
  file, a bash script (a `sort | head` pipeline, `readlink` failing, subshells, command
  substitutions), python3 with an allocation-heavy script, xz or gzip compressing a generated file
  to stdout (directly, or piped into sha256sum), sqlite3 on an in-memory database; a program that is
  not installed is skipped and named;
- a random layout: heap, anon and file pool sizes and windows of 4KB/2MB pages (a 1GB window
  sometimes, when a 1GB page could be reserved), from this script's own generator or from the
  project's heuristics (xlat.heuristics: growing, random and sliding window);
- a mode (hugetlb or thp), and sometimes `--keep-freed`.

It runs the program natively (no LD_PRELOAD, no XLAT_MOSAIC_* variable, LC_ALL=C) and under
`python -m xlat run --layout L --mode M --verify [--keep-freed] [--best-effort] -- PROGRAM ARGS`
through the CLI, then requires the same stdout byte for byte and the exit status the docs give
(the program's own, or 3 when it exited 0 but the layout was NOT honoured somewhere), and checks
the verification report against the layout, parsed independently (tomllib and this script's own
size parser): every process lists exactly the layout's 2MB/1GB windows and each pool's rest, a
row marked ok really shows the page size asked for (hugetlb: the kernel page size, thp: anon-huge
>= rss), a row marked NOT HONOURED really shows 4KB pages, each process's result follows its rows,
and the run's verdict line follows the processes (honoured / NOT honoured / not verified, and the
processes that ended otherwise than with status 0). A verdict that the report's own figures
contradict is a wrong verdict; so is one found in this soak (docs/mosaic.md, "Soak"): in thp mode,
two windows that touch share one VMA, whose huge pages --verify counts as outside the windows (the
pool's rest NOT HONOURED with the windows' own anon-huge figure).

Huge pages: before each hugetlb run the script makes sure enough 2MB pages are available for every
process of the program (it adds pages to the kernel pool and takes exactly that many back at the
end, even on error or Ctrl-C; so do the 1GB page and the hugetlb cgroup it may create). About 15%
of hugetlb runs are deliberately short of pages, on single-process programs:

- without --best-effort the run must refuse in one sentence with a non-zero exit, the program not
  started: either xlat's own check (the layout needs more 2MB pages than the kernel has available;
  exit 2) or, in a hugetlb cgroup whose `hugetlb.2MB.rsvd.max` is below the layout's need (so that
  the machine's other users of huge pages are not disturbed), the library's refusal before `main`
  (exit 127, the process reported as stopped before it ran);
- with --best-effort (in such a cgroup) the run must give the same output, a verdict of NOT
  honoured, and name each window that fell back to 4KB pages, the windows still on huge pages
  fitting in the cgroup's limit.

In thp mode the kernel may give 4KB pages where 2MB were asked (a fault that found no free 2MB,
or a copy-on-write after fork that split a huge page); such a NOT honoured verdict counts as true,
separately, when the rows it names really show memory on 4KB pages.

Run (root, for huge pages; `nice` on a shared machine):

    nice .venv/bin/python scripts/soak-verify.py [--runs 200] [--seed N] [--work DIR]
    nice .venv/bin/python scripts/soak-verify.py --seed N --only 17      # one run again

It prints a line per run, then a summary table; exit status 1 on any output mismatch, wrong or
unexpected verdict. Everything about each run (layout, command, both outputs' digests, the report)
is kept under DIR/runs/NNN/ (DIR defaults to /tmp/xlat-soak-verify), and DIR/results.jsonl has one
line per run. The library used is a copy of python/xlat/_lib/libxlat_mosaic.so taken at the start
(XLAT_MOSAIC_LIB, or --lib, picks another), so that a rebuild during the soak does not mix builds.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from xlat import heuristics, mosaic  # noqa: E402
from xlat.layout import load_layout, parse_layout  # noqa: E402

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
PAGE = {"4KB": 4 * KIB, "2MB": 2 * MIB, "1GB": GIB}
NR_2MB = "/proc/sys/vm/nr_hugepages"
NR_1GB = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"
EXIT_NOT_HONOURED = 3
TIMEOUT = 240  # seconds per program run; every run is meant to take a few

# The share of hugetlb runs short of huge pages, and of runs in each mode / with --keep-freed.
P_SHORT, P_THP, P_KEEP = 0.15, 0.4, 0.3
# 2MB pages a layout may ask for: a process tree needs them once per live process.
CAP_MULTI, CAP_SINGLE, CAP_THP = 16, 160, 512
# The most 2MB pages this script adds to the kernel's pool.
MAX_ADDED_2MB = 1200


# ---- sizes and layouts, parsed independently of xlat.layout --------------------------------------

_UNITS = {"": 1, "B": 1, "K": KIB, "KB": KIB, "KIB": KIB, "M": MIB, "MB": MIB, "MIB": MIB}
_UNITS |= {"G": GIB, "GB": GIB, "GIB": GIB, "T": 1 << 40, "TB": 1 << 40, "TIB": 1 << 40}


def size_of(v: int | str) -> int:
    """Bytes from a layout size (an integer, or "64MiB", "2 MB", ...), as docs/layout-format.md
    defines them; also reads the report's format_size spellings ("0", "64MiB", "4097")."""
    if isinstance(v, int):
        return v
    m = re.fullmatch(r"([0-9]+) *([A-Za-z]*)", v)
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a size: {v!r}")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


@dataclass
class Spec:
    """A layout as this script reads it: per pool, its size and windows (offset, length, page)
    in the order written."""

    name: str
    pools: dict[str, tuple[int, list[tuple[int, int, str]]]]

    @classmethod
    def from_toml(cls, text: str) -> Spec:
        raw = tomllib.loads(text)
        defaults = {"heap": 32 * GIB, "anon": 32 * GIB, "file": 8 * GIB}
        pools = {}
        for name in ("heap", "anon", "file"):
            p = raw.get(name, {})
            size = size_of(p.get("size", defaults[name]))
            wins = [(size_of(w["offset"]), size_of(w["length"]), w["page"]) for w in p.get("windows", [])]
            pools[name] = (size, wins)
        return cls(raw.get("name", "?"), pools)

    def need(self) -> dict[str, int]:
        out = {"2MB": 0, "1GB": 0}
        for _, wins in self.pools.values():
            for _, length, page in wins:
                if page != "4KB":
                    out[page] += length // PAGE[page]
        return out

    def expected_rows(self) -> list[tuple]:
        """The rows --verify must list per process: each 2MB/1GB window (pool, index as written,
        offset, length, page), then the pool's 4KB rest."""
        rows = []
        for name in ("heap", "anon", "file"):
            _, wins = self.pools[name]
            for i, (off, length, page) in enumerate(wins):
                if page != "4KB":
                    rows.append((name, i, off, length, page))
            rows.append((name, "rest", None, None, "4KB"))
        return rows


def _spell(n: int, rng: random.Random) -> str | int:
    """A size in one of the spellings the format allows."""
    r = rng.random()
    if r < 0.2:
        return n
    for unit, names in ((GIB, ("GiB", "G", "GB", "gib")), (MIB, ("MiB", "M", "MB", "mib")), (KIB, ("KiB",))):
        if n and n % unit == 0:
            return f"{n // unit}{' ' if r > 0.9 else ''}{rng.choice(names)}"
    return n


def _toml_value(v: int | str) -> str:
    return str(v) if isinstance(v, int) else f'"{v}"'


def random_layout(rng: random.Random, name: str, cap: int, allow_1gb: bool, min_windows: int = 0) -> str:
    """This script's own generator: random pool sizes, 0-4 windows per pool (mostly 2MB, some
    4KB, at most one 1GB), mostly in the first part of the pool where programs touch memory, at
    most ``cap`` 2MB pages in all; windows written in random order. Returns TOML."""
    sizes = {
        "heap": rng.choice([512 * MIB, GIB, 2 * GIB, 4 * GIB, 8 * GIB, 32 * GIB]),
        "anon": rng.choice([512 * MIB, GIB, 2 * GIB, 4 * GIB, 8 * GIB, 32 * GIB]),
        "file": rng.choice([256 * MIB, GIB, 2 * GIB, 8 * GIB]),
    }
    budget = cap
    gb_left = 1 if allow_1gb else 0
    windows: dict[str, list[tuple[int, int, str]]] = {"heap": [], "anon": []}
    while True:
        for pool in ("heap", "anon"):
            size = sizes[pool]
            used: list[tuple[int, int]] = []
            wins = []
            for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4])):
                r = rng.random()
                if gb_left and size >= 2 * GIB and r < 0.25:
                    page, length = "1GB", GIB
                    off = rng.choice([0, GIB]) if size >= 2 * GIB else 0
                elif r < 0.35:
                    page = "4KB"
                    length = rng.randint(1, 512) * 4 * KIB
                    off = rng.randrange(0, min(size, 256 * MIB) - length, 4 * KIB)
                else:
                    page = "2MB"
                    if budget < 1:
                        continue
                    span = min(size, rng.choice([64 * MIB, 256 * MIB, GIB]))
                    units = rng.randint(1, max(1, min(budget, span // (2 * MIB) // 2)))
                    length = units * 2 * MIB
                    off = rng.randrange(0, span - length + 1, 2 * MIB)
                if any(off < b and off + length > a for a, b in used):
                    continue
                used.append((off, off + length))
                wins.append((off, length, page))
                if page == "2MB":
                    budget -= length // (2 * MIB)
                if page == "1GB":
                    gb_left -= 1
            rng.shuffle(wins)
            windows[pool] = wins
        if sum(1 for w in windows["heap"] + windows["anon"] if w[2] == "2MB") >= min_windows:
            break
        budget, gb_left = cap, (1 if allow_1gb else 0)
    lines = ["version = 1", f'name = "{name}"']
    for pool in ("heap", "anon", "file"):
        lines += ["", f"[{pool}]", f"size = {_toml_value(_spell(sizes[pool], rng))}"]
        if windows.get(pool):
            lines.append("windows = [")
            for off, length, page in windows[pool]:
                lines.append(
                    f"  {{ offset = {_toml_value(_spell(off, rng))}, length = {_toml_value(_spell(length, rng))}, "
                    f'page = "{page}" }},'
                )
            lines.append("]")
    return "\n".join(lines) + "\n"


def heuristic_layout(rng: random.Random, name: str, style: str, cap: int) -> str:
    """A layout from the project's heuristics (one 2MB window in the heap or anon pool): the
    heuristic lays out a region of ``W`` bytes (the memory the program touches), and the window
    it chose is put into a larger pool with random sizes for the other pools."""
    pool = rng.choice(["heap", "anon"])
    w = max(4 * MIB, min(rng.choice([16, 32, 64, 128, 256, 512]) * MIB, cap * 2 * MIB))
    n = 8
    if style == "growing":
        lay = heuristics.growing_window(w, n, pool)[rng.randint(0, n)]
    elif style == "random-window":
        lay = heuristics.random_window(w, n, rng.randrange(1 << 30), pool)[rng.randint(0, n)]
    else:  # sliding: a synthetic miss profile with one hot spot
        regions = w // (2 * MIB)
        centre, width = rng.randrange(regions), rng.uniform(0.5, regions / 3)
        misses = [
            int(1000 * 2.718 ** (-(((j - centre) / width) ** 2))) + rng.randint(0, 5) for j in range(regions)
        ]
        x = rng.choice([0.2, 0.4, 0.6, 0.8])
        lay = heuristics.sliding_window(misses, x, n, pool, w)[rng.randint(0, n)]
    (win,) = lay.pool(pool).windows or [None]
    sizes = {p: rng.choice([512 * MIB, GIB, 4 * GIB, 32 * GIB]) for p in ("heap", "anon")}
    base = parse_layout(
        f"version = 1\n[heap]\nsize = {sizes['heap']}\n[anon]\nsize = {sizes['anon']}\n"
        f"[file]\nsize = {rng.choice([256 * MIB, 8 * GIB])}\n"
    )
    start, length = (win.offset, win.length) if win else (0, 0)
    out = heuristics.window_layout(pool, max(sizes[pool], w), start, length, f"{name}-{lay.name}", base)
    return out.to_toml()


# ---- the programs ------------------------------------------------------------------------------


@dataclass
class Case:
    """One program invocation: what to run and what its verification may legitimately show."""

    argv: list[str]
    label: str  # a short description for the log
    single: bool = True  # one process (no fork/exec): can run short of huge pages
    procs: int = 1  # processes with the library alive at once, at most
    #: children that may end without an exit report (a pipeline's writer killed by SIGPIPE)
    may_be_killed: frozenset[str] = frozenset()
    #: children that exit non-zero in normal operation
    may_fail: frozenset[str] = frozenset()
    #: executables (basenames, prefix match) that must appear among the verified processes
    must_see: frozenset[str] = frozenset()
    #: what the first process may be, if not the program itself (`bash -c 'a && b'` execs b)
    top: str = ""


CORPUS = ("mt_alloc", "mmap_stress", "madvise_zero", "env_clobber", "realloc_big", "gather")
SKIPPED_CORPUS = {
    "probe": "checks that libxlat_mosaic.so is loaded: its native run prints FAIL by design",
    "reuse_faults": "prints page-fault counts, which differ from the native run by design",
}

C_SOURCES = [
    r"""
#include <stdio.h>
#include <stdlib.h>
static int cmp(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    int *v = malloc(n * sizeof *v);
    unsigned x = 12345;
    for (int i = 0; i < n; i++) { x = x * 1103515245u + 12345u; v[i] = (int)(x >> 8); }
    qsort(v, n, sizeof *v, cmp);
    long long s = 0;
    for (int i = 0; i < n; i += 1000) s += v[i];
    printf("qsort %d %d %lld\n", v[0], v[n - 1], s);
    free(v);
    return 0;
}
""",
    r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node { struct node *next; unsigned long key; char name[24]; };
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    size_t nb = 4096;
    struct node **tab = calloc(nb, sizeof *tab);
    unsigned long x = 88172645463325252ul, sum = 0;
    for (int i = 0; i < n; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        struct node *e = malloc(sizeof *e);
        e->key = x % (n * 4ul);
        snprintf(e->name, sizeof e->name, "k%lu", e->key);
        e->next = tab[e->key % nb];
        tab[e->key % nb] = e;
        if (i % 3 == 0) { char *tmp = malloc(1 + i % 5000); memset(tmp, i, 1 + i % 5000); sum += tmp[i % 5000 / 2]; free(tmp); }
    }
    size_t longest = 0, freed = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t len = 0;
        for (struct node *e = tab[b], *nx; e; e = nx) { nx = e->next; len++; sum += e->key + strlen(e->name); if (e->key & 1) { free(e); freed++; } }
        if (len > longest) longest = len;
    }
    printf("hash %zu %zu %lu\n", longest, freed, sum);
    return 0;
}
""",
    r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    char *s = NULL; size_t len = 0;
    for (int i = 0; i < n; i++) {
        char buf[32]; int k = snprintf(buf, sizeof buf, "%d,", i * 7919 % 100003);
        s = realloc(s, len + k + 1); memcpy(s + len, buf, k + 1); len += k;
    }
    unsigned long h = 5381;
    for (size_t i = 0; i < len; i++) h = h * 33 + (unsigned char)s[i];
    printf("string %zu %lu\n", len, h);
    free(s);
    return 0;
}
""",
]

PY_SCRIPT = r"""
import array, hashlib, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
h = hashlib.sha256()
d, x = {}, seed
for i in range(n):
    x = (x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
    d.setdefault(x % (n // 7 + 1), []).append(x >> 40)
h.update(repr(sorted((k, sum(v)) for k, v in d.items())[:2000]).encode())
s = [str(i) * (i % 13) for i in range(n)]
h.update("".join(s[::97]).encode())
b = bytearray()
for i in range(n // 500):
    b += bytes([i % 251]) * 4096
h.update(bytes(b[::4099]))
a = array.array("q", range(n * 4))
h.update(str(sum(a[::1001])).encode())
del d, s, b
t = [tuple(range(i % 50)) for i in range(n)]
m = {i: str(i) for i in range(0, n, 3)}
for i in range(0, n, 6):
    del m[i]
print(len(t), len(m), h.hexdigest())
"""

SQL = """
CREATE TABLE t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n})
  SELECT x, (x * 2654435761) % 1000003 AS y, printf('%08x', (x * 40503) % 65536) AS s FROM c;
CREATE INDEX ty ON t(y);
SELECT count(*), sum(y), min(s), max(s) FROM t;
SELECT y % 10, count(*), sum(x) FROM t GROUP BY 1 ORDER BY 1;
SELECT s, count(*) FROM t GROUP BY s ORDER BY 2 DESC, 1 LIMIT 5;
SELECT count(*) FROM t a JOIN t b ON a.y = b.x WHERE a.x % 7 = 0;
DELETE FROM t WHERE x % 3 = 0;
SELECT count(*), total(y) FROM t;
"""

BASH_ALWAYS = [
    "seq 1 {n} | sort -rn | head -n 3",
    'if readlink /nonexistent/xlat-soak-{k}; then echo linked; else echo "readlink failed $?"; fi',
    '( echo "subshell {k}"; exit 0 )',
]
BASH_EXTRA = [
    'n=$(printf "%s\\n" c a b a | sort -u | tr a-z A-Z | wc -l); echo "unique $n"',
    'total=0; for i in $(seq 1 {m}); do total=$((total + i * i)); done; echo "total $total"',
    'echo "$(echo nested $(echo deeper $(( {m} * 3 ))))"',
    "awk -v n={n} 'BEGIN {{ s = 0; for (i = 0; i < n; i++) s += i % 7; print s }}'",
    "bash -c 'exec cat /proc/self/comm'",
    "seq 1 {n} | awk '{{ s += $1 }} END {{ print s }}'",
    'printf "%s\\n" $(seq 1 {k}) | sort -n | tail -n 2 | paste -sd,',
    "{{ echo b; echo a; }} | sort",
    'declare -A m; for i in $(seq 1 {m}); do m[k$((i % 17))]=$i; done; echo "keys ${{#m[@]}}"',
    "yes xlat | head -n {m} | sort | uniq -c",
    'grep -c zzz-not-there /etc/hostname || echo "grep found nothing"',
    '( cd / && ( echo "nested subshell in $PWD" ) )',
]


class Programs:
    """Builds the corpus once (work/progs, work/inputs) and makes a Case per run."""

    def __init__(self, work: Path, python: str):
        self.work, self.python = work, python
        self.progs: dict[str, str] = {}
        self.skipped: dict[str, str] = dict(SKIPPED_CORPUS)
        self.inputs = work / "inputs"
        self.inputs.mkdir(parents=True, exist_ok=True)
        cc = shutil.which("cc") or shutil.which("gcc")
        out = work / "progs"
        out.mkdir(parents=True, exist_ok=True)
        for name in CORPUS:
            if not cc:
                self.skipped[name] = "no C compiler"
                continue
            exe = out / name
            src = ROOT / "tests" / "mosaic_progs" / f"{name}.c"
            # as tests/conftest.py builds them
            subprocess.run([cc, "-O2", "-pthread", "-o", str(exe), str(src), "-ldl"], check=True)
            self.progs[name] = str(exe)
        self.tools = {t: shutil.which(t) for t in ("bash", "gcc", "xz", "gzip", "sha256sum", "sqlite3")}
        self.names = [f"corpus:{n}" for n in self.progs]
        for prog, needs in (
            ("gcc", ("gcc", "bash", "sha256sum")),
            ("bash", ("bash",)),
            ("python3", ()),
            ("xz", ("xz", "bash", "sha256sum")),
            ("gzip", ("gzip", "bash", "sha256sum")),
            ("sqlite3", ("sqlite3",)),
        ):
            missing = [t for t in needs if not self.tools[t]]
            if missing:
                self.skipped[prog] = f"{', '.join(missing)} not installed"
            else:
                self.names.append(prog)
        if "redis" not in self.skipped:
            self.skipped["redis"] = (
                "a server driven by a client, not a short program with its own output "
                "(tests/test_mosaic_corpus.py covers it)"
            )

    def input_file(self, mib: int) -> Path:
        """A deterministic, compressible text file of ``mib`` MiB."""
        p = self.inputs / f"text-{mib}MiB.txt"
        if not p.exists():
            r = random.Random(mib)
            words = [
                "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9)))
                for _ in range(3000)
            ]
            chunks, n = [], 0
            while n < mib * MIB:
                line = (
                    " ".join(r.choice(words) for _ in range(r.randint(4, 14))) + f" {r.randint(0, 99999)}\n"
                )
                chunks.append(line)
                n += len(line)
            p.write_text("".join(chunks)[: mib * MIB])
        return p

    def case(self, name: str, rng: random.Random, rundir: Path, single_only: bool) -> Case:
        """The program ``name`` with random arguments; files it needs are written into
        ``rundir`` (both runs use it as their working directory in turn)."""
        if name.startswith("corpus:"):
            prog = name.split(":", 1)[1]
            exe = self.progs[prog]
            args: list[str] = []
            if prog == "mt_alloc":
                args = [str(rng.choice([1, 2, 4])), str(rng.randint(20_000, 300_000))]
            elif prog == "mmap_stress":
                args = [str(rng.choice([1, 2, 3])), str(rng.randint(300, 2500))]
            elif prog == "gather":
                args = [str(rng.choice([16, 32, 64, 128])), str(rng.randint(100_000, 3_000_000))]
            return Case([exe, *args], " ".join([prog, *args]))
        if name == "python3":
            script = rundir / "alloc.py"
            script.write_text(PY_SCRIPT)
            n, seed = rng.randint(50_000, 800_000), rng.randrange(1 << 30)
            return Case([self.python, "alloc.py", str(n), str(seed)], f"python3 alloc.py {n} {seed}")
        if name == "sqlite3":
            n = rng.randint(20_000, 400_000)
            return Case([self.tools["sqlite3"], ":memory:", SQL.format(n=n)], f"sqlite3 :memory: ({n} rows)")
        if name in ("xz", "gzip"):
            mib = rng.choice([1, 2, 4, 8]) if name == "xz" else rng.choice([2, 4, 8, 16])
            level = rng.randint(0, 6) if name == "xz" else rng.randint(1, 9)
            src = self.input_file(mib)
            flags = ["-c", "-T1", f"-{level}"] if name == "xz" else ["-c", "-n", f"-{level}"]
            if single_only or rng.random() < 0.5:
                return Case([self.tools[name], *flags, str(src)], f"{name} {' '.join(flags)} {mib}MiB")
            cmd = f"{name} {' '.join(flags)} {src} | sha256sum"
            return Case(
                [self.tools["bash"], "-c", cmd],
                f"bash -c '{name} {' '.join(flags)} {mib}MiB | sha256sum'",
                single=False,
                procs=3,
                must_see=frozenset({name, "sha256sum"}),
            )
        if name == "gcc":
            (rundir / "prog.c").write_text(rng.choice(C_SOURCES))
            n, opt = rng.randint(20_000, 300_000), rng.choice(["0", "1", "2", "s"])
            cmd = f"gcc -O{opt} -o prog prog.c && ./prog {n} && sha256sum prog"
            return Case(
                [self.tools["bash"], "-c", cmd],
                f"bash -c '{cmd}'",
                single=False,
                procs=5,
                must_see=frozenset({"cc1", "collect2", "prog", "sha256sum"}),
                top="sha256sum",
            )
        if name == "bash":
            k, n, m = rng.randint(1, 99), rng.randint(2_000, 60_000), rng.randint(50, 400)
            lines = [t.format(k=k, n=n, m=m) for t in BASH_ALWAYS + rng.sample(BASH_EXTRA, rng.randint(2, 6))]
            rng.shuffle(lines)
            (rundir / "script.sh").write_text("#!/bin/bash\n" + "\n".join(lines) + "\necho done\n")
            return Case(
                [self.tools["bash"], "script.sh"],
                f"bash script.sh ({len(lines)} commands)",
                single=False,
                procs=7,
                may_be_killed=frozenset({"sort", "yes"}),
                may_fail=frozenset({"readlink", "grep"}),
                must_see=frozenset({"bash", "readlink", "head"}),
            )
        raise KeyError(name)


# ---- huge pages and the hugetlb cgroup -------------------------------------------------------


def _read(path: str) -> int:
    with open(path) as f:
        return int(f.read())


def _write(path: str, value: int | str) -> None:
    with open(path, "w") as f:
        f.write(f"{value}\n")


class HugePages:
    """Adds 2MB (and one 1GB) pages to the kernel's pools as the runs need them and takes exactly
    as many back at the end: relative, so that another user of the pools who reserved or released
    pages meanwhile finds his own count."""

    def __init__(self, log):
        self.log = log
        self.start = {"2MB": _read(NR_2MB), "1GB": _read(NR_1GB) if os.path.exists(NR_1GB) else 0}
        self.added = {"2MB": 0, "1GB": 0}
        self.gb_note = ""

    def available(self, page: str = "2MB") -> int:
        return mosaic.status().get(page, {}).get("available", 0)

    def ensure(self, need: int) -> bool:
        """Make at least ``need`` 2MB pages available (within MAX_ADDED_2MB of our own)."""
        have = self.available()
        if have >= need:
            return True
        add = min(need - have, MAX_ADDED_2MB - self.added["2MB"])
        if add > 0:
            before = _read(NR_2MB)
            _write(NR_2MB, before + add)
            self.added["2MB"] += _read(NR_2MB) - before
        return self.available() >= need

    def reserve_1gb(self) -> bool:
        if not os.path.exists(NR_1GB):
            self.gb_note = "the kernel offers no 1GB pages"
            return False
        if self.available("1GB") >= 1:
            return True
        try:
            self.added["1GB"] += mosaic.reserve(1, "1GB")
        except mosaic.MosaicError as err:
            self.gb_note = str(err)
            return False
        return True

    def restore(self) -> str:
        parts = []
        for page, path in (("2MB", NR_2MB), ("1GB", NR_1GB)):
            if not self.added[page]:
                parts.append(f"{page}: nr_hugepages {_read(path) if os.path.exists(path) else 0} (untouched)")
                continue
            cur = _read(path)
            _write(path, max(0, cur - self.added[page]))
            parts.append(
                f"{page}: nr_hugepages {cur} -> {_read(path)} (this script added {self.added[page]}; "
                f"{self.start[page]} at the start)"
            )
            self.added[page] = 0
        return "; ".join(parts)


class HugetlbCgroup:
    """A cgroup v2 group with the hugetlb controller, for runs short of 2MB pages: its
    ``hugetlb.2MB.rsvd.max`` makes the kernel refuse reservations beyond the limit, for this run
    only, without taking pages from the machine's other users."""

    def __init__(self):
        self.path: Path | None = None
        self.enabled_here = False
        self.why_not = ""
        root = None
        with open("/proc/mounts") as f:
            for line in f:
                w = line.split()
                if len(w) > 2 and w[2] == "cgroup2":
                    root = Path(w[1])
                    break
        if root is None or "hugetlb" not in (root / "cgroup.controllers").read_text().split():
            self.why_not = "no cgroup v2 hierarchy with the hugetlb controller"
            return
        self.root = root
        try:
            if "hugetlb" not in (root / "cgroup.subtree_control").read_text().split():
                _write(str(root / "cgroup.subtree_control"), "+hugetlb")
                self.enabled_here = True
            self.path = root / f"xlat-soak-{os.getpid()}"
            self.path.mkdir()
        except OSError as err:
            self.why_not = f"cannot make a hugetlb cgroup ({err.strerror})"
            self.path = None

    def limit(self, pages: int | None) -> None:
        assert self.path is not None
        _write(str(self.path / "hugetlb.2MB.rsvd.max"), "max" if pages is None else pages * 2 * MIB)

    def enter(self) -> None:
        """preexec_fn: move the child (xlat run and everything it starts) into the group."""
        assert self.path is not None
        _write(str(self.path / "cgroup.procs"), os.getpid())

    def close(self) -> None:
        if self.path is not None:
            for _ in range(50):
                try:
                    self.path.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
            self.path = None
        if self.enabled_here:
            try:
                _write(str(self.root / "cgroup.subtree_control"), "-hugetlb")
            except OSError:
                pass
            self.enabled_here = False


# ---- running ---------------------------------------------------------------------------------


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("XLAT_MOSAIC_")}
    env["LC_ALL"] = "C"
    env["PYTHONHASHSEED"] = "0"
    return env


@dataclass
class Ran:
    rc: int
    out: bytes
    err: bytes
    secs: float
    timed_out: bool = False


RUNNING: subprocess.Popen | None = None  # the run in progress, killed if the soak is interrupted


def execute(argv: list[str], cwd: Path, env: dict[str, str], preexec=None) -> Ran:
    global RUNNING
    t0 = time.monotonic()
    p = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=preexec,
    )
    RUNNING = p
    try:
        out, err = p.communicate(timeout=TIMEOUT)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        timed_out = True
    rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
    return Ran(rc, out, err, time.monotonic() - t0, timed_out)


# ---- reading the verification report -----------------------------------------------------------

HEAD = re.compile(r"^xlat verify: pid (\d+)(?: \(([^)]*)\))?(?:, (.*?))?, mode (\S+), layout '(.*)'$")
ROW = re.compile(
    r"^  (heap|anon|file)\s+(\d+|rest)\s+(\S+)\s+(\S+)\s+(4KB|2MB|1GB)\s+(.+?)\s+(\d+)kB\s+(\d+)kB\s+(\d+)kB"
    r"\s+(ok|NOT HONOURED)(?: \((.*)\))?$"
)
RESULT = re.compile(r"^  (verdict|result): (.*)$")
FINAL = re.compile(r"^xlat verify: (\d+) processes: verdict: (.*)$")
NO_SMAPS = "the process left no smaps snapshot"


@dataclass
class Proc:
    pid: int
    exe: str
    ending: str
    mode: str
    rows: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    cause: str = ""
    result_kind: str = ""
    result: str = ""

    @property
    def name(self) -> str:
        return Path(self.exe).name


def parse_report(text: str) -> tuple[list[str], list[Proc], str | None]:
    """(lines before the report, processes, the run's verdict line or None)."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if HEAD.match(line)), len(lines))
    procs: list[Proc] = []
    final = None
    for line in lines[first:]:
        if m := HEAD.match(line):
            procs.append(Proc(int(m.group(1)), m.group(2) or "", m.group(3) or "", m.group(4)))
        elif m := FINAL.match(line):
            final = m.group(2)
        elif not procs:
            continue
        elif m := ROW.match(line):
            g = m.groups()
            procs[-1].rows.append(
                {
                    "pool": g[0],
                    "index": g[1] if g[1] == "rest" else int(g[1]),
                    "offset": g[2],
                    "length": g[3],
                    "asked": g[4],
                    "obtained": g[5],
                    "rss": int(g[6]),
                    "ahp": int(g[7]),
                    "htlb": int(g[8]),
                    "ok": g[9] == "ok",
                    "note": g[10] or "",
                }
            )
        elif line.startswith("  problem: "):
            procs[-1].problems.append(line[len("  problem: ") :])
        elif line.startswith("  cause: "):
            procs[-1].cause = line
        elif m := RESULT.match(line):
            procs[-1].result_kind, procs[-1].result = m.groups()
    return lines[:first], procs, final


def _fmt(n: int) -> str:
    """xlat.layout.format_size, rewritten: the report's spelling of a size."""
    for unit, name in ((1 << 40, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n and n % unit == 0:
            return f"{n // unit}{name}"
    return str(n)


def row_kind(row: dict, mode: str, spec: Spec, issues: list[str], where: str) -> str:
    """Check one row against its numbers and the layout; returns "ok", "4KB-fallback" (a hugetlb
    window the kernel gave no huge pages, best effort), "thp-4KB" (a thp window with memory on
    4KB pages) or "other" (a NOT honoured row of another kind). Wrong verdicts go into ``issues``."""
    r = row
    if r["index"] == "rest":
        plain = r["obtained"] in ("4KB", "unmapped") and r["ahp"] == 0 and r["htlb"] == 0
        if r["ok"] != plain:
            issues.append(
                f"{where}: the rest of the {r['pool']} pool is marked {'ok' if r['ok'] else 'NOT HONOURED'} "
                f"but shows {r['obtained']}, anon-huge {r['ahp']}kB, hugetlb {r['htlb']}kB"
            )
        return "ok" if r["ok"] else "other"
    asked = r["asked"]
    length = size_of(r["length"])
    if r["obtained"].endswith("(hugetlb)"):
        really = r["obtained"] == f"{asked} (hugetlb)" and r["note"] != "window partly unmapped"
        really = really and r["htlb"] * KIB <= length and mode == "hugetlb"
        if r["ok"] != really:
            issues.append(
                f"{where}: window {r['pool']} {r['index']} ({asked}) is marked "
                f"{'ok' if r['ok'] else 'NOT HONOURED'} but obtained {r['obtained']} ({r['note']})"
            )
        return "ok" if r["ok"] else "other"
    if r["obtained"].endswith("in 2MB THPs"):
        shown = f"{_fmt(r['ahp'] * KIB) if r['ahp'] else '0'} in 2MB THPs"
        if r["obtained"] != shown:
            issues.append(
                f"{where}: window {r['pool']} {r['index']} says '{r['obtained']}' but anon-huge is {r['ahp']}kB"
            )
        really = asked == "2MB" and r["ahp"] >= r["rss"] and mode == "thp"
        if r["ok"] != really:
            issues.append(
                f"{where}: thp window {r['pool']} {r['index']} is marked {'ok' if r['ok'] else 'NOT HONOURED'} "
                f"with rss {r['rss']}kB, anon-huge {r['ahp']}kB"
            )
        if r["ok"]:
            return "ok"
        if asked == "2MB" and r["ahp"] < r["rss"]:
            if r["note"] != f"{r['rss'] - r['ahp']}kB on 4KB pages":
                issues.append(
                    f"{where}: thp window {r['pool']} {r['index']} note '{r['note']}' does not match "
                    f"rss {r['rss']}kB - anon-huge {r['ahp']}kB"
                )
            return "thp-4KB"
        return "other"
    # neither hugetlb nor thp backing: the library fell back (best effort) or the window is missing
    if r["ok"]:
        issues.append(f"{where}: window {r['pool']} {r['index']} is marked ok with backing {r['obtained']}")
        return "ok"
    if (
        r["obtained"].startswith("4KB (")
        # (", figures of a VMA that extends past the window" when the fallback's VMA merged with
        # the pool's rest, as verify.py says since the touching-windows fix)
        and r["note"].startswith("huge pages were not obtained")
        and r["ahp"] == 0
        and r["htlb"] == 0
    ):
        return "4KB-fallback"
    return "other"


@dataclass
class Verdict:
    """What the report says, checked: per process its kind ("honoured", "not-honoured",
    "unverified", "stopped"), the kinds of its NOT honoured rows; wrong verdicts in ``issues``."""

    procs: list[Proc]
    final: str | None
    kinds: dict[int, str] = field(default_factory=dict)
    bad_rows: dict[int, list[tuple[dict, str]]] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    #: rows called NOT HONOURED that this script shows to be honoured (id() of the row)
    false_rows: list[int] = field(default_factory=list)

    @property
    def not_honoured(self) -> list[Proc]:
        return [p for p in self.procs if self.kinds[p.pid] in ("not-honoured", "stopped")]

    @property
    def unverified(self) -> list[Proc]:
        return [p for p in self.procs if self.kinds[p.pid] == "unverified"]


def check_report(procs: list[Proc], final: str | None, spec: Spec, mode: str) -> Verdict:
    v = Verdict(procs, final)
    want_rows = spec.expected_rows()
    for p in procs:
        where = f"pid {p.pid} ({p.name})"
        bad: list[tuple[dict, str]] = []
        if p.mode != mode:
            v.issues.append(f"{where}: reported mode {p.mode}, run in {mode}")
        if NO_SMAPS in " ".join(p.problems):
            kind = "unverified"
            if p.rows:
                v.issues.append(f"{where}: rows listed for a process without a smaps snapshot")
        elif p.ending.startswith("stopped before it ran") or any(
            "stopped it before it ran" in x for x in p.problems
        ):
            kind = "stopped"
        else:
            got_rows = [
                (
                    r["pool"],
                    r["index"],
                    None if r["index"] == "rest" else size_of(r["offset"]),
                    None if r["index"] == "rest" else size_of(r["length"]),
                    r["asked"],
                )
                for r in p.rows
            ]
            if got_rows != want_rows:
                v.issues.append(f"{where}: the report's windows {got_rows} are not the layout's {want_rows}")
            for r in p.rows:
                k = row_kind(r, mode, spec, v.issues, where)
                if k != "ok":
                    bad.append((r, k))
            for r, k in bad:
                if k == "other" and r["index"] == "rest" and mode == "thp":
                    # Two windows that touch (allowed by the format) get the same madvise, so the
                    # kernel merges them into one VMA; that VMA lies in no single window, and its
                    # huge pages must not be counted as outside the windows.
                    wins = sorted((o, o + n) for o, n, pg in spec.pools[r["pool"]][1] if pg == "2MB")
                    touching = any(a[1] == b[0] for a, b in itertools.pairwise(wins))
                    same = [
                        w
                        for w in p.rows
                        if w["pool"] == r["pool"] and w["index"] != "rest" and w["ahp"] == r["ahp"]
                    ]
                    if touching and same and r["ahp"] > 0:
                        v.issues.append(
                            f"{where}: the rest of the {r['pool']} pool is called NOT HONOURED (huge pages outside "
                            f"the windows) for {r['ahp']}kB of anon-huge that are the touching windows' own (rows "
                            + ", ".join(str(w["index"]) for w in same)
                            + " show the same figure): the layout held, the verdict and the exit status 3 are wrong"
                        )
                        v.false_rows.append(id(r))
            kind = "honoured" if not bad and not p.problems and p.rows else "not-honoured"
        v.kinds[p.pid], v.bad_rows[p.pid] = kind, bad
        # the process's own result line must follow its rows
        single = len(procs) == 1 and final is None
        failed = p.ending not in ("exit status 0", "", "replaced by a program without the library")
        suffix = f" ({p.ending})" if failed else ""
        if kind == "honoured":
            want = ("layout honoured" if single else "pages as laid out") + suffix
        elif kind == "unverified":
            want = "layout not verified (no exit report)" + suffix
        else:
            want = "layout NOT honoured" + suffix
        if p.result != want or p.result_kind != ("verdict" if single else "result"):
            v.issues.append(
                f"{where}: says '{p.result_kind}: {p.result}', its rows and problems give '{want}'"
            )
    if len(procs) > 1 or final is not None:
        # the run's verdict, derived again from the processes
        n = len(procs)
        nh, unv = v.not_honoured, v.unverified
        if nh:
            text = (
                f"layout NOT honoured in {len(nh)} of {n} processes ("
                + ", ".join(f"pid {p.pid}" for p in nh)
                + ")"
            )
        elif unv:
            text = (
                f"layout honoured in {n - len(unv)} of {n} processes, not verified in {len(unv)} ("
                + "; ".join(f"pid {p.pid} ({p.name}): {p.ending}" for p in unv)
                + ")"
            )
        else:
            text = f"layout honoured in all {n} processes"
        others = [
            p
            for p in procs
            if v.kinds[p.pid] != "unverified"
            and p.ending not in ("exit status 0", "replaced by a program without the library")
        ]
        if others:
            text += (
                f"; {len(others)} of {n} processes ended otherwise than with exit status 0 ("
                + "; ".join(f"pid {p.pid} ({p.name}): {p.ending}" for p in others)
                + ")"
            )
        if final != text:
            v.issues.append(f"the run's verdict '{final}' is not what its processes give: '{text}'")
    return v


# ---- one run -----------------------------------------------------------------------------------


@dataclass
class Plan:
    index: int
    program: str
    mode: str
    keep_freed: bool
    short: str  # "" (enough pages), "refuse" or "best-effort"
    mechanism: str = ""  # for short runs: "precheck" (xlat's check) or "cgroup"
    style: str = "random"
    limit: int | None = None  # cgroup limit (2MB pages)


@dataclass
class Outcome:
    category: str = ""  # honoured, expected-not-honoured, thp-fallback, refused, failed
    mismatch: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    processes: int = 0
    unverified: int = 0
    cause_line: bool = False
    retries: int = 0
    thp_forked: int = 0  # NOT honoured processes (thp fallback) of a program that forks
    thp_single: int = 0  # ... of a single-process program


class Soak:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work).resolve()
        self.runs_dir = self.work / "runs"
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.lib = self.work / "libxlat_mosaic.so"
        src = Path(args.lib) if args.lib else mosaic.library_path()
        shutil.copy2(src, self.lib)
        self.lib_src = src
        self.lib_sha = hashlib.sha256(self.lib.read_bytes()).hexdigest()[:16]
        self.python = os.path.realpath(sys.executable)
        self.programs = Programs(self.work, self.python)
        self.hp = HugePages(self.log)
        self.cg = HugetlbCgroup()
        self.has_1gb = False
        self.thp_ok = "[never]" not in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()

    def log(self, msg: str) -> None:
        print(msg, flush=True)

    # -- planning --
    def plan(self, i: int) -> Plan:
        rng = random.Random(f"{self.args.seed}:{i}:plan")
        mode = "thp" if self.thp_ok and rng.random() < P_THP else "hugetlb"
        short = ""
        if mode == "hugetlb" and rng.random() < P_SHORT:
            short = rng.choice(["refuse", "best-effort"])
        singles = [
            n
            for n in self.programs.names
            if n.startswith("corpus:") or n in ("python3", "sqlite3", "xz", "gzip")
        ]
        program = rng.choice(singles if short else self.programs.names)
        mech = ""
        if short == "best-effort":
            mech = "cgroup"
        elif short == "refuse":
            mech = rng.choice(["precheck", "cgroup"])
        if mech == "cgroup" and self.cg.path is None:
            if short == "best-effort":
                short = ""  # cannot be short of pages without taking them from others
            mech = "precheck" if short else ""
        style = (
            "random" if short or rng.random() < 0.6 else rng.choice(["growing", "random-window", "sliding"])
        )
        return Plan(i, program, mode, rng.random() < P_KEEP, short, mech, style)

    # -- running --
    def run_one(self, i: int) -> dict:
        plan = self.plan(i)
        rng = random.Random(f"{self.args.seed}:{i}:run")
        rundir = self.runs_dir / f"{i:03d}"
        if rundir.exists():
            shutil.rmtree(rundir)
        (rundir / "cwd").mkdir(parents=True)
        case = self.programs.case(plan.program, rng, rundir / "cwd", single_only=bool(plan.short))
        cap = CAP_THP if plan.mode == "thp" else (CAP_SINGLE if case.single else CAP_MULTI)
        allow_1gb = plan.mode == "hugetlb" and case.single and not plan.short and self.has_1gb
        name = f"soak-{i:03d}"
        if plan.style == "random":
            toml = random_layout(rng, name, cap, allow_1gb, min_windows=2 if plan.short else 0)
        else:
            toml = heuristic_layout(rng, name, plan.style, cap)
        out = Outcome()
        t0 = time.monotonic()
        if plan.short == "refuse" and plan.mechanism == "precheck":
            # a window that needs more 2MB pages than the kernel has available now
            spec0 = Spec.from_toml(toml)
            extra = max(1, self.hp.available() - spec0.need()["2MB"] + rng.randint(1, 64))
            toml = _add_big_anon_window(toml, extra)
        spec = Spec.from_toml(toml)
        (rundir / "layout.toml").write_text(toml)
        load_layout(rundir / "layout.toml")  # the project's parser must accept it too
        need = spec.need()
        if plan.short in ("refuse", "best-effort") and plan.mechanism == "cgroup":
            plan.limit = rng.randint(0, need["2MB"] - 1)
        # native run (in the same working directory, before the mosaic run writes into it)
        env = base_env()
        nat = execute(case.argv, rundir / "cwd", env)
        cleanup = [p for p in (rundir / "cwd").iterdir() if p.name not in ("alloc.py", "prog.c", "script.sh")]
        for p in cleanup:
            p.unlink()
        # pages for the mosaic run
        if plan.mode == "hugetlb" and plan.mechanism != "precheck":
            # enough for every process; a cgroup run needs the layout's pages to pass xlat's check
            want = need["2MB"] * (case.procs + 1) + 32 if need["2MB"] else 0
            if want and not self.hp.ensure(want):
                out.notes.append(f"only {self.hp.available()} 2MB pages available, wanted {want}")
        cmd = [
            sys.executable,
            "-m",
            "xlat",
            "run",
            "--layout",
            str(rundir / "layout.toml"),
            "--mode",
            plan.mode,
            "--verify",
        ]
        if plan.short == "best-effort":
            cmd.append("--best-effort")
        if plan.keep_freed:
            cmd.append("--keep-freed")
        cmd += ["--", *case.argv]
        menv = dict(env, XLAT_MOSAIC_LIB=str(self.lib))
        preexec = None
        if plan.mechanism == "cgroup":
            self.cg.limit(plan.limit)
            preexec = self.cg.enter
        avail_before = self.hp.available()
        while True:
            mos = execute(cmd, rundir / "cwd", menv, preexec)
            err = mos.err.decode(errors="replace")
            # another user of the machine's huge pages took them between our check and the run
            if (
                not plan.short
                and plan.mode == "hugetlb"
                and mos.rc == 2
                and "huge pages but only" in err
                and out.retries < 3
            ):
                out.retries += 1
                time.sleep(2)
                self.hp.ensure(need["2MB"] * (case.procs + 1) + 32)
                continue
            break
        if plan.mechanism == "cgroup":
            self.cg.limit(None)
        wall = time.monotonic() - t0
        (rundir / "command").write_text(" ".join(_quote(a) for a in cmd) + "\n")
        (rundir / "mosaic.stderr").write_text(err)
        (rundir / "native.stderr").write_bytes(nat.err)
        self.judge(plan, case, spec, nat, mos, err, avail_before, out)
        failed = bool(out.mismatch or out.wrong or out.unexpected)
        if failed or self.args.keep_outputs:
            (rundir / "native.stdout").write_bytes(nat.out)
            (rundir / "mosaic.stdout").write_bytes(mos.out)
        rec = {
            "index": i,
            "program": plan.program,
            "label": case.label,
            "mode": plan.mode,
            "keep_freed": plan.keep_freed,
            "short": plan.short,
            "mechanism": plan.mechanism,
            "limit": plan.limit,
            "style": plan.style,
            "need_2MB": need["2MB"],
            "need_1GB": need["1GB"],
            "category": out.category,
            "native_rc": nat.rc,
            "mosaic_rc": mos.rc,
            "stdout_sha256": hashlib.sha256(nat.out).hexdigest()[:16],
            "stdout_bytes": len(nat.out),
            "processes": out.processes,
            "unverified": out.unverified,
            "cause_line": out.cause_line,
            "retries": out.retries,
            "thp_forked": out.thp_forked,
            "thp_single": out.thp_single,
            "mismatch": out.mismatch,
            "wrong": out.wrong,
            "unexpected": out.unexpected,
            "notes": out.notes,
            "native_s": round(nat.secs, 2),
            "mosaic_s": round(mos.secs, 2),
            "wall_s": round(wall, 2),
        }
        (rundir / "result.json").write_text(json.dumps(rec, indent=1) + "\n")
        return rec

    def judge(
        self, plan: Plan, case: Case, spec: Spec, nat: Ran, mos: Ran, err: str, avail: int, out: Outcome
    ):
        if nat.timed_out or mos.timed_out:
            out.unexpected.append(
                f"timed out after {TIMEOUT}s ({'native' if nat.timed_out else 'mosaic'} run)"
            )
        prefix, procs, final = parse_report(err)
        out.processes = len(procs)
        # ---- refused runs: one sentence, a non-zero status, the program never started
        if plan.short == "refuse":
            out.category = "refused"
            if mos.out:
                out.mismatch.append(
                    f"the refused run printed {len(mos.out)} bytes on stdout: the program ran"
                )
            if plan.mechanism == "precheck":
                n = spec.need()["2MB"]
                mm = re.fullmatch(
                    r"xlat: error: the layout needs (\d+) free 2MB huge pages but only (\d+) are available; run "
                    r"`xlat hugepages reserve (\d+)` \(as root\) first\.\n",
                    err,
                )
                said = tuple(map(int, mm.groups())) if mm else None
                if mos.rc != 2 or not said or said[0] != n or said[1] >= n or said[2] != n - said[1]:
                    out.wrong.append(
                        f"expected xlat's one-sentence refusal with status 2 (the layout needs {n}, "
                        f"{avail} were available), got status {mos.rc}: {err[:600]!r}"
                    )
            else:
                lib_lines = [line for line in err.splitlines() if line.startswith("xlat-mosaic:")]
                ok = (
                    mos.rc == 127
                    and len(lib_lines) == 1
                    and re.fullmatch(
                        r"xlat-mosaic: too few free 2MB huge pages to back a window of the (heap|anon) pool "
                        r"\(run `xlat hugepages reserve` or pass --best-effort\)\.",
                        lib_lines[0],
                    )
                    and len(procs) == 1
                    and procs[0].ending.startswith("stopped before it ran: too few free 2MB")
                )
                if not ok:
                    out.wrong.append(
                        f"expected the library's one-sentence refusal with status 127 (cgroup limit "
                        f"{plan.limit} pages, need {spec.need()['2MB']}), got status {mos.rc}: {err[:800]!r}"
                    )
                if procs:
                    v = check_report(procs, final, spec, plan.mode)
                    out.wrong += v.issues
                    if v.kinds[procs[0].pid] != "stopped":
                        out.wrong.append("the stopped process is not reported as stopped before it ran")
            return
        # ---- the program ran: same output, the documented exit status
        if nat.out != mos.out:
            out.mismatch.append(
                f"stdout differs: native {len(nat.out)} bytes sha256 {hashlib.sha256(nat.out).hexdigest()[:16]}, "
                f"mosaic {len(mos.out)} bytes sha256 {hashlib.sha256(mos.out).hexdigest()[:16]}"
            )
        if not procs:
            out.wrong.append(f"no verification report (status {mos.rc}): {err[-800:]!r}")
            return
        v = check_report(procs, final, spec, plan.mode)
        out.wrong += v.issues
        out.unverified = len(v.unverified)
        honoured = not v.not_honoured
        want_rc = nat.rc if honoured or nat.rc != 0 else EXIT_NOT_HONOURED
        if mos.rc != want_rc:
            out.mismatch.append(
                f"exit status {mos.rc}, expected {want_rc} (native {nat.rc}, layout "
                f"{'honoured' if honoured else 'NOT honoured'})"
            )
        # the program's own stderr, apart from xlat's and the library's lines
        own = "\n".join(
            line for line in prefix if not line.startswith(("xlat: note:", "xlat-mosaic: warning:"))
        )
        if own.strip() != nat.err.decode(errors="replace").strip():
            out.notes.append("stderr differs from the native run's: " + own[:300])
        # processes: the program first, the ones this program must show
        names = [p.name for p in procs]
        if (
            procs[0].exe
            and os.path.realpath(procs[0].exe) != os.path.realpath(case.argv[0])
            and procs[0].name != case.top
        ):
            out.wrong.append(f"the first process is {procs[0].exe}, not the program {case.argv[0]}")
        for must in case.must_see:
            if not any(
                n == must or n.startswith(must) or n.removeprefix("x86_64-linux-gnu-").startswith(must)
                for n in names
            ):
                out.unexpected.append(f"no process {must} among {names}")
        for p in v.unverified:
            if p.name not in case.may_be_killed:
                out.unexpected.append(f"pid {p.pid} ({p.name}) ended without an exit report")
        for p in procs:
            if v.kinds[p.pid] != "unverified" and p.ending != "exit status 0" and p.name not in case.may_fail:
                out.unexpected.append(f"pid {p.pid} ({p.name}) ended with '{p.ending}'")
        if case.single and len(procs) != 1:
            out.unexpected.append(f"{len(procs)} processes reported for a single-process program")
        kinds = {k for p in v.not_honoured for _, k in v.bad_rows[p.pid]}
        probs = [x for p in v.not_honoured for x in p.problems]
        out.cause_line = any(p.cause for p in procs)
        if plan.short == "best-effort":
            out.category = "expected-not-honoured"
            fell = [r for p in procs for r, k in v.bad_rows[p.pid] if k == "4KB-fallback"]
            kept = sum(
                size_of(r["length"]) // (2 * MIB)
                for p in procs
                for r in p.rows
                if r["ok"] and r["index"] != "rest" and r["asked"] == "2MB"
            )
            warnings = [
                line for line in prefix if line.startswith("xlat-mosaic: warning: a huge-page window")
            ]
            if honoured or not fell or kinds - {"4KB-fallback"} or probs:
                out.wrong.append(
                    f"best effort short of pages (limit {plan.limit} of {spec.need()['2MB']}): expected "
                    f"NOT honoured naming windows on 4KB pages, got {final or procs[0].result} {kinds} {probs}"
                )
            if kept > (plan.limit or 0):
                out.wrong.append(
                    f"{kept} 2MB pages reported in hugetlb windows, over the cgroup limit {plan.limit}"
                )
            if len(warnings) != len(fell):
                out.wrong.append(f"{len(warnings)} fallback warnings for {len(fell)} windows on 4KB pages")
            return
        really_bad = [r for p in v.not_honoured for r, _ in v.bad_rows[p.pid] if id(r) not in v.false_rows]
        if honoured:
            out.category = "honoured"
        elif not really_bad and not probs:
            out.category = "wrong-verdict"  # NOT honoured only through rows shown to be honoured
        elif plan.mode == "thp" and kinds == {"thp-4KB"} and not probs:
            out.category = "thp-fallback"
            if case.single:
                out.thp_single = len(v.not_honoured)
            else:
                out.thp_forked = len(v.not_honoured)
        else:
            out.category = "failed"
            out.unexpected.append(
                f"layout NOT honoured with enough pages: {final or procs[0].result}; rows "
                + "; ".join(
                    f"pid {p.pid} {r['pool']} {r['index']} {r['obtained']} ({r['note']})"
                    for p in v.not_honoured
                    for r, _ in v.bad_rows[p.pid]
                )
                + (f"; problems {probs}" if probs else "")
            )

    # -- the soak --
    def main(self) -> int:
        a = self.args
        runs = f"run {a.only} only" if a.only is not None else f"{a.runs} runs"
        self.log(f"soak-verify: seed {a.seed}, {runs}, work {self.work}")
        self.log(f"library {self.lib_src} (sha256 {self.lib_sha}), copied to {self.lib}")
        st = mosaic.status()
        self.log(
            f"huge pages at the start: 2MB nr {self.hp.start['2MB']} available {st.get('2MB', {}).get('available')}, "
            f"1GB nr {self.hp.start['1GB']}"
        )
        for name, why in self.programs.skipped.items():
            self.log(f"skipped: {name}: {why}")
        if not self.thp_ok:
            self.log("skipped: thp mode: transparent huge pages are disabled ([never])")
        if self.cg.path is None:
            self.log(
                f"note: {self.cg.why_not}: best-effort runs short of pages are skipped, refusals use xlat's check only"
            )
        self.has_1gb = self.hp.reserve_1gb()
        self.log(
            "1GB windows: " + ("yes (a 1GB page is available)" if self.has_1gb else f"no ({self.hp.gb_note})")
        )
        only = [a.only] if a.only is not None else range(a.runs)
        recs = []
        t0 = time.monotonic()
        with open(
            self.work / ("results-only.jsonl" if a.only is not None else "results.jsonl"),
            "a" if a.only is not None else "w",
        ) as jf:
            for i in only:
                rec = self.run_one(i)
                recs.append(rec)
                jf.write(json.dumps(rec) + "\n")
                jf.flush()
                bad = rec["mismatch"] + rec["wrong"] + rec["unexpected"]
                flags = ("+keep-freed " if rec["keep_freed"] else "") + (
                    f"short:{rec['short']}/{rec['mechanism']} " if rec["short"] else ""
                )
                self.log(
                    f"[{i:3d}] {rec['program']:<18} {rec['mode']:<7} {flags}{rec['style']:<13} "
                    f"2MB:{rec['need_2MB']:<4} 1GB:{rec['need_1GB']} procs {rec['processes']:<2} "
                    f"{rec['category']:<21} {rec['wall_s']:6.1f}s  {rec['label'][:60]}"
                    + ("".join(f"\n      !! {b}" for b in bad))
                    + ("".join(f"\n      note: {n}" for n in rec["notes"]))
                )
        wall = time.monotonic() - t0
        summary = self.summary(recs, wall)
        self.log(summary)
        if a.only is None:
            (self.work / "summary.txt").write_text(summary + "\n")
        fails = [r for r in recs if r["mismatch"] or r["wrong"] or r["unexpected"]]
        for r in fails:
            self.log(
                f"reproduce run {r['index']}: {sys.argv[0]} --seed {a.seed} --only {r['index']} --work {self.work}"
                f"  (command in {self.runs_dir / format(r['index'], '03d') / 'command'})"
            )
        return 1 if fails else 0

    def summary(self, recs: list[dict], wall: float) -> str:
        cols = [
            "runs",
            "hugetlb",
            "thp",
            "keep-freed",
            "honoured",
            "NOT-hon(exp)",
            "NOT-hon(thp)",
            "refused(exp)",
            "mismatch",
            "wrong",
            "unexpected",
            "procs",
            "wall s",
        ]

        def row(label: str, rs: list[dict]) -> str:
            vals = [
                len(rs),
                sum(r["mode"] == "hugetlb" for r in rs),
                sum(r["mode"] == "thp" for r in rs),
                sum(r["keep_freed"] for r in rs),
                sum(r["category"] == "honoured" for r in rs),
                sum(r["category"] == "expected-not-honoured" for r in rs),
                sum(r["category"] == "thp-fallback" for r in rs),
                sum(r["category"] == "refused" for r in rs),
                sum(bool(r["mismatch"]) for r in rs),
                sum(bool(r["wrong"]) for r in rs),
                sum(bool(r["unexpected"]) for r in rs),
                sum(r["processes"] for r in rs),
                f"{sum(r['wall_s'] for r in rs):.0f}",
            ]
            return f"{label:<20}" + "".join(
                f"{v!s:>{max(len(c), 5) + 1}}" for v, c in zip(vals, cols, strict=True)
            )

        head = f"{'program':<20}" + "".join(f"{c:>{max(len(c), 5) + 1}}" for c in cols)
        lines = [
            "",
            "summary (runs; honoured / NOT honoured as expected / NOT honoured by a thp fallback / refused as "
            "expected; runs with an output or exit-status mismatch, a wrong verdict, something unexpected)",
            head,
        ]
        for prog in sorted({r["program"] for r in recs}):
            lines.append(row(prog, [r for r in recs if r["program"] == prog]))
        lines.append(head.replace("program ", "mode    ", 1))
        for mode in ("hugetlb", "thp"):
            rs = [r for r in recs if r["mode"] == mode]
            if rs:
                lines.append(row(mode, rs))
        lines.append(row("all", recs))
        short = [r for r in recs if r["short"]]
        lines.append("")
        lines.append(
            f"short of pages: {len(short)} of {sum(r['mode'] == 'hugetlb' for r in recs)} hugetlb runs "
            f"({sum(r['short'] == 'refuse' and r['mechanism'] == 'precheck' for r in recs)} refused by xlat's check, "
            f"{sum(r['short'] == 'refuse' and r['mechanism'] == 'cgroup' for r in recs)} by the library under a cgroup limit, "
            f"{sum(r['short'] == 'best-effort' for r in recs)} best effort)"
        )
        thp_fb = [r for r in recs if r["category"] == "thp-fallback"]
        lines.append(
            f"thp fallbacks: {len(thp_fb)} runs, {sum(r['cause_line'] for r in thp_fb)} of them with the kernel's "
            f"fault fallbacks counted during the run (the report's 'cause:' line); NOT honoured processes: "
            f"{sum(r['thp_forked'] for r in thp_fb)} in process trees (the program forks: copy-on-write splits "
            f"huge pages), {sum(r['thp_single'] for r in thp_fb)} single-process programs"
        )
        lines.append(
            f"processes verified: {sum(r['processes'] for r in recs)} ({sum(r['unverified'] for r in recs)} pipeline "
            f"writers ended by SIGPIPE, not verified); layouts with a 1GB window: {sum(r['need_1GB'] > 0 for r in recs)}; "
            f"keep-freed: {sum(r['keep_freed'] for r in recs)}; runs retried because pages were taken meanwhile: "
            f"{sum(r['retries'] > 0 for r in recs)}"
        )
        styles = {}
        for r in recs:
            styles[r["style"]] = styles.get(r["style"], 0) + 1
        lines.append("layouts: " + ", ".join(f"{k} {v}" for k, v in sorted(styles.items())))
        lines.append(
            f"wall time: {wall:.0f} s ({wall / 60:.1f} min), {wall / max(1, len(recs)):.1f} s per run"
        )
        return "\n".join(lines)


def _add_big_anon_window(toml: str, pages: int) -> str:
    """Add to the anon pool a 2MB window of ``pages`` pages at 64GiB, growing the pool to hold it."""
    raw = tomllib.loads(toml)
    anon = raw.get("anon", {})
    wins = anon.get("windows", [])
    length = pages * 2 * MIB
    off = 64 * GIB
    size = off + (length + GIB - 1) // GIB * GIB
    lines = ["version = 1", f'name = "{raw.get("name", "short")}-short"']
    for pool in ("heap", "anon", "file"):
        p = raw.get(pool, {})
        ws = list(p.get("windows", []))
        psize = p.get("size", 8 * GIB if pool == "file" else 32 * GIB)
        if pool == "anon":
            psize = size
            ws = [*wins, {"offset": off, "length": length, "page": "2MB"}]
        lines += ["", f"[{pool}]", f"size = {_toml_value(psize)}"]
        if ws:
            lines.append("windows = [")
            lines += [
                f"  {{ offset = {_toml_value(w['offset'])}, length = {_toml_value(w['length'])}, "
                f'page = "{w["page"]}" }},'
                for w in ws
            ]
            lines.append("]")
    return "\n".join(lines) + "\n"


def _quote(a: str) -> str:
    return a if re.fullmatch(r"[\w@%+=:,./-]+", a) else "'" + a.replace("'", "'\\''") + "'"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=int, default=200, help="number of runs (default 200)")
    ap.add_argument("--seed", type=int, default=None, help="RNG seed (default: from the clock, printed)")
    ap.add_argument(
        "--work", default="/tmp/xlat-soak-verify", help="work directory (default /tmp/xlat-soak-verify)"
    )
    ap.add_argument("--only", type=int, default=None, metavar="I", help="run only run number I of this seed")
    ap.add_argument(
        "--lib",
        default=None,
        help="the library to test (default: xlat's, as XLAT_MOSAIC_LIB or python/xlat/_lib)",
    )
    ap.add_argument(
        "--keep-outputs", action="store_true", help="keep both stdouts of every run, not only failing ones"
    )
    args = ap.parse_args()
    if args.seed is None:
        args.seed = int(time.time()) % 100000
    if os.geteuid() != 0:
        print("soak-verify: needs root (huge pages, the hugetlb cgroup).", file=sys.stderr)
        return 2

    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    soak = None
    try:
        soak = Soak(args)
        return soak.main()
    except KeyboardInterrupt:
        print("soak-verify: interrupted", file=sys.stderr)
        return 130
    finally:
        if RUNNING and RUNNING.poll() is None:
            os.killpg(RUNNING.pid, signal.SIGKILL)
            RUNNING.wait()
        if soak is not None:
            soak.cg.close()
            print("huge pages restored: " + soak.hp.restore(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
