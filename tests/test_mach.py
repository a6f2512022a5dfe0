"""Mach 3.0's software-managed TLB (`[mach]`, docs/mach.md) from Python and the CLI: the counters
in the result and the `xlat sim` table, by hand on a text trace with markers; bad input (each
case the issue names: partitions, a DM STLB size, a negative cost, a benchmark with no server)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import xlat.sim as sim
from xlat.cli import main
from xlat.sim import ConfigError
from xlat.trace import WorkloadError, trace_info

MACH = Path(__file__).resolve().parents[1] / "configs" / "mach"
KSEG2 = 0xFFFF_C000_0000_0000


def trace(tmp_path) -> str:
    """Client (asid 1) touches its code page; IPC to the server (asid 2): the kernel touches a
    kseg2 page; the server touches its code page."""
    lines = [
        "#xlat-text 1",
        '#header {"format":"xlat-trace","producer":"test"}',
        "M 1 0 ctx 1",
        "A 1 1 L 0x400000 8",
        "M 1 1 ipc-send 2 64",
        f"A 1 2 L {KSEG2 + 0x2_0000:#x} 8",
        "M 1 2 ctx 2",
        "M 1 2 ipc-recv 1 64",
        "A 1 3 L 0x400000 8",
    ]
    p = tmp_path / "mach.txt"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_the_result_carries_the_mach_counters(tmp_path):
    r = sim.simulate(trace(tmp_path), config=str(MACH / "tlb-only.toml"))
    c = r.counters
    # Client: L1U + cascaded L2 + cascaded L3 + TLB-invalid. Kernel page: L1K + cascaded L3
    # (another kernel page-table page). Server: L1U + L2 (its own user page table) + L3 (its
    # table's page-table page is another one) + TLB-invalid.
    assert [c[f"mach.misses.{t}"] for t in ("l1u", "l1k", "l2", "l3", "invalid")] == [2, 1, 2, 3, 2]
    assert c["mach.cascaded"] == 5
    assert c["mach.kernel_misses"] == 6
    assert c["mach.cycles.l2"] == 2 * 555
    assert c["mach.cycles.l3"] == 3 * 407
    assert c["mach.cycles.l1k"] == 512
    assert c["mach.cycles.invalid"] == 2 * 338
    # Each L1U PTE load misses the cold cache: 9 + 25.
    assert c["mach.cycles.l1u"] == 2 * 34
    assert c["walker.cycles"] == c["mach.cycles"] == 2 * 555 + 3 * 407 + 512 + 2 * 338 + 2 * 34


def test_xlat_sim_shows_the_mach_rows(tmp_path, capsys):
    assert main(["sim", "--no-progress", "--config", str(MACH / "stlb-4k.toml"), trace(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mach l1k misses" in out
    assert "mach STLB hit rate" in out
    # Both runtimes, labelled: the additive estimate has no data-cache miss time, eq. 5.1 has.
    assert "est. cycles (additive, no data-cache misses)" in out
    assert "mach eq. 5.1 runtime R (T_C = 24)" in out


def test_a_ptlb_on_a_trace_without_ipc_markers_says_it_prefetched_nothing(tmp_path, capsys):
    w = "workload:stream?size=1MiB&accesses=1000"
    assert main(["sim", "--no-progress", "--config", str(MACH / "ptlb.toml"), w]) == 0
    err = capsys.readouterr().err
    assert "the trace has no IPC markers, so the PTLB prefetched nothing" in err
    # With IPC markers: prefetches, and no note.
    cs = "workload:clientserver?servers=2&words=10&accesses=20000"
    assert main(["sim", "--no-progress", "--config", str(MACH / "ptlb.toml"), cs, "--json", "-"]) == 0
    io = capsys.readouterr()
    assert "no IPC markers" not in io.err and '"mach.ptlb.prefetches"' in io.out


def test_bad_partitions_get_one_sentence_and_a_non_zero_exit(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[mach]\nentries = 64\nupper = 60\nlower = 8\n')
    assert main(["sim", "--no-progress", "--config", str(bad), trace(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert "mach.upper = 60 and mach.lower = 8 must add up to mach.entries = 64" in err
    assert "Traceback" not in err


BAD = [
    # (config text, the sentence): the cases the issue names.
    (
        'name = "bad"\n[mach]\nentries = 64\nupper = 50\nlower = 8\n',
        "mach.upper = 50 and mach.lower = 8 must add up to mach.entries = 64.",
    ),
    (
        'name = "bad"\n[mach]\nstlb = "dm"\nstlb_entries = 1000\n',
        "mach.stlb_entries = 1000 must be a power of two",
    ),
    ('name = "bad"\n[mach]\nl1k_cycles = -3\n', "mach.l1k_cycles = -3 is a cost below zero"),
]


@pytest.mark.parametrize(("text", "sentence"), BAD)
def test_bad_configurations_from_the_cli_and_python(tmp_path, capsys, text, sentence):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    assert main(["sim", "--no-progress", "--config", str(bad), "workload:clientserver?accesses=1000"]) == 1
    err = capsys.readouterr().err
    assert sentence in err and "Traceback" not in err
    assert err.count("\n") == 1, err
    with pytest.raises(ConfigError, match=re.escape(sentence)):
        sim.simulate("workload:clientserver?accesses=1000", config=str(bad))


def test_a_benchmark_with_no_server_gets_one_sentence(capsys):
    sentence = "servers=0: the benchmark needs at least one server"
    spec = "workload:clientserver?servers=0"
    assert main(["trace-info", spec]) == 1
    assert main(["sim", "--no-progress", "--config", str(MACH / "tlb-only.toml"), spec]) == 1
    err = capsys.readouterr().err
    assert err.count(sentence) == 2 and err.count("\n") == 2 and "Traceback" not in err
    with pytest.raises(WorkloadError, match=sentence):
        sim.simulate(spec, config=str(MACH / "tlb-only.toml"))
    with pytest.raises(WorkloadError, match=sentence):
        trace_info(spec)
