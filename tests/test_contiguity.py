"""xlat.contiguity and `xlat contiguity`: ranges of contiguous pages in live processes.

Unit tests run on constructed frame numbers and on a fake /proc tree with hand-computed answers;
the real-process tests scan children of this test (root needed for frame numbers)."""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import result, results
from xlat.cli import main
from xlat.contiguity import (
    KPF_COMPOUND_HEAD,
    KPF_COMPOUND_TAIL,
    KPF_THP,
    KPF_ZERO_PAGE,
    PM_PRESENT,
    PM_SWAPPED,
    ContiguityError,
    coverage_curve,
    find_runs,
    huge_entries,
    parse_maps,
    range_stats,
    read_smaps,
    sample,
)

ROOT = Path(__file__).resolve().parents[1]
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="frame numbers in /proc/PID/pagemap need root")

HEAD = 1 << KPF_COMPOUND_HEAD
TAIL = 1 << KPF_COMPOUND_TAIL
THP = 1 << KPF_THP


# --- ranges, huge pages and statistics on constructed arrays ---------------------------------


def test_find_runs_breaks_on_virtual_and_physical_gaps():
    vpn = [10, 11, 12, 13, 15, 16, 17, 18]
    pfn = [5, 6, 7, 9, 10, 11, 20, 21]
    r = find_runs(vpn, pfn)
    # 10-12 on 5-7; 13 on 9 (frame gap); 15-16 on 10-11 (page gap); 17-18 on 20-21 (frame gap)
    assert r.vpn.tolist() == [10, 13, 15, 17]
    assert r.pfn.tolist() == [5, 9, 10, 20]
    assert r.pages.tolist() == [3, 1, 2, 2]
    assert find_runs([], []).pages.tolist() == []
    # descending frames are not a range
    assert find_runs([1, 2, 3], [9, 8, 7]).pages.tolist() == [1, 1, 1]


def test_huge_entries_need_alignment_a_compound_head_and_its_tails():
    vpn = np.arange(1024, 1024 + 1536)
    pfn = np.arange(4096, 4096 + 1536)
    flags = np.zeros(1536, dtype=np.uint64)
    # block 0: a THP (head + 511 tails); block 1: plain pages; block 2: THP with a head inside
    flags[0] = HEAD | THP
    flags[1:512] = TAIL | THP
    flags[1024] = HEAD | THP
    flags[1025:1536] = TAIL | THP
    flags[1300] = HEAD | THP  # a second compound starts inside: block 2 is not one 2MB page
    assert huge_entries(vpn, pfn, flags) == {262144: 0, 512: 1}
    # the same frames one page off the 2MB virtual boundary: no huge page
    assert huge_entries(vpn + 1, pfn, flags)[512] == 0
    # a missing page inside block 0 (not present): no huge page
    keep = np.ones(1536, dtype=bool)
    keep[7] = False
    assert huge_entries(vpn[keep], pfn[keep], flags[keep])[512] == 0


def test_range_stats_hand_computed():
    st = range_stats([7, 512, 1, 100, 512], threshold=8)
    # present 1132; 99% is 1120.68 -> 1121 pages: 512 + 512 + 100 = 1124 -> 3 ranges
    assert st["present_pages"] == 1132
    assert st["ranges"] == 5
    assert st["ranges_to_cover_99pct"] == 3
    assert st["largest_range_pct"] == pytest.approx(100 * 512 / 1132)
    assert st["range_pages"] == {"median": 100, "average": pytest.approx(226.4), "max": 512}
    assert st["threshold_ranges"] == 3
    assert st["threshold_covered_pct"] == pytest.approx(100 * 1124 / 1132)
    assert st["threshold_range_pages"] == {"median": 512, "average": pytest.approx(1124 / 3), "max": 512}
    # exactly 99%: 99 pages of 100 in one range need just that range
    assert range_stats([99, 1])["ranges_to_cover_99pct"] == 1
    assert range_stats([98, 1, 1])["ranges_to_cover_99pct"] == 2
    assert range_stats([2, 2, 1, 1])["range_pages"]["median"] == 1.5
    empty = range_stats([])
    assert (empty["present_pages"], empty["ranges"], empty["ranges_to_cover_99pct"]) == (0, 0, 0)


def test_coverage_curve_takes_the_largest_ranges_first():
    x, y = coverage_curve([1, 3, 4, 2])
    assert x.tolist() == [1, 2, 3, 4]
    assert y.tolist() == [40.0, 70.0, 90.0, 100.0]


def test_parse_maps():
    text = (
        "00400000-0040a000 r-xp 00000000 fe:00 12  /bin/prog\n"
        "7ffd0000-7ffd2000 rw-p 00000000 00:00 0                          [stack]\n"
        "7f0000000000-7f0000200000 rw-p 00000000 00:00 0 \n"
    )
    v = parse_maps(text)
    assert [(x.start, x.end, x.perms, x.path, x.pages) for x in v] == [
        (0x400000, 0x40A000, "r-xp", "/bin/prog", 10),
        (0x7FFD0000, 0x7FFD2000, "rw-p", "[stack]", 2),
        (0x7F0000000000, 0x7F0000200000, "rw-p", "", 512),
    ]


# --- a fake /proc tree ---------------------------------------------------------------------


def _fake_proc(tmp: Path, pages: dict[int, int], flags: dict[int, int], maps: str, smaps: str = "") -> Path:
    """/proc with process 123: ``pages`` {vpn: pagemap entry}, ``flags`` {pfn: kpageflags}."""
    proc = tmp / "proc"
    (proc / "123").mkdir(parents=True)
    (proc / "123" / "maps").write_text(maps)
    (proc / "123" / "smaps").write_text(smaps)
    with open(proc / "123" / "pagemap", "wb") as f:
        for vpn, ent in pages.items():
            f.seek(vpn * 8)
            f.write(struct.pack("<Q", ent))
    with open(proc / "kpageflags", "wb") as f:
        f.truncate(8 * (max(flags, default=0) + 8192))
        for pfn, fl in flags.items():
            f.seek(pfn * 8)
            f.write(struct.pack("<Q", fl))
    return proc


FAKE_MAPS = (
    "00400000-0040a000 r-xp 00000000 fe:00 12   /bin/prog\n"  # pages 1024-1033
    "0040a000-0040c000 rw-p 0000a000 fe:00 12   /bin/prog\n"  # pages 1034-1035
    "00600000-00a02000 rw-p 00000000 00:00 0 \n"  # pages 1536-2561 (anonymous)
    "00b00000-00b01000 ---p 00000000 00:00 0 \n"  # page 2816: no access, skipped
    "00c00000-00c01000 r--p 00000000 00:00 0    [vvar]\n"  # page 3072: skipped
)
FAKE_SMAPS = (
    "00600000-00a02000 rw-p 00000000 00:00 0 \nRss:                4100 kB\nAnonHugePages:      2048 kB\n"
)


def _fake_pages() -> tuple[dict[int, int], dict[int, int]]:
    P = PM_PRESENT
    pages = {1024: P | 100, 1025: P | 101, 1026: P | 102, 1027: P | 103}  # one range of 4
    pages |= {1029: P | 104, 1030: P | 105}  # 1028 absent: a new range of 2
    pages |= {1031: P | 200, 1032: P | 201, 1033: PM_SWAPPED | 77}  # a range of 2; 1033 swapped
    pages |= {1034: P | 202, 1035: P | 203}  # frames continue 201, but another VMA: a range of 2
    pages |= {1536 + i: P | (4096 + i) for i in range(1024)}  # 1024 consecutive: a THP + 512 pages
    pages |= {2560: P | 50}  # the zero page
    pages |= {2816: P | 300, 3072: P | 301}  # in skipped VMAs
    flags = {4096: HEAD | THP} | {4096 + i: TAIL | THP for i in range(1, 512)} | {50: 1 << KPF_ZERO_PAGE}
    return pages, flags


def test_sample_of_a_fake_process_hand_computed(tmp_path):
    pages, flags = _fake_pages()
    proc = _fake_proc(tmp_path, pages, flags, FAKE_MAPS, FAKE_SMAPS)
    s = sample(123, proc=proc)
    assert sorted(s.sizes.tolist()) == [2, 2, 2, 4, 1024]
    assert s.zero_pages == 1
    assert s.vmas == 3
    assert s.per_vma_present == {0x400000: 8, 0x40A000: 2, 0x600000: 1024}
    st = s.stats()
    assert st["present_pages"] == 1034
    assert st["footprint_bytes"] == 1034 * 4096
    assert (st["entries_4k"], st["entries_2m"], st["entries_with_huge_pages"]) == (522, 1, 523)
    assert st["pmd_mapped_pages_smaps"] == 512
    assert st["ranges"] == 5
    assert st["ranges_to_cover_99pct"] == 1  # 1024 of 1034 pages is 99.03%
    assert st["largest_range_pct"] == pytest.approx(100 * 1024 / 1034)
    assert st["range_pages"] == {"median": 2, "average": pytest.approx(206.8), "max": 1024}
    assert (st["threshold_ranges"], st["threshold_range_pages"]["median"]) == (1, 1024)
    assert st["range_size_histogram"] == [[2, 3], [4, 1], [1024, 1]]
    # ideal ranges, frames ignored: 1024-1027, 1029-1032 (1033 swapped), 1034-1035, 1536-2559
    assert st["ideal"] == {
        "ranges": 4,
        "ranges_to_cover_99pct": 1,
        "largest_range_pct": pytest.approx(100 * 1024 / 1034),
    }
    assert sorted(s.virtual_sizes.tolist()) == [2, 4, 4, 1024]
    # anonymous VMAs only: the 1024-page range
    assert st["anonymous"]["present_pages"] == 1024 and st["anonymous"]["ranges"] == 1
    assert range_stats(s.sizes, cover=0.995)["ranges_to_cover_99.5pct"] == 3  # 1029 pages: 1024+4+2


def test_zeroed_frame_numbers_say_root_is_needed(tmp_path):
    pages = {1024: PM_PRESENT, 1025: PM_PRESENT}  # present, frame numbers hidden
    proc = _fake_proc(tmp_path, pages, {}, FAKE_MAPS)
    with pytest.raises(ContiguityError, match=r"every frame number is zero: .*needs root"):
        sample(123, proc=proc)


def test_missing_process(tmp_path):
    with pytest.raises(ContiguityError, match="no process with id 99"):
        sample(99, proc=tmp_path)


def test_read_smaps(tmp_path):
    proc = _fake_proc(tmp_path, {}, {}, FAKE_MAPS, FAKE_SMAPS)
    assert read_smaps(123, proc) == {0x600000: {"Rss": 4100, "AnonHugePages": 2048}}


# --- real processes --------------------------------------------------------------------------

CHILD = textwrap.dedent(
    """
    import ctypes, mmap, sys
    n = int(sys.argv[1]) << 20
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if sys.argv[2] == "huge":
        m.madvise(mmap.MADV_HUGEPAGE)
    for i in range(0, n, 4096):
        m[i] = 1
    print(hex(ctypes.addressof(ctypes.c_char.from_buffer(m))), flush=True)
    sys.stdin.read()
    """
)


def _thp_mode() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "never"
    return re.search(r"\[(\w+)\]", text).group(1)  # type: ignore[union-attr]


def _pagemap_count(pid: int, start: int, end: int) -> int:
    """Present pages of [start, end) counted one entry at a time (independent of the module)."""
    n = 0
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(start // 4096 * 8)
        data = f.read((end - start) // 4096 * 8)
    for (ent,) in struct.iter_unpack("<Q", data):
        n += ent >> 63
    return n


@needs_root
@pytest.mark.parametrize("mode", ["huge", "plain"])
def test_real_process_invariants(tmp_path, mode):
    mib = 192
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(mib), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        addr = int(child.stdout.readline(), 16)
        time.sleep(0.2)
        for _ in range(5):  # the child is idle; retry only if something moved between the reads
            s = sample(child.pid)
            sm = read_smaps(child.pid)
            s2 = sample(child.pid)
            if s.per_vma_present == s2.per_vma_present:
                break
        # present pages per VMA are smaps' Rss (zero-page mappings are in neither)
        assert s.per_vma_present == {a: sm[a]["Rss"] // 4 for a in s.per_vma_present}
        # the ranges partition the present pages
        assert int(s.sizes.sum()) == s.present_pages == sum(s.per_vma_present.values())
        assert s.sizes.min() >= 1
        # the mapping is fully touched: every page present, counted independently
        assert s.per_vma_present[addr] == mib * 256 == _pagemap_count(child.pid, addr, addr + (mib << 20))
        # huge pages from kpageflags agree with smaps' PMD-mapped memory
        pmd_pages = sum(v.get("AnonHugePages", 0) for v in sm.values()) // 4
        assert s.huge[512] * 512 == pmd_pages
        if mode == "huge" and _thp_mode() != "never" and pmd_pages:
            assert sm[addr]["AnonHugePages"] > 0
            # every THP lies in a range of at least 512 pages
            assert int(s.sizes[s.sizes >= 512].sum()) >= pmd_pages
            assert s.stats()["range_pages"]["max"] >= 512
        if mode == "plain" and _thp_mode() == "madvise":
            assert sm[addr].get("AnonHugePages", 0) == 0  # no THP without MADV_HUGEPAGE
    finally:
        child.stdin.close()  # type: ignore[union-attr]
        child.stdout.close()  # type: ignore[union-attr]
        child.wait()


# --- the command line ------------------------------------------------------------------------


def _xlat(*args: str, user: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run(
        [sys.executable, "-m", "xlat", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _one_sentence(r: subprocess.CompletedProcess[str], status: int, pattern: str) -> None:
    assert r.returncode == status, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert re.search(pattern, lines[-1]), lines


def test_cli_bad_input(capsys):
    # one run as a separate process: the message and status reach the shell, no traceback
    _one_sentence(_xlat("contiguity", "--pid", "999999999"), 1, r"^xlat: error: no process with id 999999999")

    def run(*args: str) -> tuple[int, str]:
        try:
            rc = main(["contiguity", *args])
        except SystemExit as e:  # argparse's usage errors
            rc = int(e.code or 0)
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) >= 1 and "Traceback" not in err[-1]
        return rc, err[-1]

    rc, msg = run("--interval", "-1", "--pid", "1")
    assert rc == 2 and msg.endswith("argument --interval: must be a positive number of seconds, not -1")
    rc, msg = run("--samples", "0", "--pid", "1")
    assert rc == 2 and msg.endswith("argument --samples: must be at least 1, not 0")
    assert run("--", "/no/such/program") == (
        1,
        "xlat: error: cannot start /no/such/program: No such file or directory",
    )
    assert run("no-such-trace.xlat") == (
        1,
        "xlat: error: no-such-trace.xlat: No such file or directory (os error 2)",
    )
    assert run("--pid", "1", "trace.xlat") == (1, "xlat: error: give either --pid or a TRACE, not both")
    assert run() == (1, "xlat: error: nothing to measure: give --pid PID or -- PROGRAM ARGS")
    assert run("--pid", "1", "--", "true") == (
        1,
        "xlat: error: give either --pid PID or -- PROGRAM, not both",
    )
    assert run("--") == (1, "xlat: error: no program given after --")
    rc, msg = run("--interval", "5", "--", "true")
    assert (rc, msg) == (
        1,
        "xlat: error: true exited (status 0) before the first sample at 5.0 s; use a shorter --interval",
    )


@needs_root
def test_cli_without_root_says_root_is_needed(tmp_path):
    # Drop to nobody after the imports (the interpreter may live where nobody cannot read), then
    # scan a child of our own: the kernel shows its pages present with frame numbers zeroed.
    script = textwrap.dedent(
        """
        import os, sys
        from xlat.cli import build_parser, main
        build_parser()  # imports every command while the files are readable ...
        import xlat.contiguity  # ... and what the command imports when it runs (numpy)
        os.setgid(65534); os.setuid(65534)
        sys.exit(main(["contiguity", "--interval", "0.5", "--", "/bin/sleep", "2"]))
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    _one_sentence(r, 1, r"^xlat: error: .*every frame number is zero: reading physical frames needs root")


@needs_root
def test_cli_runs_a_program_and_reports(tmp_path, capsys):
    prog = [sys.executable, "-c", "import time; b = bytearray(64 << 20); print('hello'); time.sleep(1.5)"]
    png = tmp_path / "c.png"
    pytest.importorskip("matplotlib")
    rc = main(["contiguity", "--interval", "0.4", "--json", "--plot", str(png), "--", *prog])
    assert rc == 0
    out = result(capsys.readouterr().out)  # the program's "hello" went to stderr
    assert out["program"] == prog and out["exit_status"] == 0
    assert len(out["samples"]) >= 2
    last = out["samples"][-1]
    assert last["present_pages"] >= 64 * 256  # the bytearray is zeroed, so written
    assert last["ranges"] <= last["present_pages"]
    assert png.stat().st_size > 1000


@needs_root
def test_cli_pid_text_report(capsys):
    child = subprocess.Popen(["/bin/sleep", "30"])
    try:
        time.sleep(0.2)
        assert main(["contiguity", "--pid", str(child.pid), "--samples", "2", "--interval", "0.1"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("2 sample")
        assert re.search(r"^ranges mapping 99%\s+\d+$", out, re.M)
        assert re.search(r"^translation entries, 4KB \+ 2MB\s+\d+ \+ \d+ = \d+", out, re.M)
    finally:
        child.kill()
        child.wait()


@needs_root
def test_monitor_survives_a_program_exiting_during_a_scan():
    # Scans every 10 ms of programs that end quickly: some scan meets the exit (maps read, pagemap
    # gone: ESRCH); the scans that do complete are kept, and the exit status comes back.
    from xlat.contiguity import monitor

    for _ in range(5):
        samples, rc = monitor([sys.executable, "-c", "b = bytearray(16 << 20); b = None"], interval=0.01)
        assert rc == 0
        assert all(s.present_pages > 0 for s in samples)


def test_cli_simulated_trace_demand_thp_against_eager(capsys, tmp_path):
    # A gups over 256 MiB simulated to the end: demand paging with THP forms about a range per
    # 2MB page (128 of them; two neighbours join when the buddy hands out adjacent blocks),
    # eager paging one for the table (and one for the small heap); both map the whole table.
    trace = "workload:gups?size=256MiB&accesses=200000"
    assert main(["contiguity", "--json", "--plot", str(tmp_path / "c.png"), trace]) == 0
    rows = {r["design"]: r for r in results(capsys.readouterr().out)}
    thp, eager = rows["demand+THP"], rows["eager"]
    assert thp["contiguity.median_pages"] == 512 and 100 <= thp["contiguity.ranges"] <= 128
    assert eager["contiguity.ranges_for_99"] <= 2 and eager["contiguity.coverage"] > 0.99
    assert eager["contiguity.pages"] >= 65536 and thp["contiguity.pages"] >= 65536
    assert (tmp_path / "c.png").stat().st_size > 0
    assert main(["contiguity", trace]) == 0
    text = capsys.readouterr().out
    assert "demand+THP" in text and "runs for 99% of memory" in text


def test_cli_simulated_trace_every_n_instructions(capsys):
    # The same gups measured every 50,000 instructions as well as at the end: the table is
    # mapped when the run starts (gups initialises it), so every interval sees the end's memory.
    trace = "workload:gups?size=256MiB&accesses=200000"
    assert main(["contiguity", "--json", "--every", "50000", trace]) == 0
    out = {r["design"]: r for r in results(capsys.readouterr().out)}
    assert {r["every_instructions"] for r in out.values()} == {50000}
    end = out
    for design, rows in ((d, r["series"]) for d, r in out.items()):
        assert len(rows) >= 2
        assert [r["at"] for r in rows] == [50000 * (i + 1) for i in range(len(rows))]
        last = rows[-1]
        assert last["pages"] == end[design]["contiguity.pages"]
        assert last["runs_99"] == end[design]["contiguity.ranges_for_99"]
        assert last["ranges"] == end[design]["contiguity.ranges"]
    assert out["eager"]["series"][-1]["runs_99"] <= 2
    assert main(["contiguity", "--every", "50000", trace]) == 0
    text = capsys.readouterr().out
    assert "eager: every 50000 instructions" in text and "runs for 99%" in text


def test_cli_every_is_for_traces_only(capsys):
    assert main(["contiguity", "--every", "1000", "--pid", "1"]) != 0
    assert "--every applies to a simulated TRACE" in capsys.readouterr().err
