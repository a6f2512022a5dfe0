"""xlat trace's stumbles of issue 24: programs run with execve are traced too, each to its own
file with --follow-exec, and without it a warning says they are not (item 14); --timeout stops a tracee that never exits (item 16); --json [FILE] (item 8)."""

import os
import shutil
import time

import pytest
from conftest import result, run_xlat

pytestmark = pytest.mark.skipif(
    any(shutil.which(t) is None for t in ("qemu-x86_64", "gcc", "sh")),
    reason="needs qemu-x86_64 (apt-get install qemu-user) and gcc (scripts/setup.sh installs them)",
)


def _traces(d) -> dict[str, dict]:
    """trace-info of every trace in ``d``, by file name."""
    return {
        f: result(run_xlat("trace-info", f, "--json", cwd=d).stdout)
        for f in sorted(os.listdir(d))
        if f.endswith(".xlat")
    }


def test_by_default_exec_is_warned_and_leaves_no_empty_trace(tmp_path):
    # sh forks a child that execs ls: the child records nothing, ls runs outside QEMU
    argv = [
        "trace",
        "--no-progress",
        "-o",
        "sh.xlat",
        "--",
        "sh",
        "-c",
        "ls / >/dev/null; true",
    ]
    p = run_xlat(*argv, cwd=tmp_path)
    assert "nan" not in p.stderr, p.stderr
    assert "nothing recorded before it ran another program; no trace written" in p.stderr
    assert "xlat: warning:" in p.stderr and "execve" in p.stderr and "not traced" in p.stderr
    assert sorted(os.listdir(tmp_path)) == ["sh.xlat"]  # no empty sh.<pid>.xlat


def test_exec_d_programs_are_traced_each_to_its_own_file(tmp_path):
    p = run_xlat(
        "trace",
        "--no-progress",
        "--follow-exec",
        "--json",
        "s.json",
        "-o",
        "sh.xlat",
        "--",
        "sh",
        "-c",
        "ls / >/dev/null; true",
        cwd=tmp_path,
    )
    assert "xlat: warning:" not in p.stderr and "nan" not in p.stderr, p.stderr
    s = result((tmp_path / "s.json").read_text())
    sh, *rest = s["processes"]
    assert sh["path"] == "sh.xlat" and sh["exited"] is True
    # the forked child: nothing before its exec (no file), then ls under QEMU, same pid
    pre, ls = rest
    assert pre["path"] is None and pre["exited"] is False
    assert ls["pid"] == pre["pid"] and ls["exited"] is True
    # the first free name of the pid (the recorder names the two connections in whichever order
    # their threads get there; the empty one is then removed)
    assert ls["path"] in (f"sh.{ls['pid']}.xlat", f"sh.{ls['pid']}.1.xlat")
    traces = _traces(tmp_path)
    assert sorted(traces) == sorted(["sh.xlat", ls["path"]])
    assert traces[ls["path"]]["info"]["accesses"] == ls["accesses"] > 10_000  # ls's own run
    assert traces[ls["path"]]["info"]["syscalls"]["exit"] == 1
    # its header names the program it ran
    assert traces[ls["path"]]["header"]["metadata"]["argv_run"] == [shutil.which("ls"), "/"]
    assert traces["sh.xlat"]["header"]["metadata"]["argv_run"][-2:] == ["-c", "ls / >/dev/null; true"]


def test_tracing_gcc_traces_cc1_and_as(tmp_path):
    (tmp_path / "x.c").write_text("int f(int x) { return x * 3; }\n")
    p = run_xlat(
        "trace",
        "--no-progress",
        "--follow-exec",
        "--json",
        "s.json",
        "-o",
        "gcc.xlat",
        "--",
        "gcc",
        "-c",
        "x.c",
        cwd=tmp_path,
    )
    assert (tmp_path / "x.o").is_file()  # gcc worked under the wrapper
    assert "xlat: warning:" not in p.stderr and "nan" not in p.stderr, p.stderr
    s = result((tmp_path / "s.json").read_text())
    gcc, *children = s["processes"]
    assert gcc["exited"] is True and gcc["accesses"] > 0
    traced = [c for c in children if c["path"] is not None]
    assert len(traced) >= 2  # cc1 and as, each forked then exec'd under QEMU
    assert all(c["exited"] and c["accesses"] > 0 for c in traced)
    assert all(c["path"] is None for c in children if not c["exited"])  # the empty pre-exec halves
    ran = {
        os.path.basename(
            result(run_xlat("trace-info", c["path"], "--json", cwd=tmp_path).stdout)["header"]["metadata"][
                "argv_run"
            ][0]
        )
        for c in traced
    }
    assert {"cc1", "as"} <= ran, ran


def test_tracing_gcc_by_default_warns(tmp_path):
    (tmp_path / "x.c").write_text("int f(int x) { return x * 3; }\n")
    p = run_xlat("trace", "--no-progress", "-o", "gcc.xlat", "--", "gcc", "-c", "x.c", cwd=tmp_path)
    assert (tmp_path / "x.o").is_file()
    assert "xlat: warning:" in p.stderr and "not traced" in p.stderr, p.stderr
    assert "nan" not in p.stderr
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".xlat")) == ["gcc.xlat"]


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
    info = result(run_xlat("trace-info", "s.xlat", "--json", cwd=tmp_path).stdout)
    assert info["info"]["accesses"] > 0  # the dynamic loader and libc ran before the sleep
    assert "xlat: warning:" not in p.stderr  # killed by us: not an exec


def test_timeout_is_not_reached_by_a_short_program(tmp_path):
    p = run_xlat(
        "trace", "--no-progress", "--timeout", "60", "--json", "-", "-o", "t.xlat", "--", "true", cwd=tmp_path
    )
    s = result(p.stdout)
    assert s["timed_out"] is False and s["status"] == 0


def test_bad_timeout_is_one_sentence(tmp_path):
    p = run_xlat("trace", "--timeout", "0", "-o", "t.xlat", "--", "true", cwd=tmp_path, check=False)
    assert p.returncode == 1
    assert p.stderr.strip() == "xlat: error: --timeout must be a positive number of seconds, not 0.0"


def test_an_unknown_input_prefix_is_named(tmp_path):
    # Issue 37, item 14: `drmemtrace:foo.zip` was read as a path ("No such file or directory");
    # drmemtrace: is read now (tests/test_importers.py), and any other prefix is named.
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "xlat", "trace-info", "pin:foo.out"], capture_output=True, text=True
    )
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [
        "xlat: error: 'pin:foo.out' starts with 'pin:', which is no input kind xlat reads "
        "(workload:, lackey:, champsim:, drmemtrace:, qemu-raw:, or a trace file's path; a file whose "
        "name holds a colon is read when it exists)"
    ]
    # A drmemtrace: spec whose file is missing says so.
    p = subprocess.run(
        [sys.executable, "-m", "xlat", "trace-info", "drmemtrace:foo.zip"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == ["xlat: error: foo.zip: No such file or directory (os error 2)"]
    # A file whose name holds a colon is still read.
    import xlat

    f = tmp_path / "run:1.xlat"
    xlat.convert("workload:stream?size=64MiB&accesses=100", str(f))
    assert xlat.trace_info(str(f))["info"]["accesses"] == 100
