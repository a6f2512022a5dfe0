"""Configurations too large for the host, with too small a buddy order, an empty name or a
multi-line --set value: one sentence and exit 1, before anything is allocated or simulated."""

import resource
import subprocess
import sys

import pytest
import xlat
from conftest import run_xlat
from test_trace_cli import one_sentence_error

W = "workload:gups?size=64MiB&accesses=1000"


def test_structures_larger_than_the_host_memory_are_refused(monkeypatch):
    big = ["--set", "psc.pde.entries=268435456", "--set", "psc.pdpte.entries=268435456"]
    monkeypatch.setenv("XLAT_MEM_AVAILABLE", str(3 * 10**9))
    p = run_xlat("sim", W, *big, check=False)
    one_sentence_error(
        p,
        "config 'skylake': its structures need at least 8.6 GB of host memory "
        "(psc 'pde' 4.3 GB, psc 'pdpte' 4.3 GB), more than the 3.0 GB available on this machine",
    )


def test_the_check_counts_ulimit_v_and_configurations_that_run_together(monkeypatch):
    # Issue 38, item 2: under ulimit -v the run aborted in the allocator after a minute; two
    # configurations that each fit passed together.
    big = ["--set", "psc.pde.entries=268435456", "--set", "psc.pdpte.entries=268435456"]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (6 * 10**9, 6 * 10**9))

    p = subprocess.run(
        [sys.executable, "-m", "xlat", "sim", W, *big, "--no-progress"],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
    )
    one_sentence_error(p, "config 'skylake': its structures need at least 8.6 GB of host memory")
    assert "available on this machine; make them smaller." in p.stderr
    monkeypatch.setenv("XLAT_MEM_AVAILABLE", str(6 * 10**9))
    two = ["--cpu", "skylake", "--cpu", "haswell", "--set", "psc.pde.entries=268435456"]
    one_sentence_error(
        run_xlat("sim", W, *two, check=False),
        "2 configurations run at once and their structures need at least 8.6 GB of host memory together "
        "('haswell' 4.3 GB, 'skylake' 4.3 GB), more than the 6.0 GB available on this machine; "
        "run them one at a time or make them smaller.",
    )


@pytest.mark.parametrize(
    ("setting", "sentence"),
    [
        ("memory.max_order=0", "memory.max_order = 0 must be between 9 (2MB blocks) and 20 (4GB blocks)."),
        ('name=""', "config: name is empty; give the configuration a name"),
        ("tlb.stlb.entries=32\nmemory.max_order=0", "holds a line break; give one key=value on one line."),
    ],
)
def test_bad_settings_are_one_sentence(setting, sentence):
    one_sentence_error(run_xlat("sim", W, "--set", setting, check=False), sentence)
    with pytest.raises(
        xlat.ConfigError, match=sentence.split(";")[0].replace("(", r"\(").replace(")", r"\)")
    ):
        xlat.simulate(W, set=[setting])


def test_a_time_series_that_outgrows_the_host_memory_stops_in_one_sentence(monkeypatch):
    # Issue 38, item 1: sim.interval_accesses=1 sampled every counter at every access without
    # a bound (1.3 GB for 200,000 accesses, about 13 GB for 2 M).
    monkeypatch.setenv("XLAT_MEM_AVAILABLE", str(800 * 10**6))
    p = run_xlat("sim", "workload:stream?accesses=200000", "--set", "sim.interval_accesses=1", check=False)
    one_sentence_error(
        p,
        "sim.interval_accesses = 1: the time series (a sample of ",
        "outgrew a sixteenth of the 0.8 GB of host memory available after ",
        "take samples less often.",
    )
    # A sensible interval under the same limit runs.
    p = run_xlat(
        "sim", "workload:stream?accesses=200000", "--set", "sim.interval_accesses=1000", "--json", "-"
    )
    assert p.returncode == 0
