"""``xlat reproduce``: every document's ``--quick`` pipeline produces its tables and findings and
its mechanism-level figures hold; a kill -9 mid-run resumes without redoing finished points; bad
input is one sentence."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed")

from conftest import result
from xlat import real_workloads as rw
from xlat.reproduce import DOCUMENTS, VERDICTS, ReproduceError, find, run, splice


def _xlat(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "xlat", *args], capture_output=True, text=True, **kw)


#: mosmodel's points are real runs under huge-page layouts: root reserves the pages.
REAL_RUNS = {"mosmodel"}


@pytest.fixture(scope="module")
def quick(reproduce_out) -> dict:
    out = reproduce_out
    return {
        name: (run(name, str(out / name), quick=True, workers=1), out / name)
        for name in DOCUMENTS
        if name not in REAL_RUNS or os.geteuid() == 0
    }


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_quick_tables_findings_and_mechanisms(quick, name):
    if name not in quick:
        pytest.skip(f"{name} reserves huge pages for its real runs, which needs root")
    report, out = quick[name]
    assert report.tables and all(t.rows for t in report.tables)
    assert len(report.findings) >= 10
    assert all(f.verdict in VERDICTS and f.section and f.claim and f.document for f in report.findings)
    # A finding that differs says why (a measured cause or an ablation's figure), except where
    # the cause is the document's only: a figure checked here as a whole.
    assert report.checks and all(report.checks.values()), report.checks
    md = (out / f"{name}.md").read_text()
    assert md.count("\n| ") >= len(report.findings) and report.title in md
    doc = json.loads((out / f"{name}.json").read_text())
    assert len(doc["findings"]) == len(report.findings) and doc["verdicts"] == report.verdicts()


def test_json_is_a_results_document(quick):
    """`--json` writes the report as a results document (validated by conftest's result())."""
    _, out = quick["rmm"]
    p = _xlat(
        "reproduce", "rmm", "--quick", "-o", str(out / "rmm"), "--workers", "1", "--json", "--no-progress"
    )
    assert p.returncode == 0, p.stderr
    doc = result(p.stdout)
    assert doc["kind"] == "reproduce" and doc["document"] == "rmm" and doc["verdicts"]["reproduced"] > 0
    assert len(doc["findings"]) == len(quick["rmm"][0].findings)


def test_rmm_quick_figures(quick):
    """Chapter 4's mechanisms on the quick inputs: the 32-entry range TLB removes > 99% of gups's
    walks under eager paging; eager paging forms fewer ranges than demand paging with THP; the
    Table 4.5 model is computed from the 4KB and THP runs."""
    report, _ = quick["rmm"]
    walks = next(t for t in report.tables if t.title.startswith("Page walks"))
    gups = next(r for r in walks.rows if r[0] == "gups")
    cols = walks.columns
    assert gups[cols.index("walks RMM")] <= 2 and gups[cols.index("walks 4KB")] > 100_000
    assert float(gups[cols.index("removed by RMM")].rstrip("%")) > 99.0
    verdicts = {f.claim: f.verdict for f in report.findings}
    assert verdicts["RMM eliminates the vast majority of page walks"] == "reproduced"


def test_splice_replaces_one_section(quick, tmp_path):
    report, _ = quick["rmm"]
    doc = tmp_path / "reproduction.md"
    doc.write_text("# Reproduction\n\nintro\n")
    splice(str(doc), report)
    splice(str(doc), report)  # twice: one section
    text = doc.read_text()
    assert text.startswith("# Reproduction\n\nintro\n") and text.count("<!-- reproduce:rmm -->") == 1
    assert text.count(report.title) == 1


def test_kill_9_resumes_without_redoing(tmp_path):
    """kill -9 of a run after some points: the rerun runs only the missing ones (the finished
    points' files are the same files) and ends with every point."""
    out = tmp_path / "r"
    progs = "workload:gups?size=1GiB&accesses=2000000,workload:zipf?size=512MiB&accesses=2000000"
    cmd = [
        sys.executable,
        "-m",
        "xlat",
        "reproduce",
        "rmm",
        "--programs",
        progs,
        "-o",
        str(out),
        "--workers",
        "1",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    results = out / "results"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and p.poll() is None:
        if results.exists() and sum(n.startswith("point-") for n in os.listdir(results)) >= 3:
            break
        time.sleep(0.02)
    assert p.poll() is None, "the run ended before it could be killed"
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    before = {n: os.stat(results / n).st_ino for n in os.listdir(results) if n.startswith("point-")}
    total = len(find("rmm").variants(False)) * 2
    assert 3 <= len(before) < total
    done = _xlat("reproduce", "rmm", "--programs", progs, "-o", str(out), "--workers", "1", "--no-progress")
    assert done.returncode == 0, done.stderr
    after = {n: os.stat(results / n).st_ino for n in os.listdir(results) if n.startswith("point-")}
    assert len(after) == total
    assert all(after[n] == ino for n, ino in before.items())  # not rewritten
    assert (out / "rmm.md").exists()


def one_sentence(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 1, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xlat: error: "), p.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_bad_input_is_one_sentence(tmp_path):
    one_sentence(_xlat("reproduce", "nosuch"), "no document 'nosuch'", "rmm")
    one_sentence(
        _xlat("reproduce", "rmm", "--programs", "nosuch", "-o", str(tmp_path / "a")), "'nosuch'", "recipe"
    )
    one_sentence(
        _xlat("reproduce", "rmm", "--quick", "-o", str(tmp_path / "b"), "--scheduler", "tcp://127.0.0.1:9",
              "--connect-timeout", "1"),
        "cannot reach the Dask scheduler",
    )  # fmt: skip
    # The seed file's name finds its document; the seed 000 holds chapter 4 (rmm).
    assert find("000_a44384fd80f6240a.txt").name == "rmm"


def test_too_little_memory_is_refused_before_tracing(tmp_path, monkeypatch):
    monkeypatch.setattr(rw, "mem_available", lambda path="/proc/meminfo": 1 << 30)
    with pytest.raises(ReproduceError, match=r"needs .* of memory to trace but only 1\.0 GiB"):
        run("rmm", str(tmp_path), programs=["numpy-sort"])
    assert not (tmp_path / "results" / "_traces" / "numpy-sort.xlat").exists()


def test_recipe_that_cannot_install_is_one_sentence(tmp_path, monkeypatch):
    from xlat.tracing import TracingError

    def fail(r):
        raise TracingError(f"pip install {' '.join(r.pip)} failed")

    monkeypatch.setattr(rw, "install", fail)
    monkeypatch.setattr(rw, "mem_available", lambda path="/proc/meminfo": 1 << 40)
    with pytest.raises(ReproduceError, match=r"pip install .* failed"):
        run("rmm", str(tmp_path), programs=["numpy-gather"], workers=1)


def test_programs_by_suite_name_recipe_traces_and_specs(tmp_path):
    """--programs takes the document's own program names; --traces DIR supplies a recipe's trace
    already made (DIR/NAME.xlat); two specs of one workload are named by their whole spec."""
    from xlat.reproduce import Program, program_of

    suite = find("rmm").programs(False)
    gups = program_of("gups", suite)
    assert gups == next(p for p in suite if p.name == "gups") and gups.trace.startswith("workload:gups")
    assert program_of("xz", suite) == Program("xz", "recipe:xz")  # no trace made yet: traced by the run
    (tmp_path / "xz.xlat").write_bytes(b"")
    assert program_of("xz", suite, str(tmp_path)) == Program("xz", str(tmp_path / "xz.xlat"))
    assert program_of("numpy-sort", suite, str(tmp_path)) == Program("numpy-sort", "recipe:numpy-sort")
    with pytest.raises(ReproduceError, match="is not a directory"):
        run("rmm", str(tmp_path / "o"), programs=["gups"], traces=str(tmp_path / "none"))
    specs = ["workload:gups?size=64MiB&accesses=1000", "workload:gups?size=128MiB&accesses=1000"]
    report = run("rmm", str(tmp_path / "two"), programs=specs, workers=1)
    assert [p.name for p in report.programs] == [s.removeprefix("workload:") for s in specs]
