"""The trace format, workloads and CLI, exercised end to end through the installed package."""

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import xlat
from conftest import result, results, run_xlat
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GUPS_SMALL = "workload:gups?size=64MiB&accesses=20000&seed=3"


def one_sentence_error(p: subprocess.CompletedProcess, *needles: str) -> None:
    """A user error: exit status 1, one line on stderr starting 'xlat: error:', no traceback.
    (A long command's heartbeat lines may come first, 'xlat: MESSAGE' and 'xlat: ... still
    running after ...' when it runs past 3 s, as on a loaded machine: they are not errors.)"""
    assert p.returncode == 1, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    while len(lines) > 1 and lines[0].startswith("xlat: ") and not lines[0].startswith("xlat: error"):
        lines = lines[1:]
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("xlat: error: "), p.stderr
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture(scope="module")
def small_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("t") / "gups.xlat"
    run_xlat("convert", GUPS_SMALL, str(path))
    return path


def test_empty_trace(tmp_path):
    f = tmp_path / "empty.xlat"
    f.write_bytes(b"")
    one_sentence_error(run_xlat("trace-info", str(f), check=False), "empty")


def test_not_a_trace(tmp_path):
    f = tmp_path / "junk.xlat"
    f.write_bytes(b"this is not a trace at all\n" * 10)
    one_sentence_error(run_xlat("trace-info", str(f), check=False), "not an xlat trace")


def test_wrong_version(tmp_path, small_trace):
    data = bytearray(small_trace.read_bytes())
    data[8:10] = (7).to_bytes(2, "little")
    f = tmp_path / "v7.xlat"
    f.write_bytes(bytes(data))
    one_sentence_error(run_xlat("trace-info", str(f), check=False), "version 7.2")
    # A newer minor version may hold records this xlat cannot skip.
    data[8:12] = (1).to_bytes(2, "little") + (3).to_bytes(2, "little")
    f.write_bytes(bytes(data))
    one_sentence_error(run_xlat("trace-info", str(f), check=False), "version 1.3", "1.0 to 1.2")


def test_both_format_versions_read_back_the_same(tmp_path):
    """1.1 (repeat records) and 1.0 (none) hold the same accesses; the stream triad is periodic,
    so 1.1 stores it in a fraction of the columns (its decode is what `make bench` measures)."""
    spec = "workload:stream?size=64MiB&accesses=300000"
    got = {}
    for v in ["1.1", "1.0"]:
        out = tmp_path / f"s{v}.xlat"
        r = result(run_xlat("convert", spec, str(out), "--format-version", v, "--json").stdout)
        assert r["accesses"] == 300000
        assert out.read_bytes()[10:12] == int(v[-1]).to_bytes(2, "little")
        got[v] = xlat.read_accesses(str(out))
    for col in ["addr", "icount", "tid", "size", "kind"]:
        np.testing.assert_array_equal(got["1.1"][col], got["1.0"][col])
    assert got["1.1"].side == got["1.0"].side
    np.testing.assert_array_equal(got["1.1"]["addr"], xlat.read_accesses(spec)["addr"])
    bad = run_xlat("convert", spec, str(tmp_path / "x.xlat"), "--format-version", "2.0", check=False)
    assert bad.returncode == 2 and "--format-version: invalid choice: '2.0'" in bad.stderr
    with pytest.raises(ValueError, match="format_version"):
        xlat.convert(spec, str(tmp_path / "x.xlat"), format_version="1.3")


@pytest.mark.parametrize("keep", [0.3, 0.7, 0.999])
def test_truncated_trace(tmp_path, small_trace, keep):
    data = small_trace.read_bytes()
    f = tmp_path / "cut.xlat"
    f.write_bytes(data[: int(len(data) * keep)])
    one_sentence_error(run_xlat("trace-info", str(f), check=False), "truncated")


def test_corrupt_trace(tmp_path, small_trace):
    data = bytearray(small_trace.read_bytes())
    mid = len(data) // 2
    data[mid] ^= 0x40
    f = tmp_path / "flip.xlat"
    f.write_bytes(bytes(data))
    one_sentence_error(run_xlat("trace-info", str(f), check=False), "corrupt")


def test_missing_file_and_bad_workload():
    one_sentence_error(run_xlat("trace-info", "/nonexistent/x.xlat", check=False), "/nonexistent/x.xlat")
    one_sentence_error(run_xlat("trace-info", "workload:gups?size=big", check=False), "size=big")
    one_sentence_error(run_xlat("sim", "workload:nosuch", check=False), "no workload named 'nosuch'")


def test_convert_refuses_bad_level(tmp_path):
    one_sentence_error(
        run_xlat("convert", GUPS_SMALL, str(tmp_path / "x.xlat"), "--level", "40", check=False), "level"
    )


def test_workloads_are_byte_identical_per_seed(tmp_path):
    for name, extra in [
        ("gups", "size=1GiB"),
        ("chase", "size=1GiB"),
        ("zipf", "size=1GiB"),
        ("bfs", "scale=12"),
    ]:
        a, b, c = (tmp_path / f"{name}{i}.xlat" for i in range(3))
        run_xlat("convert", f"workload:{name}?{extra}&accesses=50000&seed=9", str(a))
        run_xlat("convert", f"workload:{name}?{extra}&accesses=50000&seed=9", str(b))
        run_xlat("convert", f"workload:{name}?{extra}&accesses=50000&seed=10", str(c))
        assert a.read_bytes() == b.read_bytes(), name
        assert a.read_bytes() != c.read_bytes(), name


def test_64gib_footprint_without_64gib_of_memory():
    code = (
        "import json, xlat\n"
        "r = xlat.trace_info('workload:gups?size=64GiB&accesses=1000000&seed=1')\n"
        "peak = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "print(json.dumps({'info': r['info'], 'peak_kib': peak}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    r = json.loads(out)
    info = r["info"]
    # One malloc(64 GiB): glibc maps the request plus its 16-byte header, rounded up to a page;
    # besides it, the heap holds glibc's initial 132 KiB arena (brk).
    assert info["mapped_bytes"] == (64 << 30) + 4096 + 0x21000
    assert info["accesses"] == 1_000_000
    assert info["loads"] == info["stores"] == 500_000
    # 500,000 random words over 16 Mi pages: nearly every update touches a new page.
    assert 490_000 <= info["touched_4k_pages"] <= 500_000
    # The table starts 16 bytes into a page-aligned mapping, not at a 1 GiB boundary: it spans 65.
    assert info["touched_1g_regions"] == 65
    # VmHWM, not ru_maxrss: ru_maxrss also counts the pytest process's pages the child held between
    # fork and exec, which made this fail whenever the test session had grown past 512 MiB.
    assert r["peak_kib"] < 512 * 1024, "reading a 64 GiB workload must not need GiBs of memory"


def test_trace_info_threads_line_is_a_count(tmp_path):
    """`threads` gives how many threads there are; the accesses of each are on their own line."""
    lines = ["#xlat-text 1", '#header {"producer":"x"}']
    lines += [f"A 1 {i} L {0x1000 + 8 * i:#x} 8" for i in range(3000)]
    lines += [f"A 7 {i} S {0x9000 + 8 * i:#x} 8" for i in range(1000)]
    f = tmp_path / "two-threads.txt"
    f.write_text("\n".join(lines) + "\n")
    out = run_xlat("trace-info", str(f)).stdout
    rows = dict(line.split("  ", 1) for line in out.splitlines())
    assert rows["threads"].strip() == "2"
    assert rows["accesses by thread"].strip() == "tid 1: 3,000, tid 7: 1,000"


def test_trace_info_counts_match_python_api(small_trace):
    r = result(run_xlat("trace-info", str(small_trace), "--json").stdout)
    acc = xlat.read_accesses(str(small_trace))
    assert r["info"]["accesses"] == len(acc["addr"]) == 20000
    assert r["footer"]["accesses"] == 20000
    assert r["info"]["stores"] == int((acc["kind"] == 1).sum())
    pages = np.unique(acc["addr"] >> 12)
    assert r["info"]["touched_4k_pages"] == len(pages)
    assert r["info"]["syscalls"] == {"brk": 2, "mmap": 1, "exit": 1}
    assert r["file_bytes"] == os.path.getsize(small_trace)


def test_trace_info_counts_instructions_as_the_simulator(tmp_path):
    """Per thread from its first access to its last, both included; side events do not count
    (as the early syscalls of a trace recorded with --skip, at small instruction counts)."""
    base = 0x7FFFF7900000
    lines = [
        "#xlat-text 1",
        '#header {"producer":"x"}',
        f"S 1 150 mmap 0x0 0x100000 0x3 0x22 0xffffffffffffffff 0x0 {base}",
        "M 3 20 phase 1 roi",
    ]
    ic, first = {1: 1_000_000, 2: 5_000_000}, {}
    for k in range(3000):
        tid = 1 + k % 2
        ic[tid] += k % 5
        first.setdefault(tid, ic[tid])
        lines.append(f"A {tid} {ic[tid]} {'LSI'[k % 3]} {base + 64 * (k % 4096):#x} 8")
    lines.append(f"S 1 {ic[1] + 100} exit 0x0 0")
    f = tmp_path / "threads.txt"
    f.write_text("\n".join(lines) + "\n")
    info = result(run_xlat("trace-info", str(f), "--json").stdout)["info"]
    want = sum(ic[t] - first[t] + 1 for t in (1, 2))
    assert info["instructions"] == want
    assert info["threads"]["3"] == {
        "accesses": 0,
        "side_events": 1,
        "first_icount": None,
        "last_icount": None,
        "instructions": 0,
    }
    assert xlat.simulate(str(f)).counters["instructions"] == want


def test_numpy_columns_and_events(small_trace):
    acc = xlat.read_accesses(str(small_trace), limit=1000)
    assert {k: v.dtype.name for k, v in acc.items() if k != "side"} == {
        "addr": "uint64",
        "icount": "uint64",
        "tid": "uint32",
        "size": "uint16",
        "kind": "uint8",
    }
    assert len(acc["addr"]) == 1000
    # gups: load then store of the same word.
    assert (acc["addr"][0::2] == acc["addr"][1::2]).all()
    assert (acc["kind"][0::2] == 0).all() and (acc["kind"][1::2] == 1).all()
    assert (np.diff(acc["icount"].astype(np.int64)) >= 0).all()
    t = xlat.open(str(small_trace))
    evs = list(t.events())
    assert [e.name for e in evs if e.type == "syscall"] == ["brk", "brk", "mmap", "exit"]
    mmap = next(e for e in evs if e.name == "mmap")
    table = mmap.ret
    accesses = [e for e in evs if e.type == "access"]
    assert len(accesses) == 20000
    assert all(table <= e.addr < table + mmap.args[1] for e in accesses)
    assert t.footer["accesses"] == 20000


def test_batches_stream(small_trace):
    t = xlat.open(str(small_trace))
    n = sum(len(b["addr"]) for b in t.batches())
    assert n == 20000


def test_text_round_trip_through_cli(tmp_path, small_trace):
    txt, back, txt2 = tmp_path / "a.txt", tmp_path / "b.xlat", tmp_path / "c.txt"
    run_xlat("convert", str(small_trace), str(txt))
    lines = txt.read_text().splitlines()
    assert lines[0] == "#xlat-text 3" and lines[1].startswith("#header {")
    assert lines[-1].startswith('#end {"accesses":20000,"side_events":')
    assert lines[2].startswith("S 1 ") and " brk " in lines[2]
    run_xlat("convert", str(txt), str(back))
    run_xlat("convert", str(back), str(txt2))
    assert txt.read_text() == txt2.read_text()


event_line = st.one_of(
    st.tuples(
        st.sampled_from(["L", "S", "I"]),
        st.integers(0, 2**64 - 1),
        st.sampled_from([1, 2, 4, 8, 16, 64, 3, 4096]),
    ).map(lambda t: ("A", t)),
    st.tuples(
        st.sampled_from(["mmap", "munmap", "brk", "mremap", "madvise", "shmat", "shmdt", "exit"]),
        st.lists(st.integers(0, 2**64 - 1), min_size=6, max_size=6),
        st.integers(-(2**63), 2**63 - 1),
    ).map(lambda t: ("S", t)),
    st.one_of(
        st.integers(0, 2**32 - 1).map(lambda a: f"ctx {a}"),
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1)).map(
            lambda t: f"ipc-send {t[0]} {t[1]}"
        ),
        st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1)).map(
            lambda t: f"ipc-recv {t[0]} {t[1]}"
        ),
        st.tuples(st.integers(0, 2**32 - 1), st.from_regex(r"[a-z]{1,8}", fullmatch=True)).map(
            lambda t: f"phase {t[0]} {t[1]}"
        ),
    ).map(lambda m: ("M", m)),
)
NARGS = {"mmap": 6, "munmap": 2, "brk": 1, "mremap": 5, "madvise": 3, "shmat": 4, "shmdt": 1, "exit": 1}


def _hex(v: int) -> str:
    """A signed number as text version 3 writes it: 0x.., -0x.."""
    return f"-{-v:#x}" if v < 0 else f"{v:#x}"


def render(events) -> str:
    header = '{"format":"xlat-trace","producer":"hypothesis","command":["x"],"page_size_hint":4096,"threads":[1],"metadata":{"k":1}}'
    out = ["#xlat-text 1", "#header " + header]
    icount = {}
    for i, (tag, body) in enumerate(events):
        tid = 1 + i % 3 if i % 5 == 0 else 1
        icount[tid] = icount.get(tid, 0) + i % 4
        if tag == "A":
            kind, addr, size = body
            out.append(f"A {tid} {icount[tid]} {kind} {addr:#x} {size}")
        elif tag == "S":
            name, args, ret = body
            out.append(
                f"S {tid} {i * 7} {name} "
                + " ".join(f"{a:#x}" for a in args[: NARGS[name]])
                + f" {_hex(ret)}"
            )
        else:
            out.append(f"M {tid} {i * 3} {body}")
    return "\n".join(out) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(event_line, max_size=300))
def test_every_event_kind_round_trips(tmp_path, events):
    """Text -> compressed format -> text is the identity, for random mixes of every event kind
    (written as text version 3: the first line names it, the last holds the totals; syscall
    results in hex, as their arguments)."""
    src = tmp_path / "in.txt"
    src.write_text(render(events))
    xlat.convert(str(src), str(tmp_path / "mid.xlat"))
    xlat.convert(str(tmp_path / "mid.xlat"), str(tmp_path / "out.txt"))
    out, want = (tmp_path / "out.txt").read_text().splitlines(), src.read_text().splitlines()
    assert out[0] == "#xlat-text 3" and out[1:-1] == want[1:]
    n = sum(tag == "A" for tag, _ in events)
    assert out[-1].startswith(f'#end {{"accesses":{n},"side_events":{len(events) - n},')


def test_bad_text_line_names_the_line(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text('#xlat-text 1\n#header {"producer":"x"}\nA 1 0 L 0x10 8\nA 1 1 Q 0x10 8\n')
    one_sentence_error(run_xlat("convert", str(f), str(tmp_path / "o.xlat"), check=False), "line 4", "'Q'")
    assert not (tmp_path / "o.xlat").exists() and not (tmp_path / "o.xlat.partial").exists()


def test_long_calls_release_the_gil():
    """While Rust reads a large workload, other Python threads keep running."""
    done = threading.Event()
    result = {}

    def work():
        t0 = time.perf_counter()
        result["info"] = xlat.trace_info("workload:gups?size=8GiB&accesses=6000000")
        result["secs"] = time.perf_counter() - t0
        done.set()

    th = threading.Thread(target=work)
    last, max_gap = time.perf_counter(), 0.0
    th.start()
    while not done.is_set():
        now = time.perf_counter()
        max_gap = max(max_gap, now - last)
        last = now
        time.sleep(0.001)
    th.join()
    assert result["info"]["info"]["accesses"] == 6_000_000
    # Holding the GIL would stall this loop for the whole call.
    assert max_gap < 0.5 * result["secs"], (max_gap, result["secs"])


def test_workloads_listing(xlat_cli):
    ws = results(xlat_cli("workloads", "--json").stdout)
    assert [w["name"] for w in ws] == ["gups", "chase", "stream", "stride", "zipf", "bfs", "clientserver"]
    for w in ws:
        names = [p["name"] for p in w["params"]]
        assert "accesses" in names and "seed" in names
    assert "bfs" in xlat_cli("workloads").stdout


def test_help_explains_each_subcommand(xlat_cli):
    top = xlat_cli("--help").stdout
    for cmd in ["workloads", "trace-info", "convert", "sim", "demo"]:
        assert cmd in top
        assert len(xlat_cli(cmd, "--help").stdout) > 200


def test_sim_reads_the_trace_file(tmp_path, small_trace):
    out = tmp_path / "r.json"
    p = run_xlat("sim", str(small_trace), "--json", str(out))
    assert "accesses" in p.stdout
    r = result(out.read_text())
    assert r["counters"]["accesses"] == 20000
    assert r["trace"] == str(small_trace)


def test_every_pass_reads_the_whole_trace_and_threads_may_share_it(small_trace):
    # Issue 38, item 4: a second pass returned nothing, and threads sharing a Trace got
    # "Already borrowed" but one, which read part of the trace.
    t = xlat.open(str(small_trace))
    first = [b["addr"].copy() for b in t.batches()]
    again = [b["addr"] for b in t.batches()]
    assert sum(map(len, again)) == 20000 and len(first) == len(again)
    assert all((a == b).all() for a, b in zip(first, again, strict=True))
    assert sum(1 for e in t.events() if e.type == "access") == 20000
    assert t.footer["accesses"] == 20000
    # A pass left half-way does not shorten the next one.
    it = t.batches()
    next(it)
    assert sum(len(b["addr"]) for b in t.batches()) == 20000
    # Threads sharing one Trace each read all of it (a workload of many batches).
    w = xlat.open("workload:stream?size=64MiB&accesses=1000000")

    def count(_: int) -> tuple[int, int]:
        bs = list(w.batches())
        return len(bs), sum(len(b["addr"]) for b in bs)

    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(count, range(4)))
    assert got[0][0] > 4 and got == [got[0]] * 4 and got[0][1] == 1_000_000


def test_a_write_that_fails_names_the_file(tmp_path):
    # Issue 38, item 10: convert's disk-full error said only "I/O error: No space left on
    # device". A file-size limit fails the writes the same way (EFBIG instead of ENOSPC).
    import resource
    import signal

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    out = tmp_path / "g.xlat"
    p = subprocess.run(
        [sys.executable, "-m", "xlat", "convert", "workload:gups?size=16MiB&accesses=200000", str(out)],
        capture_output=True,
        text=True,
        preexec_fn=limit,
    )
    one_sentence_error(p, f"{out}.partial: File too large")
    assert not out.exists() and not (tmp_path / "g.xlat.partial").exists()
