"""Importers on fixtures made here: a Valgrind lackey log of a program built in the test,
ChampSim records written from the documented ``input_instr`` struct (raw, xz and gzip), and
DynamoRIO drmemtrace offline traces written from the documented ``trace_entry_t`` struct (zip,
gzip, and a directory of per-thread files)."""

from __future__ import annotations

import gzip
import json
import lzma
import shutil
import struct
import subprocess
import sys
import zipfile
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

    # The program's command line (Valgrind's "Command:" line) is the trace's command.
    info = xlat.trace_info(str(out))
    assert info["header"]["command"] == [str(lackey_log[0].parent / "prog")]
    assert info["header"]["metadata"]["tracer"] == "valgrind --tool=lackey --trace-mem=yes"
    r = run_xlat("trace-info", str(out))
    assert r.returncode == 0 and f"command {lackey_log[0].parent / 'prog'}" in " ".join(r.stdout.split())

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


def test_champsim_ifetch(tmp_path: Path) -> None:
    data, expected = champsim_fixture()
    path = tmp_path / "t.champsim.xz"
    path.write_bytes(lzma.compress(data))
    out = tmp_path / "t.xlat"
    r = run_xlat("import", "champsim", str(path), "-o", str(out), "--ifetch", "--no-progress")
    assert r.returncode == 0, r.stderr
    acc = xlat.read_accesses(str(out))
    fetch = acc["kind"] == 2
    # One fetch of each record's ip, first among the record's accesses; the data accesses as without.
    assert int(fetch.sum()) == 5000
    assert acc["addr"][fetch].tolist() == [0x400000 + 4 * i for i in range(5000)]
    assert acc["icount"][fetch].tolist() == list(range(1, 5001))
    assert (acc["size"][fetch] == 4).all()
    got = list(
        zip(
            acc["addr"][~fetch].tolist(),
            acc["kind"][~fetch].tolist(),
            acc["icount"][~fetch].tolist(),
            strict=True,
        )
    )
    assert got == expected
    first = np.r_[True, acc["icount"][1:] != acc["icount"][:-1]]
    assert (acc["kind"][first] == 2).all()
    direct = xlat.read_accesses(f"champsim:{path}?ifetch=1")
    assert (direct["addr"] == acc["addr"]).all()
    # The default is unchanged: no fetches.
    assert int((xlat.read_accesses(f"champsim:{path}")["kind"] == 2).sum()) == 0


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


# DynamoRIO drmemtrace. DynamoRIO is in neither Debian 12 nor PyPI, so there is no drrun here to
# record a trace with: the fixtures are written from the documented layout of the records that
# raw2trace writes (clients/drcachesim/common/trace_entry.h), as a real trace starts: header,
# version and file-type markers, thread, pid, cache-line, chunk and page-size markers, then
# timestamped runs of instructions and data references, then the footer.

DR_RECORD = struct.Struct("<HHQ")  # trace_entry_t on 64-bit: type, size, addr; 12 bytes, packed
# trace_type_t values
DR_READ, DR_WRITE, DR_INSTR, DR_THREAD, DR_PID, DR_HEADER, DR_FOOTER, DR_MARKER = 0, 1, 10, 22, 24, 25, 26, 28
# trace_marker_type_t values (a marker record's size field)
DR_TIMESTAMP, DR_CPU_ID, DR_FILETYPE, DR_CACHE_LINE, DR_VERSION, DR_PAGE_SIZE = 2, 3, 9, 10, 12, 18
DR_X86_64 = 0x40  # offline_file_type_t: recorded on x86-64


def dr(kind: int, size: int, addr: int) -> bytes:
    return DR_RECORD.pack(kind, size, addr)


def dr_marker(marker: int, value: int) -> bytes:
    return dr(DR_MARKER, marker, value)


def drmemtrace_thread(
    tid: int, times: list[int], per_segment: int, seed: int
) -> tuple[list[bytes], list[tuple[int, int, int, int, int]]]:
    """The records of one thread, with a timestamp before each of ``per_segment`` instructions
    (each with a load, every third also with a store), and its data accesses as (time, addr,
    kind, icount, size)."""
    rng = np.random.default_rng(seed)
    recs = [
        dr(DR_HEADER, 0, 6),
        dr_marker(DR_VERSION, 6),
        dr_marker(DR_FILETYPE, DR_X86_64),
        dr(DR_THREAD, 4, tid),
        dr(DR_PID, 4, 4000),
        dr_marker(DR_CACHE_LINE, 64),
        dr_marker(DR_PAGE_SIZE, 4096),
    ]
    expected, icount = [], 0
    for t in times:
        recs += [dr_marker(DR_TIMESTAMP, t), dr_marker(DR_CPU_ID, 1)]
        for _ in range(per_segment):
            icount += 1
            recs.append(dr(DR_INSTR, 4, 0x400000 + 4 * icount))
            load = int(rng.integers(1, 2**47))
            recs.append(dr(DR_READ, 8, load))
            expected.append((t, load, 0, icount, 8))
            if icount % 3 == 0:
                store = int(rng.integers(1, 2**47))
                recs.append(dr(DR_WRITE, 4, store))
                expected.append((t, store, 1, icount, 4))
    recs.append(dr(DR_FOOTER, 0, 0))
    return recs, expected


def write_drmemtrace_zip(path: Path, recs: list[bytes], per_chunk: int = 100) -> None:
    """The records as raw2trace's zip output: entries chunk.0000, chunk.0001, ... in order."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for k, i in enumerate(range(0, len(recs), per_chunk)):
            z.writestr(f"chunk.{k:04d}", b"".join(recs[i : i + per_chunk]))


def test_drmemtrace_zip_trace_info(tmp_path: Path) -> None:
    assert DR_RECORD.size == 12
    recs, expected = drmemtrace_thread(31337, [100, 200, 300], 300, seed=1)
    path = tmp_path / "drmemtrace.app.31337.0000.trace.zip"
    write_drmemtrace_zip(path, recs)
    r = run_xlat("trace-info", f"drmemtrace:{path}", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)["results"][0]
    info, header = res["info"], res["header"]
    loads = sum(1 for e in expected if e[2] == 0)
    stores = len(expected) - loads
    assert (info["accesses"], info["loads"], info["stores"]) == (len(expected), loads, stores)
    assert info["ifetches"] == 0
    assert info["instructions"] == 900 and info["bytes_accessed"] == 8 * loads + 4 * stores
    assert list(info["threads"]) == ["31337"] and info["threads"]["31337"]["last_icount"] == 900
    assert header["threads"] == [31337] and header["page_size_hint"] == 4096
    meta = header["metadata"]
    assert meta["importer"] == "drmemtrace" and meta["pid"] == 4000 and meta["compression"] == "zip"
    assert meta["drmemtrace_version"] == 6 and meta["arch"] == "x86_64"

    # The accesses themselves, in order; with ifetch=1 each instruction is also a fetch.
    acc = xlat.read_accesses(f"drmemtrace:{path}")
    got = list(
        zip(
            acc["addr"].tolist(),
            acc["kind"].tolist(),
            acc["icount"].tolist(),
            acc["size"].tolist(),
            strict=True,
        )
    )
    assert got == [e[1:] for e in expected]
    r = run_xlat("trace-info", f"drmemtrace:{path}?ifetch=1", "--json")
    info = json.loads(r.stdout)["results"][0]["info"]
    assert info["ifetches"] == 900 and info["accesses"] == len(expected) + 900


def test_drmemtrace_directory_import(tmp_path: Path) -> None:
    """A drmemtrace.*.dir: its trace/ files (zip and gzip) interleaved by their timestamps."""
    a, exp_a = drmemtrace_thread(11, [10, 30, 50], 40, seed=2)
    b, exp_b = drmemtrace_thread(12, [20, 40], 40, seed=3)
    trace = tmp_path / "drmemtrace.app.4000.0000.dir" / "trace"
    trace.mkdir(parents=True)
    write_drmemtrace_zip(trace / "drmemtrace.app.11.0000.trace.zip", a)
    (trace / "drmemtrace.app.12.0000.trace.gz").write_bytes(gzip.compress(b"".join(b)))
    (trace.parent / "modules.log").write_text("not a trace\n")
    out = tmp_path / "t.xlat"
    r = run_xlat("import", "drmemtrace", str(trace.parent), "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    acc = xlat.read_accesses(str(out))
    got = list(zip(acc["tid"].tolist(), acc["addr"].tolist(), acc["icount"].tolist(), strict=True))
    # Whole segments by time (no two share one here), each in its records' order.
    both = [(t, 11, x, i) for t, x, _, i, _ in exp_a] + [(t, 12, x, i) for t, x, _, i, _ in exp_b]
    want = sorted(both, key=lambda w: w[0])
    assert got == [w[1:] for w in want]
    info = xlat.trace_info(str(out))
    assert info["header"]["threads"] == [11, 12]
    assert info["header"]["metadata"]["threads_interleaved_by"] == "timestamp"


def test_drmemtrace_malformed_names_offset(tmp_path: Path) -> None:
    recs, _ = drmemtrace_thread(5, [1], 100, seed=4)
    bad = list(recs)
    bad[150] = dr(77, 8, 0x1000)  # no such record type: in chunk.0001, record 50
    p = tmp_path / "bad.trace.zip"
    write_drmemtrace_zip(p, bad)
    out = tmp_path / "o.xlat"
    r = run_xlat("import", "drmemtrace", str(p), "-o", str(out), "--no-progress")
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "zip entry chunk.0001" in r.stderr and "byte offset 600:" in r.stderr and "type 77" in r.stderr
    assert not out.exists()

    cut = tmp_path / "cut.trace.gz"  # a partial record, then no footer
    cut.write_bytes(gzip.compress(b"".join(recs)[: 12 * 120 + 7]))
    r = run_xlat("trace-info", f"drmemtrace:{cut}")
    assert r.returncode == 1 and "byte offset 1440:" in r.stderr and "partial record of 7 bytes" in r.stderr
    whole = tmp_path / "nofooter.trace"
    whole.write_bytes(b"".join(recs[:-1]))
    r = run_xlat("trace-info", f"drmemtrace:{whole}")
    assert r.returncode == 1 and "is truncated" in r.stderr

    filtered = list(recs)
    filtered[2] = dr_marker(DR_FILETYPE, DR_X86_64 | 0x100)  # data addresses filtered online
    f = tmp_path / "filtered.trace"
    f.write_bytes(b"".join(filtered))
    r = run_xlat("trace-info", f"drmemtrace:{f}")
    assert r.returncode == 1 and "byte offset 24" in r.stderr and "filtered trace" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


REAL_TRACE = Path(__file__).parent.parent / "crates/xlat-trace/tests/corpus/trace/dict-lookups-20k.xlat"


def champsim_view(acc: dict, shift: int = 0) -> list[tuple[int, int, int]]:
    """(icount, kind, addr) of each data access as ChampSim keeps it: per instruction its first 4
    loads then its first 2 stores, in trace order, address 0 left out."""
    per: dict[int, tuple[list[int], list[int]]] = {}
    for a, k, i in zip(acc["addr"].tolist(), acc["kind"].tolist(), acc["icount"].tolist(), strict=True):
        if k != 2 and a != 0:
            per.setdefault(i - shift, ([], []))[k].append(a)
    return [(i, k, a) for i, (ld, st) in per.items() for k, xs in ((0, ld[:4]), (1, st[:2])) for a in xs]


@pytest.mark.parametrize("suffix", [".champsimtrace.xz", ".champsimtrace.gz", ".champsimtrace"])
def test_champsim_export_round_trip(tmp_path: Path, suffix: str) -> None:
    """A real traced program (QEMU, Python's dict lookups) to ChampSim and back keeps its data
    accesses: addresses, kinds and instruction numbers (shifted to start at 1)."""
    orig = xlat.read_accesses(str(REAL_TRACE))
    out = tmp_path / f"t{suffix}"
    r = run_xlat("export", "champsim", str(REAL_TRACE), "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    first, last = int(orig["icount"][0]), int(orig["icount"].max())
    raw = out.read_bytes()
    raw = (
        lzma.decompress(raw)
        if suffix.endswith(".xz")
        else gzip.decompress(raw)
        if suffix.endswith(".gz")
        else raw
    )
    assert len(raw) == 64 * (last - first + 1)  # one record per instruction, gaps included
    assert f"{last - first + 1:,} records" in r.stdout and "synthetic ip" in r.stdout

    back = xlat.read_accesses(f"champsim:{out}")
    got = list(zip(back["icount"].tolist(), back["kind"].tolist(), back["addr"].tolist(), strict=True))
    want = champsim_view(orig, shift=first - 1)
    assert got == want
    # Few accesses fall outside the slots on this trace (and those are reported).
    assert len(want) >= 0.99 * len(orig["addr"])
    dropped = len(orig["addr"]) - len(want)
    if dropped:
        assert "left out" in r.stdout

    # The same through the Python API, with the counts.
    s = xlat.trace.export_champsim(str(REAL_TRACE), str(tmp_path / "api.champsimtrace"))
    assert s["records"] == last - first + 1 and s["first_icount"] == first
    assert s["loads"] + s["stores"] == len(want) and s["synthetic_ips"] == s["records"]
    assert s["dropped_loads"] + s["dropped_stores"] + s["dropped_zero"] == dropped


def test_champsim_export_keeps_fetch_ips(tmp_path: Path) -> None:
    """With instruction fetches in the trace (a ChampSim import with --ifetch), each record's ip
    is its fetch address: ChampSim -> xlat -> ChampSim gives the same bytes back."""
    data, _ = champsim_fixture()
    # The fixture's records hold registers and branch flags, which the export writes as 0, and
    # up to 4 loads and 2 stores: exactly what fits.
    cleared = b"".join(data[i : i + 8] + bytes(8) + data[i + 16 : i + 64] for i in range(0, len(data), 64))
    src = tmp_path / "in.champsimtrace"
    src.write_bytes(cleared)
    out = tmp_path / "out.champsimtrace"
    r = run_xlat("export", "champsim", f"champsim:{src}?ifetch=1", "-o", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr

    # Slot order may differ: ChampSim slots hold the accesses compacted, in order.
    def canon(b: bytes) -> list[tuple[int, list[int], list[int]]]:
        recs = [struct.unpack("<Q8x2Q4Q", b[i : i + 64]) for i in range(0, len(b), 64)]
        return [(r[0], [a for a in r[1:3] if a], [a for a in r[3:7] if a]) for r in recs]

    assert canon(out.read_bytes()) == canon(cleared)
    assert "synthetic" not in r.stdout


def test_export_refuses_several_threads_and_bad_input(tmp_path: Path) -> None:
    two = tmp_path / "two.txt"
    two.write_text(
        '#xlat-text 2\n#header {"format":"xlat-trace","producer":"t","command":[],"page_size_hint":4096,'
        '"threads":[1,2],"metadata":{}}\n'
        "A 1 1 L 0x1000 8\nA 2 1 L 0x2000 8\nA 1 2 S 0x3000 8\n"
        '#end {"accesses":3,"side_events":0,"threads":[{"tid":1,"accesses":2,"instructions":2},'
        '{"tid":2,"accesses":1,"instructions":1}]}\n'
    )
    out = tmp_path / "o.champsimtrace"
    r = run_xlat("export", "champsim", str(two), "-o", str(out), "--no-progress")
    assert r.returncode == 1 and "threads 1 and 2" in r.stderr and "--tid" in r.stderr
    assert "Traceback" not in r.stderr and not out.exists() and not Path(f"{out}.partial").exists()
    r = run_xlat("export", "champsim", str(two), "-o", str(out), "--tid", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    recs = out.read_bytes()
    assert len(recs) == 128 and struct.unpack("<Q", recs[32:40])[0] == 0x1000
    assert struct.unpack("<Q", recs[64 + 16 : 64 + 24])[0] == 0x3000
