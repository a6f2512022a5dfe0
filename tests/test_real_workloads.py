"""The real-program recipes (``xlat workloads real``): their documented fields, the memory check
that runs before anything is installed or traced, and the listing. Fast: nothing here installs,
generates a big input or traces a big program (one test traces `print(1)` under QEMU)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from xlat import real_workloads as rw
from xlat.cli import main as xlat_main
from xlat.tracing import TracingError

NEW = ("numpy-sort", "xsbench-lookup", "duckdb-join", "csgraph-bfs-24", "gcc-control", "redis-kv")
GIB = 1 << 30


def test_every_recipe_has_the_documented_fields() -> None:
    names = [r.name for r in rw.recipes()]
    assert len(names) == len(set(names)) >= 11
    for r in rw.recipes():
        assert r.help and r.skip > 0 and r.max_accesses > 0, r.name
        assert isinstance(r.memory, int) and r.memory >= 256 << 20, r.name
        for note in (r.skip_note, r.memory_note, r.footprint_note):
            assert note and "TBD" not in note, r.name
        assert (r.script is not None) + bool(r.argv) + bool(r.driver) == 1, r.name
        if r.input:
            assert r.input in rw.INPUTS, r.name
        if r.driver:
            assert r.driver in rw.DRIVERS, r.name
        if r.script is not None:
            compile(r.script, r.name, "exec")
            assert '"setup"' in r.script, f"{r.name}: the script must stop after its warm-up for calibrate"


def test_the_suite_spans_one_to_eight_gib() -> None:
    by_name = {r.name: r for r in rw.recipes()}
    assert set(NEW) <= set(by_name)
    big = [r.name for r in rw.recipes() if r.memory >= 4 * GIB]
    assert len(big) >= 3, big
    assert max(r.memory for r in rw.recipes()) >= 8 * GIB
    assert by_name["gcc-control"].memory < GIB  # the small-footprint control


def test_mem_available_reads_meminfo(tmp_path: Path) -> None:
    f = tmp_path / "meminfo"
    f.write_text("MemTotal:       24000000 kB\nMemFree:        100 kB\nMemAvailable:    2097152 kB\n")
    assert rw.mem_available(str(f)) == 2 * GIB
    f.write_text("MemTotal:       24000000 kB\n")
    assert rw.mem_available(str(f)) is None
    assert rw.mem_available(str(tmp_path / "missing")) is None


def test_memory_check_refuses_in_one_sentence_before_installing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rw, "mem_available", lambda: 3 * GIB)

    def no_install(r: rw.Recipe) -> None:
        raise AssertionError("installed before the memory check")

    monkeypatch.setattr(rw, "install", no_install)
    need = rw.find("numpy-sort").memory
    with pytest.raises(TracingError) as e:
        rw.run("numpy-sort", "/nonexistent/out.xlat")
    msg = str(e.value)
    assert msg.count(". ") == 0 and "\n" not in msg
    assert "'numpy-sort'" in msg and f"{need / GIB:.1f} GiB" in msg and "3.0 GiB is available" in msg


def test_memory_check_passes_when_enough_or_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    r = rw.find("numpy-sort")
    monkeypatch.setattr(rw, "mem_available", lambda: r.memory)
    rw.check_memory(r)
    monkeypatch.setattr(rw, "mem_available", lambda: None)  # a kernel without MemAvailable
    rw.check_memory(r)


def test_cli_memory_refusal_is_one_line_and_exit_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(rw, "mem_available", lambda: 1 * GIB)
    monkeypatch.setattr(rw, "install", lambda r: pytest.fail("installed before the memory check"))
    assert xlat_main(["workloads", "real", "xsbench-lookup", "-o", "/nonexistent/x.xlat"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "'xsbench-lookup' needs" in err and "1.0 GiB is available" in err


def test_listing_names_the_new_recipes_with_memory_and_footprint() -> None:
    r = subprocess.run([sys.executable, "-m", "xlat", "workloads", "real"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in NEW:
        assert f"\n{name}: " in r.stdout
    assert r.stdout.count("GiB of memory") == len(rw.recipes())
    assert r.stdout.count("    footprint: ") == len(rw.recipes())


def test_gcc_control_source_is_generated_once_and_deterministic(tmp_path: Path) -> None:
    a = rw.INPUTS["c-source"](tmp_path)
    text = a.read_text()
    assert "#include" not in text and text.count("\nlong f") == 1500
    a.unlink()
    assert rw.INPUTS["c-source"](tmp_path).read_text() == text


def test_table_script_prints_every_recipe_from_a_results_json(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[1] / "scripts" / "real-workloads-table.py"
    res = tmp_path / "table.json"
    res.write_text(
        '{"xz": {"skip": 2000000000, "max_accesses": 200000000, "native_peak_rss": 647798784, '
        '"trace_seconds": 12.5, "traced_peak_rss": 179507200, "touched_4k_pages": 10095, '
        '"peak_mapped_bytes": 708460544}}'
    )
    r = subprocess.run([sys.executable, str(script), "--results", str(res)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [x.name for x in rw.recipes()]
    assert "| `xz` | 618 MiB / 676 MiB | 39 MiB (10,095) | 200 M accesses | 2 G | 12 s |" in r.stdout
    bad = subprocess.run(
        [sys.executable, str(script), "--results", str(res), "--recipes", "nope"],
        capture_output=True,
        text=True,
    )
    assert (
        bad.returncode == 1
        and "no real workload named 'nope'" in bad.stderr
        and "Traceback" not in bad.stderr
    )


def test_a_window_that_records_nothing_is_an_error_and_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recipe whose program ends before its warm-up skip runs out (a new version that runs
    fewer instructions there, as DuckDB's main thread did) records no access: one sentence, and
    no empty trace left to be simulated into zeros."""
    if shutil.which("qemu-x86_64") is None:
        pytest.skip("qemu-user is not installed (make setup)")
    tiny = rw.Recipe("tiny", "print one line", skip=10**12, skip_note="-", max_accesses=1000, memory=0,
                     memory_note="-", footprint_note="-", script="print(1)\n")  # fmt: skip
    monkeypatch.setattr(rw, "find", lambda name: tiny)
    monkeypatch.setattr(rw, "_workdir", lambda: tmp_path)  # its script, not in the checkout's out/
    out = tmp_path / "tiny.xlat"
    with pytest.raises(TracingError, match=r"'tiny' recorded no access: it ended before its warm-up skip"):
        rw.run("tiny", str(out))
    assert not out.exists()
