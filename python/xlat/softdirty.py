"""Live dirty-bit fidelity of a real process (PRISM, Ausavarungnirun et al. 2020, Section 3)
from the kernel's soft-dirty bits: every interval, write ``4`` to ``/proc/PID/clear_refs``
(clear the soft-dirty bits), wait, then read bit 55 (soft-dirty) of every present page's entry
in ``/proc/PID/pagemap``. Each 2MB region's 512 bits are then approximated by G bits, as
:mod:`xlat.fidelity` does for traces.

Soft-dirty needs a kernel built with ``CONFIG_MEM_SOFT_DIRTY``; :func:`support` checks it on
this process (clear, write a page, look at its bit) and says why not. Reading another process's
pagemap needs root (or ``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import math
import mmap
import os
import struct
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["LiveResult", "SoftDirtyError", "measure", "region_bits", "support"]

GRANULARITIES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
_SOFT_DIRTY = 1 << 55
_PRESENT = 1 << 63
_PAGE = 4096


class SoftDirtyError(Exception):
    """A process that cannot be read or a kernel without soft-dirty bits (one sentence)."""


def _kernel_config_says() -> str:
    """What /proc/config.gz says about CONFIG_MEM_SOFT_DIRTY, as a clause ('' if unknown)."""
    import gzip

    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            for line in f:
                if "CONFIG_MEM_SOFT_DIRTY" in line:
                    return f" (/proc/config.gz: {line.strip()})"
    except OSError:
        pass
    return ""


def support() -> tuple[bool, str]:
    """Whether this kernel tracks soft-dirty bits, and if not one sentence why: clear this
    process's bits, write a fresh page, and look at its pagemap entry."""
    buf = mmap.mmap(-1, 2 * _PAGE)
    try:
        buf[0:1] = b"x"  # fault the page in
        addr = _address(buf)
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("4")
        except OSError as e:
            return False, f"cannot clear soft-dirty bits: writing /proc/self/clear_refs failed ({e.strerror})"
        cleared = _entry(os.getpid(), addr)
        buf[0:1] = b"y"
        written = _entry(os.getpid(), addr)
    finally:
        buf.close()
    if not written & _PRESENT:
        return False, "cannot read page-frame flags from /proc/self/pagemap (is this Linux?)"
    if written & _SOFT_DIRTY and not cleared & _SOFT_DIRTY:
        return True, "soft-dirty bits work"
    return False, (
        "this kernel does not track soft-dirty bits: after clearing them (clear_refs 4), a write "
        f"leaves bit 55 of the page's pagemap entry clear{_kernel_config_says()}"
    )


def _address(buf: mmap.mmap) -> int:
    import ctypes

    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def _entry(pid: int, addr: int) -> int:
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(addr // _PAGE * 8)
        return struct.unpack("<Q", f.read(8))[0]


def _writable_ranges(pid: int) -> list[tuple[int, int]]:
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if "w" in parts[1] and not line.rstrip().endswith("[vsyscall]"):
                out.append((lo, hi))
    return out


def region_bits(pid: int) -> dict[int, tuple[int, int]]:
    """For every 2MB region of the process's writable mappings: (present pages, soft-dirty
    pages) as 512-bit integers (bit i: 4KB page i of the region)."""
    regions: dict[int, list[int]] = {}
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        for lo, hi in _writable_ranges(pid):
            pm.seek(lo // _PAGE * 8)
            raw = pm.read((hi - lo) // _PAGE * 8)
            for i, (e,) in enumerate(struct.iter_unpack("<Q", raw)):
                if not e & _PRESENT:
                    continue
                page = lo // _PAGE + i
                r = regions.setdefault(page >> 9, [0, 0])
                bit = 1 << (page & 511)
                r[0] |= bit
                if e & _SOFT_DIRTY:
                    r[1] |= bit
    return {k: (v[0], v[1]) for k, v in regions.items()}


def coarse_loss(bits: int, g: int) -> int:
    """4KB bits that G bits (each the OR of 512/G 4KB bits) get wrong."""
    width = 512 // g
    mask = (1 << width) - 1
    set_groups = sum(1 for j in range(g) if (bits >> (j * width)) & mask)
    return set_groups * width - bin(bits).count("1")


@dataclass
class LiveResult:
    """Dirty-bit fidelity of a live process: samples are (2MB region, interval) pairs with a
    present page; loss per G as in ``xlat fidelity`` (mean, std, distinct vectors, entropy)."""

    target: str
    interval: float
    intervals: int = 0
    samples: int = 0
    dirty_samples: int = 0
    regions: set[int] = field(default_factory=set)
    _wrong: dict[int, list[int]] = field(default_factory=lambda: {g: [] for g in GRANULARITIES})
    _distinct: dict[int, set[int]] = field(default_factory=lambda: {g: set() for g in GRANULARITIES})

    def add(self, snapshot: dict[int, tuple[int, int]]) -> None:
        self.intervals += 1
        for key, (present, dirty) in snapshot.items():
            if not present:
                continue
            self.samples += 1
            self.regions.add(key)
            self.dirty_samples += dirty != 0
            for g in GRANULARITIES:
                self._wrong[g].append(coarse_loss(dirty, g))
                width = 512 // g
                self._distinct[g].add(
                    sum(1 << j for j in range(g) if (dirty >> (j * width)) & ((1 << width) - 1))
                )

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for g in GRANULARITIES:
            w = self._wrong[g]
            n = len(w) or 1
            mean = sum(w) / n / 512
            var = sum((x / 512 - mean) ** 2 for x in w) / n
            d = len(self._distinct[g])
            out.append(
                {
                    "g": g,
                    "mean": mean,
                    "std": math.sqrt(var),
                    "distinct": d,
                    "entropy": math.log2(d) if d else 0.0,
                }
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "interval_s": self.interval,
            "intervals": self.intervals,
            "samples": self.samples,
            "dirty_samples": self.dirty_samples,
            "regions": len(self.regions),
            "dirty": self.rows(),
        }


def check_pid(pid: int) -> None:
    """One sentence if the process's pagemap cannot be read."""
    try:
        with open(f"/proc/{pid}/pagemap", "rb") as f:
            f.read(8)
        with open(f"/proc/{pid}/maps") as f:
            f.read(1)
    except FileNotFoundError:
        raise SoftDirtyError(f"there is no process {pid} to read (/proc/{pid} does not exist)") from None
    except OSError as e:
        raise SoftDirtyError(
            f"cannot read process {pid}'s page map (/proc/{pid}/pagemap: {e.strerror})"
        ) from None


def _clear(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("4")


def measure(
    pid: int | None = None,
    command: list[str] | None = None,
    interval: float = 0.1,
    count: int | None = None,
) -> LiveResult:
    """Sample a running process (``pid``) or a program started here (``command``) every
    ``interval`` seconds until it exits or ``count`` intervals are done."""
    if interval <= 0 or not math.isfinite(interval):
        raise ValueError(f"the interval must be a positive number of seconds, not {interval}")
    if pid is not None:
        check_pid(pid)
    ok, why = support()
    if not ok:
        raise SoftDirtyError(why)
    proc = None
    if command:
        try:
            proc = subprocess.Popen(command)
        except OSError as e:
            raise SoftDirtyError(f"cannot run {command[0]!r}: {e.strerror}") from None
        pid = proc.pid
    assert pid is not None
    res = LiveResult(" ".join(command) if command else f"pid {pid}", interval)
    try:
        while count is None or res.intervals < count:
            try:
                _clear(pid)
                time.sleep(interval)
                res.add(region_bits(pid))
            except (FileNotFoundError, ProcessLookupError):
                break  # the process exited
            except OSError as e:
                if proc is not None and proc.poll() is not None:
                    break
                raise SoftDirtyError(f"cannot read process {pid}'s page map ({e.strerror})") from None
            if proc is not None and proc.poll() is not None:
                break
    finally:
        if proc is not None and count is not None:
            proc.kill()
        if proc is not None:
            proc.wait()
    return res
