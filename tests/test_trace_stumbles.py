"""xlat trace's stumbles of issue 24: programs run with execve are not traced, and it says so
(item 14); --timeout stops a tracee that never exits (item 16); --json [FILE] (item 8)."""

import json
import os
import shutil
import time

import pytest
from conftest import run_xlat

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("qemu-x86_64", "gcc", "sh")),
    reason="needs qemu-x86_64 (apt-get install qemu-user) and gcc (scripts/setup.sh installs them)",
)


def test_exec_is_warned_and_leaves_no_empty_trace(tmp_path):
    # sh forks a child that execs ls: the child records nothing, ls runs outside QEMU
    p = run_xlat(
        "trace", "--no-progress", "-o", "sh.xlat", "--", "sh", "-c", "ls / >/dev/null; true", cwd=tmp_path
    )
    assert "nan" not in p.stderr, p.stderr
    assert "nothing recorded before it ran another program; no trace written" in p.stderr
    assert "xlat: warning:" in p.stderr and "execve" in p.stderr and "not traced" in p.stderr
    assert sorted(os.listdir(tmp_path)) == ["sh.xlat"]  # no empty sh.<pid>.xlat


def test_tracing_gcc_warns_that_cc1_and_as_are_not_traced(tmp_path):
    (tmp_path / "x.c").write_text("int f(int x) { return x * 3; }\n")
    p = run_xlat(
        "trace", "--no-progress", "--json", "s.json", "-o", "gcc.xlat", "--", "gcc", "-c", "x.c", cwd=tmp_path
    )
    assert (tmp_path / "x.o").is_file()  # gcc itself worked
    assert "xlat: warning:" in p.stderr and "not traced" in p.stderr, p.stderr
    s = json.loads((tmp_path / "s.json").read_text())
    root, *children = s["processes"]
    assert root["exited"] is True and root["accesses"] > 0
    assert len(children) >= 2  # cc1 and as, each forked then exec'd
    assert all(c["exited"] is False and c["path"] is None for c in children)
    assert "nan" not in p.stderr


def test_timeout_stops_a_tracee_that_never_exits_and_keeps_its_trace(tmp_path):
    t = time.monotonic()
    p = run_xlat(
        "trace",
        "--no-progress",
        "--timeout",
        "2",
        "-o",
        "s.xlat",
        "--",
        "sleep",
        "600",
        cwd=tmp_path,
        check=False,
    )
    took = time.monotonic() - t
    assert p.returncode == 124, (p.returncode, p.stderr)
    assert took < 60
    errs = [line for line in p.stderr.splitlines() if line.startswith("xlat: error:")]
    assert len(errs) == 1 and "still running after --timeout 2 s" in errs[0] and "s.xlat" in errs[0]
    info = json.loads(run_xlat("trace-info", "s.xlat", "--json", cwd=tmp_path).stdout)
    assert info["info"]["accesses"] > 0  # the dynamic loader and libc ran before the sleep
    assert "xlat: warning:" not in p.stderr  # killed by us: not an exec


def test_timeout_is_not_reached_by_a_short_program(tmp_path):
    p = run_xlat(
        "trace", "--no-progress", "--timeout", "60", "--json", "-", "-o", "t.xlat", "--", "true", cwd=tmp_path
    )
    s = json.loads(p.stdout)
    assert s["timed_out"] is False and s["status"] == 0


def test_bad_timeout_is_one_sentence(tmp_path):
    p = run_xlat("trace", "--timeout", "0", "-o", "t.xlat", "--", "true", cwd=tmp_path, check=False)
    assert p.returncode == 1
    assert p.stderr.strip() == "xlat: error: --timeout must be a positive number of seconds, not 0.0"
