"""Live dirty-bit fidelity (``xlat fidelity --pid`` / ``-- PROGRAM``) from soft-dirty bits:
whether this kernel has them (checked either way), the loss arithmetic by hand, and the errors."""

from __future__ import annotations

import gzip
import mmap
import os

import pytest
from xlat.cli import main
from xlat.softdirty import LiveResult, coarse_loss, region_bits, support


def _config_line() -> str | None:
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            return next((ln.strip() for ln in f if "CONFIG_MEM_SOFT_DIRTY" in ln), None)
    except OSError:
        return None


def test_support_agrees_with_the_kernel_config():
    ok, why = support()
    line = _config_line()
    if line == "# CONFIG_MEM_SOFT_DIRTY is not set":
        assert not ok
        assert why.startswith("this kernel does not track soft-dirty bits")
        assert "CONFIG_MEM_SOFT_DIRTY is not set" in why
    elif line == "CONFIG_MEM_SOFT_DIRTY=y":
        assert ok, why
    else:  # no config to compare with: the probe still answers one way or the other
        assert isinstance(ok, bool) and why


def test_cli_runs_a_program_or_says_why_not(capsys):
    ok, why = support()
    code = main(["fidelity", "--", "python3", "-c", "b = bytearray(8 << 20)\nimport time; time.sleep(0.3)"])
    out, err = capsys.readouterr()
    if ok:
        assert code == 0 and "dirty-bit fidelity loss per granularity" in out
    else:
        assert code == 1 and err == f"xlat: error: {why}\n"


def test_an_unreadable_pid_is_one_sentence(capsys):
    assert main(["fidelity", "--pid", "999999999"]) == 1
    assert capsys.readouterr().err == (
        "xlat: error: there is no process 999999999 to read (/proc/999999999 does not exist)\n"
    )


def test_a_pid_without_read_permission_is_one_sentence(capsys):
    try:
        with open("/proc/1/pagemap", "rb") as f:
            f.read(8)
        pytest.skip("this process may read pid 1's pagemap")
    except PermissionError:
        pass
    assert main(["fidelity", "--pid", "1"]) == 1
    assert capsys.readouterr().err == (
        "xlat: error: cannot read process 1's page map (/proc/1/pagemap: Permission denied)\n"
    )


def test_neither_a_trace_nor_a_program_is_one_sentence(capsys):
    assert main(["fidelity", "no-such-trace-or-program"]) == 1
    assert capsys.readouterr().err == (
        "xlat: error: there is no trace file or program named 'no-such-trace-or-program'\n"
    )
    assert main(["fidelity"]) == 1
    assert capsys.readouterr().err == "xlat: error: give a trace, --pid PID, or -- PROGRAM ARGS\n"


def test_coarse_loss_by_hand():
    bits = 1 << 0 | 1 << 2  # pages 0 and 2
    assert coarse_loss(bits, 1) == 510  # one bit set: 512 pages read as dirty, 2 are
    assert coarse_loss(bits, 128) == 2  # 4 pages a bit: {0..3} set, 2 of them dirty
    assert coarse_loss(bits, 256) == 2  # 2 pages a bit: {0,1} and {2,3} set, one dirty in each
    assert coarse_loss(1 << 511, 2) == 255
    assert coarse_loss(0, 1) == 0


def test_live_result_statistics_by_hand():
    r = LiveResult("test", 0.1)
    # Interval 1: region 7 present, pages 0 and 2 dirty; region 8 present, clean.
    r.add({7: (0b1111, 0b101), 8: (1, 0)})
    # Interval 2: region 7, page 511 dirty.
    r.add({7: (1 << 511, 1 << 511)})
    d = r.to_json()
    assert (d["intervals"], d["samples"], d["dirty_samples"], d["regions"]) == (2, 3, 2, 2)
    g1 = d["dirty"][0]
    assert g1["g"] == 1 and g1["mean"] == pytest.approx((510 + 0 + 511) / 3 / 512)
    assert g1["distinct"] == 2  # 1 (dirty) and 0 (clean)
    assert d["dirty"][-1]["mean"] == 0.0 and d["dirty"][-1]["distinct"] == 3


def test_region_bits_sees_this_process_pages():
    buf = mmap.mmap(-1, 4 << 20)
    buf[4096 * 3] = 1  # fault one page in
    import ctypes

    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf)) + 4096 * 3
    bits = region_bits(os.getpid())
    present, _dirty = bits[addr >> 21]
    assert present >> ((addr >> 12) & 511) & 1
    del bits
