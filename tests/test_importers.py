"""Importers on fixtures made here: a Valgrind lackey log of a program built in the test, and
ChampSim records written from the documented ``input_instr`` struct (raw, xz and gzip)."""

from __future__ import annotations

import gzip
import lzma
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xlat

XLAT = [sys.executable, "-m", "xlat"]

PROG_C = r"""
#include <stdint.h>
#include <stdio.h>
#define N 300
static volatile uint32_t arr[N];
int main(void) {
    for (int i = 0; i < N; i++) arr[i] = i;             /* 300 stores of 4 bytes */
    uint32_t s = 0;
    for (int i = N - 1; i >= 0; i -= 3) s += arr[i];    /* 100 loads of 4 bytes */
    for (int i = 0; i < 10; i++) arr[i] += 1;           /* 10 modifies (or load + store) */
    printf("%p %u\n", (void *)arr, s);
    return 0;
}
"""


def run_xlat(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*XLAT, *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def lackey_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    if shutil.which("valgrind") is None or shutil.which("gcc") is None:
        pytest.skip("needs valgrind and gcc")
    tmp = tmp_path_factory.mktemp("lackey")
    (tmp / "prog.c").write_text(PROG_C)
    exe = tmp / "prog"
    subprocess.run(["gcc", "-O1", "-no-pie", "-o", str(exe), str(tmp / "prog.c")], check=True)
    log = tmp / "lackey.log"
    r = subprocess.run(
        ["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={log}", str(exe)],
        capture_output=True,
        text=True,
        check=True,
    )
    arr = int(r.stdout.split()[0], 16)
    return log, arr


def count_lines(log: Path) -> dict[str, int]:
    """Line counts by kind, and the instruction number of the last data access."""
    counts = {"I": 0, "L": 0, "S": 0, "M": 0, "last_data_insn": 0}
    for line in log.read_text().splitlines():
        if line.startswith("I  "):
            counts["I"] += 1
        elif line[:3] in (" L ", " S ", " M "):
            counts[line[1]] += 1
            counts["last_data_insn"] = counts["I"]
    return counts


def test_lackey_import(lackey_log: tuple[Path, int], tmp_path: Path) -> None:
    log, arr = lackey_log
    out = tmp_path / "lackey.xlat"
    r = run_xlat("import", "lackey", str(log), "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    acc = xlat.read_accesses(str(out))
    n = count_lines(log)
    kinds = np.bincount(acc["kind"], minlength=3)
    assert kinds[0] == n["L"] + n["M"] and kinds[1] == n["S"] + n["M"] and kinds[2] == 0
    # Every I line is one instruction: an access carries the number of its instruction.
    assert int(acc["icount"].max()) == n["last_data_insn"] and n["I"] - n["last_data_insn"] < 100

    sel = (acc["addr"] >= arr) & (acc["addr"] < arr + 4 * 300)
    addr, kind = (acc["addr"][sel] - arr).tolist(), acc["kind"][sel].tolist()
    stores = [4 * i for i in range(300)]
    loads = [4 * i for i in range(299, -1, -3)]
    modifies = [4 * i for i in range(10)]
    assert addr[:300] == stores and kind[:300] == [1] * 300
    assert addr[300:400] == loads and kind[300:400] == [0] * 100
    # A read-modify-write is either one M line or an L and an S line: a load then a store.
    assert addr[400:] == [a for a in modifies for _ in (0, 1)] and kind[400:] == [0, 1] * 10
    assert (acc["size"][sel] == 4).all()

    # With ifetch, every I line also becomes a fetch access; usable directly as lackey:PATH.
    acc_i = xlat.read_accesses(f"lackey:{log}?ifetch=1")
    assert int((acc_i["kind"] == 2).sum()) == n["I"]
    assert len(acc_i["addr"]) == len(acc["addr"]) + n["I"]


def test_lackey_malformed_names_offset(lackey_log: tuple[Path, int], tmp_path: Path) -> None:
    log, _ = lackey_log
    lines = log.read_bytes().splitlines(keepends=True)
    k = next(i for i, line in enumerate(lines) if line.startswith(b" S ")) + 5
    offset = sum(len(line) for line in lines[:k])
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"".join(lines[:k]) + b" Q 1234,8\n" + b"".join(lines[k + 1 :]))
    r = run_xlat("import", "lackey", str(bad), "-o", str(tmp_path / "bad.xlat"), "--no-progress")
    assert r.returncode == 1
    assert f"line {k + 1}" in r.stderr and f"byte offset {offset}:" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "bad.xlat").exists()


def champsim_record(ip: int, dst: list[int], src: list[int], branch: int = 0, taken: int = 0) -> bytes:
    """One ChampSim ``input_instr``: ip, is_branch, branch_taken, destination_registers[2],
    source_registers[4], destination_memory[2], source_memory[4] (64 bytes, little-endian)."""
    dst = dst + [0] * (2 - len(dst))
    src = src + [0] * (4 - len(src))
    return struct.pack("<QBB2B4B2Q4Q", ip, branch, taken, 1, 0, 2, 3, 0, 0, *dst, *src)


def champsim_fixture() -> tuple[bytes, list[tuple[int, int, int]]]:
    rng = np.random.default_rng(7)
    data, expected = [], []
    for i in range(5000):
        n_src, n_dst = int(rng.integers(0, 5)), int(rng.integers(0, 3))
        src = [int(a) for a in rng.integers(1, 2**47, n_src)]
        dst = [int(a) for a in rng.integers(1, 2**47, n_dst)]
        data.append(champsim_record(0x400000 + 4 * i, dst, src, branch=i % 2, taken=i % 4 == 1))
        expected += [(a, 0, i + 1) for a in src] + [(a, 1, i + 1) for a in dst]
    return b"".join(data), expected


@pytest.mark.parametrize("compression", ["raw", "xz", "gz"])
def test_champsim_import(tmp_path: Path, compression: str) -> None:
    assert struct.calcsize("<QBB2B4B2Q4Q") == 64
    data, expected = champsim_fixture()
    path = tmp_path / {"raw": "t.champsim", "xz": "t.champsim.xz", "gz": "t.champsim.gz"}[compression]
    path.write_bytes({"raw": data, "xz": lzma.compress(data), "gz": gzip.compress(data)}[compression])
    out = tmp_path / "t.xlat"
    r = run_xlat("import", "champsim", str(path), "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    acc = xlat.read_accesses(str(out))
    got = list(zip(acc["addr"].tolist(), acc["kind"].tolist(), acc["icount"].tolist(), strict=True))
    assert got == expected
    assert (acc["size"] == 8).all()
    direct = xlat.read_accesses(f"champsim:{path}")  # readable without importing first
    assert (direct["addr"] == acc["addr"]).all() and int(direct["icount"].max()) == expected[-1][2]


def test_champsim_malformed_names_offset(tmp_path: Path) -> None:
    data, _ = champsim_fixture()
    cut = tmp_path / "cut.champsim"
    cut.write_bytes(data[: 64 * 100 + 17])
    r = run_xlat("import", "champsim", str(cut), "-o", str(tmp_path / "o.xlat"), "--no-progress")
    assert r.returncode == 1 and "byte offset 6400:" in r.stderr and "partial record of 17 bytes" in r.stderr

    bad = bytearray(data)
    bad[64 * 42 + 8] = 9  # is_branch must be 0 or 1
    p = tmp_path / "bad.champsim.xz"
    p.write_bytes(lzma.compress(bytes(bad)))
    r = run_xlat("import", "champsim", str(p), "-o", str(tmp_path / "o.xlat"), "--no-progress")
    assert r.returncode == 1 and f"byte offset {64 * 42}:" in r.stderr and "is_branch=9" in r.stderr
    assert "Traceback" not in r.stderr

    broken = tmp_path / "broken.champsim.gz"
    broken.write_bytes(gzip.compress(data)[:2000])
    r = run_xlat("import", "champsim", str(broken), "-o", str(tmp_path / "o.xlat"), "--no-progress")
    assert r.returncode == 1 and "offset" in r.stderr and "Traceback" not in r.stderr
