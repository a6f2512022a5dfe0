"""Address contiguity of live processes: how few range translations could map their memory.

The method of Karakostas 2016, Section 4.2 "Abundance of address contiguity" and
Tables 4.2 and 4.7: scan a process's page table, find the maximal *ranges* of virtually
contiguous pages backed by physically contiguous frames with the same permissions, and count how
many ranges (largest first) cover the process's memory.

What is read (facts from the kernel's ``Documentation/admin-guide/mm/pagemap.rst``):

* ``/proc/PID/maps``: the VMAs (start, end, permissions, file).
* ``/proc/PID/pagemap``: one little-endian 64-bit entry per virtual page, at offset
  ``vaddr / PAGE_SIZE * 8``. Bit 63: page present; bit 62: swapped; bit 61: file page or shared
  anonymous; bits 0-54: the page frame number (PFN) when present. Since Linux 4.2 the PFN reads
  as zero unless the reader has ``CAP_SYS_ADMIN`` (root).
* ``/proc/kpageflags``: one 64-bit flags word per PFN, at offset ``pfn * 8`` (root only).
  Bit 15 ``KPF_COMPOUND_HEAD``, bit 16 ``KPF_COMPOUND_TAIL``, bit 17 ``KPF_HUGE`` (hugetlbfs),
  bit 22 ``KPF_THP`` (a transparent huge page, of any size), bit 24 ``KPF_ZERO_PAGE`` (the
  shared zero page or huge zero page).

A range is a maximal run of present pages of one VMA with ``pfn[i+1] == pfn[i] + 1``; ranges never
cross a VMA boundary (a VMA has one set of permissions). Mappings of the zero page (reads of
untouched anonymous memory) map no memory of the process: they are counted apart
(``zero_pages``), not as present pages, as ``/proc/PID/smaps`` leaves them out of ``Rss``. VMAs
with no permission at all (``---p``: guard pages, address-space reservations) and the kernel's
``[vvar*]``/``[vsyscall]`` pages are skipped.

Translation entries with huge pages (Table 4.2's first column): every present 4KB page counts
one, except that an aligned block of 512 pages (2MB) or 262144 pages (1GB) whose first frame is a
compound head flagged ``KPF_THP`` or ``KPF_HUGE`` and whose other frames are all compound tails
of it counts one entry for the block. This is read from ``/proc/kpageflags``; ``smaps``'
``AnonHugePages + ShmemPmdMapped + FilePmdMapped`` (PMD-mapped memory) is reported alongside as a
cross-check (:attr:`Sample.pmd_mapped_pages_smaps`): the two differ only when a huge page is
mapped by 4KB entries (rare; kpageflags then counts one entry where the page table has 512), or
when the process changed its memory during the scan.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "COVER",
    "DEFAULT_THRESHOLD",
    "ContiguityError",
    "ProcessGone",
    "Run",
    "Sample",
    "Vma",
    "coverage_curve",
    "find_runs",
    "huge_entries",
    "monitor",
    "parse_maps",
    "plot_coverage",
    "range_stats",
    "read_smaps",
    "sample",
    "sample_pid",
]

PAGE_SIZE = 4096  # x86-64 base page; pagemap has one entry per page of this size
# pagemap.rst: bits of a /proc/PID/pagemap entry
PM_PRESENT = 1 << 63
PM_SWAPPED = 1 << 62
PM_FILE = 1 << 61
PM_PFN_MASK = (1 << 55) - 1  # bits 0-54
# pagemap.rst: bits of a /proc/kpageflags word
KPF_COMPOUND_HEAD = 15
KPF_COMPOUND_TAIL = 16
KPF_HUGE = 17
KPF_THP = 22
KPF_ZERO_PAGE = 24

DEFAULT_THRESHOLD = 8  # Karakostas 2016, Sections 4.5 and 4.7: a contiguity threshold of 8 pages (32 KB)
COVER = 0.99  # Karakostas 2016, Table 4.2: ranges that map 99% of the application's memory
HUGE_PAGES = (262144, 512)  # 1GB and 2MB, in 4KB pages (x86-64)
CHUNK = 1 << 18  # pagemap entries read at once (2 MiB of entries, 1 GiB of address space)


class ContiguityError(Exception):
    """Something a user can fix: no such process, not allowed to read it, a program that does
    not start. The message is one sentence."""


@dataclass(frozen=True)
class Vma:
    start: int  # first byte
    end: int  # one past the last byte
    perms: str  # e.g. "rw-p"
    offset: int
    path: str  # "" for anonymous memory; "[heap]", "[stack]", a file name, ...

    @property
    def pages(self) -> int:
        return (self.end - self.start) // PAGE_SIZE

    @property
    def anonymous(self) -> bool:
        """Not backed by a file: no name, ``[heap]``, ``[stack]`` or a named ``[anon:...]``."""
        return self.path in ("", "[heap]") or self.path.startswith(("[stack", "[anon:"))


@dataclass(frozen=True)
class Run:
    """Ranges of one VMA, as arrays: first virtual page number, first PFN, length in pages."""

    vpn: np.ndarray
    pfn: np.ndarray
    pages: np.ndarray


def parse_maps(text: str) -> list[Vma]:
    """Parse the text of ``/proc/PID/maps``."""
    out = []
    for line in text.splitlines():
        parts = line.split(None, 5)
        if len(parts) < 5:
            continue
        lo, hi = parts[0].split("-")
        path = parts[5].strip() if len(parts) > 5 else ""
        out.append(Vma(int(lo, 16), int(hi, 16), parts[1], int(parts[2], 16), path))
    return out


def measured(vma: Vma) -> bool:
    """Whether a VMA's pages are the process's memory: not a no-access reservation, not the
    kernel's vvar/vsyscall pages."""
    if vma.perms[:3] == "---":
        return False
    return not (vma.path.startswith("[vvar") or vma.path == "[vsyscall]")


def find_runs(vpn: np.ndarray, pfn: np.ndarray) -> Run:
    """Maximal runs where both the virtual page and the frame advance by one.

    ``vpn`` and ``pfn`` are the present pages of one VMA, in increasing ``vpn``."""
    vpn = np.asarray(vpn, dtype=np.int64)
    pfn = np.asarray(pfn, dtype=np.int64)
    if vpn.size == 0:
        e = np.zeros(0, dtype=np.int64)
        return Run(e, e, e)
    brk = np.flatnonzero((np.diff(vpn) != 1) | (np.diff(pfn) != 1)) + 1
    starts = np.concatenate(([0], brk))
    ends = np.concatenate((brk, [vpn.size]))
    return Run(vpn[starts], pfn[starts], ends - starts)


def huge_entries(vpn: np.ndarray, pfn: np.ndarray, flags: np.ndarray) -> dict[int, int]:
    """Blocks of present pages (one VMA, increasing ``vpn``) mapped by one huge page each:
    ``{pages per huge page: count}`` for 262144 (1GB) and 512 (2MB).

    A block qualifies when its first virtual page and frame are aligned to its size, its pages are
    virtually and physically consecutive, its first frame is a compound head flagged THP or
    hugetlb and every other frame a compound tail (so the compound page is at least that big)."""
    vpn = np.asarray(vpn, dtype=np.int64)
    pfn = np.asarray(pfn, dtype=np.int64)
    flags = np.asarray(flags, dtype=np.uint64)
    head = (flags >> np.uint64(KPF_COMPOUND_HEAD)) & np.uint64(1)
    tail = (flags >> np.uint64(KPF_COMPOUND_TAIL)) & np.uint64(1)
    kind = ((flags >> np.uint64(KPF_THP)) | (flags >> np.uint64(KPF_HUGE))) & np.uint64(1)
    used = np.zeros(vpn.size, dtype=bool)
    out: dict[int, int] = {}
    for size in HUGE_PAGES:
        n = 0
        cand = np.flatnonzero((head & kind).astype(bool) & (vpn % size == 0) & (pfn % size == 0) & ~used)
        for i in cand:
            j = i + size
            if j > vpn.size or vpn[j - 1] - vpn[i] != size - 1 or pfn[j - 1] - pfn[i] != size - 1:
                continue  # not all present, or not consecutive
            if not np.all(tail[i + 1 : j]) or np.any(head[i + 1 : j]):
                continue
            if size == HUGE_PAGES[0] and not (flags[i] >> np.uint64(KPF_HUGE)) & np.uint64(1):
                continue  # 1GB pages are hugetlb's only (x86-64 has no 1GB THP for anon memory)
            used[i:j] = True
            n += 1
        out[size] = n
    return out


def range_stats(
    sizes: Sequence[int] | np.ndarray, threshold: int = DEFAULT_THRESHOLD, cover: float = COVER
) -> dict[str, Any]:
    """Table 4.2 and 4.7's numbers from range sizes (pages).

    ``ranges_to_cover``: the fewest ranges, largest first, mapping at least ``cover`` of the
    present pages. ``threshold_*``: ranges of at least ``threshold`` pages (those the OS would
    make range translations, Section 4.5), their count, the % of present pages they cover and
    their median/average/maximum size."""
    s = np.sort(np.asarray(sizes, dtype=np.int64))[::-1]
    present = int(s.sum())
    big = s[s >= threshold]

    def summary(a: np.ndarray) -> dict[str, float | int]:
        if a.size == 0:
            return {"median": 0, "average": 0.0, "max": 0}
        med = float(np.median(a))
        return {
            "median": int(med) if med.is_integer() else med,
            "average": float(a.mean()),
            "max": int(a.max()),
        }

    need = 0
    if present:
        cum = np.cumsum(s)
        # the first prefix whose sum reaches cover * present (exact for cover given in hundredths)
        goal = math.ceil(round(cover * present, 9))
        need = int(np.searchsorted(cum, goal, side="left")) + 1
    return {
        "present_pages": present,
        "ranges": int(s.size),
        f"ranges_to_cover_{cover * 100:g}pct": need,
        "largest_range_pct": float(100.0 * s[0] / present) if present else 0.0,
        "range_pages": summary(s),
        "threshold": threshold,
        "threshold_ranges": int(big.size),
        "threshold_covered_pct": float(100.0 * big.sum() / present) if present else 0.0,
        "threshold_range_pages": summary(big),
    }


def coverage_curve(sizes: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(number of ranges 1..n, % of present pages they map), ranges taken largest first."""
    s = np.sort(np.asarray(sizes, dtype=np.int64))[::-1]
    if s.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.arange(1, s.size + 1), 100.0 * np.cumsum(s) / s.sum()


@dataclass
class Sample:
    """One scan of one process."""

    pid: int
    time: float  # seconds since monitoring started (0 for a one-off scan)
    sizes: np.ndarray  # range sizes in pages, all VMAs
    zero_pages: int  # virtual pages mapping the zero page (not counted as present)
    huge: dict[int, int]  # {512: 2MB entries, 262144: 1GB entries} from kpageflags
    vmas: int  # VMAs measured
    pmd_mapped_pages_smaps: int | None = None  # AnonHugePages+ShmemPmdMapped+FilePmdMapped, pages
    per_vma_present: dict[int, int] = field(default_factory=dict)  # VMA start -> present pages
    anon: np.ndarray | None = None  # per range (as ``sizes``): whether its VMA is anonymous
    virtual_sizes: np.ndarray | None = None  # runs of present pages per VMA, frames ignored

    @property
    def present_pages(self) -> int:
        return int(self.sizes.sum())

    @property
    def entries_with_huge_pages(self) -> int:
        """Table 4.2 (i): 4KB entries plus one per huge page."""
        covered = sum(size * n for size, n in self.huge.items())
        return self.present_pages - covered + sum(self.huge.values())

    def stats(self, threshold: int = DEFAULT_THRESHOLD) -> dict[str, Any]:
        out = {
            "pid": self.pid,
            "time_s": round(self.time, 3),
            "vmas": self.vmas,
            "footprint_bytes": self.present_pages * PAGE_SIZE,
            "zero_pages": self.zero_pages,
            "entries_4k": self.present_pages - sum(size * n for size, n in self.huge.items()),
            "entries_2m": self.huge.get(512, 0),
            "entries_1g": self.huge.get(262144, 0),
            "entries_with_huge_pages": self.entries_with_huge_pages,
            "pmd_mapped_pages_smaps": self.pmd_mapped_pages_smaps,
        }
        out.update(range_stats(self.sizes, threshold))
        if self.virtual_sizes is not None:
            # Table 4.2's "ideal RMM ranges": runs of present pages of one VMA whatever their
            # frames, what eager paging could map with one range each
            v = range_stats(self.virtual_sizes, threshold)
            out["ideal"] = {k: v[k] for k in ("ranges", "ranges_to_cover_99pct", "largest_range_pct")}
        sizes, counts = np.unique(self.sizes, return_counts=True)
        # every range, compactly: [[size in pages, how many ranges], ...] (plots, other statistics)
        out["range_size_histogram"] = [[int(a), int(b)] for a, b in zip(sizes, counts, strict=True)]
        if self.anon is not None:
            # the same, counting only anonymous VMAs (heap, stack, mmap'd memory): files' page
            # cache (shared libraries, mapped inputs) is what other processes share
            a = range_stats(self.sizes[self.anon], threshold)
            out["anonymous"] = {
                k: a[k]
                for k in (
                    "present_pages",
                    "ranges",
                    "ranges_to_cover_99pct",
                    "largest_range_pct",
                    "threshold_covered_pct",
                )
            }
        return out


def _pread_u64(fd: int, index: int, count: int) -> np.ndarray:
    """``count`` 64-bit words at word ``index`` of an open /proc file (short reads tolerated)."""
    want = count * 8
    buf = bytearray()
    off = index * 8
    while len(buf) < want:
        chunk = os.pread(fd, want - len(buf), off + len(buf))
        if not chunk:
            break
        buf += chunk
    usable = len(buf) // 8 * 8
    return np.frombuffer(bytes(buf[:usable]), dtype="<u8")


def _vma_pages(pm_fd: int, vma: Vma) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The present pages of a VMA, chunk by chunk: (vpn, pfn)."""
    first = vma.start // PAGE_SIZE
    for lo in range(first, first + vma.pages, CHUNK):
        n = min(CHUNK, first + vma.pages - lo)
        ent = _pread_u64(pm_fd, lo, n)
        idx = np.flatnonzero(ent & np.uint64(PM_PRESENT))
        if idx.size:
            yield (lo + idx).astype(np.int64), (ent[idx] & np.uint64(PM_PFN_MASK)).astype(np.int64)


def read_smaps(pid: int, proc: str | Path = "/proc") -> dict[int, dict[str, int]]:
    """``/proc/PID/smaps``: VMA start -> its ``kB`` fields (``Rss``, ``AnonHugePages``, ...) in kB."""
    out: dict[int, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    head = re.compile(r"^([0-9a-f]+)-[0-9a-f]+ ")
    field_re = re.compile(r"^(\w+):\s+(\d+) kB$")
    for line in (Path(proc) / str(pid) / "smaps").read_text().splitlines():
        m = head.match(line)
        if m:
            cur = out.setdefault(int(m.group(1), 16), {})
            continue
        f = field_re.match(line)
        if f and cur is not None:
            cur[f.group(1)] = int(f.group(2))
    return out


class ProcessGone(ContiguityError):
    """The process does not exist, or exited during the scan."""


def _denied(path: Path) -> ContiguityError:
    why = (
        "reading another user's process needs root"
        if os.geteuid()
        else "the kernel refuses it even to root, e.g. a process outside this container"
    )
    return ContiguityError(f"cannot read {path}: permission denied ({why})")


def _gone(pid: int) -> ContiguityError:
    return ProcessGone(f"no process with id {pid} (it does not exist or has exited)")


def sample(pid: int, proc: str | Path = "/proc", smaps: bool = True, t: float = 0.0) -> Sample:
    """Scan process ``pid`` once. ``proc`` is where procfs is (tests point it at a fake tree)."""
    proc = Path(proc)
    base = proc / str(pid)
    try:
        maps = parse_maps((base / "maps").read_text())
    except (FileNotFoundError, ProcessLookupError):
        raise _gone(pid) from None
    except PermissionError:
        raise _denied(base / "maps") from None
    try:
        pm_fd = os.open(base / "pagemap", os.O_RDONLY)
    except (FileNotFoundError, ProcessLookupError):  # ESRCH: exiting, its memory already gone
        raise _gone(pid) from None
    except PermissionError:
        raise _denied(base / "pagemap") from None
    kf_fd = -1  # opened at the first frame number seen, so hidden frames are reported first
    sizes: list[np.ndarray] = []
    anon: list[np.ndarray] = []
    vsizes: list[np.ndarray] = []
    huge = {s: 0 for s in HUGE_PAGES}
    zero = 0
    nvmas = 0
    any_present = False
    any_pfn = False
    per_vma: dict[int, int] = {}
    try:
        for vma in maps:
            if not measured(vma):
                continue
            nvmas += 1
            parts = list(_vma_pages(pm_fd, vma))
            if not parts:
                per_vma[vma.start] = 0
                continue
            vpn = np.concatenate([p[0] for p in parts])
            pfn = np.concatenate([p[1] for p in parts])
            any_present = True
            if not pfn.any():
                continue  # PFNs hidden: decided after the loop
            any_pfn = True
            if kf_fd < 0:
                try:
                    kf_fd = os.open(proc / "kpageflags", os.O_RDONLY)
                except OSError as e:
                    raise ContiguityError(
                        f"cannot read {proc}/kpageflags ({e.strerror}): reading page flags needs root"
                    ) from None
            runs = find_runs(vpn, pfn)
            # kpageflags of every present page: one read per run, the run's frames are consecutive
            flags = np.concatenate(
                [_pread_u64(kf_fd, int(p), int(n)) for p, n in zip(runs.pfn, runs.pages, strict=True)]
            )
            if flags.size != vpn.size:
                raise ContiguityError(f"{proc}/kpageflags is shorter than the frames {base}/pagemap names")
            keep = ((flags >> np.uint64(KPF_ZERO_PAGE)) & np.uint64(1)) == 0
            zero += int(vpn.size - keep.sum())
            if not keep.all():
                vpn, pfn, flags = vpn[keep], pfn[keep], flags[keep]
                runs = find_runs(vpn, pfn)
            per_vma[vma.start] = int(vpn.size)
            sizes.append(runs.pages)
            anon.append(np.full(runs.pages.size, vma.anonymous))
            vsizes.append(find_runs(vpn, vpn).pages)
            for size, n in huge_entries(vpn, pfn, flags).items():
                huge[size] += n
    except ProcessLookupError:
        raise _gone(pid) from None
    finally:
        os.close(pm_fd)
        if kf_fd >= 0:
            os.close(kf_fd)
    if any_present and not any_pfn:
        raise ContiguityError(
            f"{base}/pagemap shows present pages but every frame number is zero: reading physical frames needs root (CAP_SYS_ADMIN)"
        )
    pmd = None
    if smaps:
        try:
            sm = read_smaps(pid, proc)
        except (FileNotFoundError, ProcessLookupError):
            raise _gone(pid) from None
        kb = sum(
            v.get(k, 0) for v in sm.values() for k in ("AnonHugePages", "ShmemPmdMapped", "FilePmdMapped")
        )
        pmd = kb * 1024 // PAGE_SIZE
    all_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
    all_anon = np.concatenate(anon) if anon else np.zeros(0, dtype=bool)
    all_v = np.concatenate(vsizes) if vsizes else np.zeros(0, dtype=np.int64)
    return Sample(pid, t, all_sizes, zero, huge, nvmas, pmd, per_vma, all_anon, all_v)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _exits(pid: int, timeout: float) -> bool:
    """Whether ``pid`` stops running within ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def sample_pid(
    pid: int, interval: float = 1.0, samples: int = 1, on_sample: Callable[[Sample], None] | None = None
) -> list[Sample]:
    """Scan a running process ``samples`` times, ``interval`` seconds apart. Stops early (keeping
    what it has) if the process exits after the first scan."""
    if interval <= 0:
        raise ContiguityError(f"the interval must be a positive number of seconds, not {interval}")
    if samples < 1:
        raise ContiguityError(f"the number of samples must be at least 1, not {samples}")
    if not _alive(pid):
        raise _gone(pid)
    out: list[Sample] = []
    t0 = time.monotonic()
    for k in range(samples):
        if k:
            time.sleep(interval)
        try:
            s = sample(pid, t=time.monotonic() - t0)
        except (ProcessGone, ProcessLookupError, FileNotFoundError):
            if out and _exits(pid, 2.0):
                break
            raise
        if out and not _alive(pid):
            break  # exited during the scan: the scan may be partial, drop it
        out.append(s)
        if on_sample:
            on_sample(s)
    return out


def monitor(
    argv: Sequence[str],
    interval: float = 1.0,
    samples: int | None = None,
    on_sample: Callable[[Sample], None] | None = None,
    stdout: int | None = None,
) -> tuple[list[Sample], int]:
    """Run a program and scan it every ``interval`` seconds while it runs (at most ``samples``
    scans). Returns the scans and the program's exit status. Only the started process is scanned,
    not its children. ``stdout`` is the program's standard output (a file descriptor; default
    ours)."""
    if interval <= 0:
        raise ContiguityError(f"the interval must be a positive number of seconds, not {interval}")
    if samples is not None and samples < 1:
        raise ContiguityError(f"the number of samples must be at least 1, not {samples}")
    if not argv:
        raise ContiguityError("no program to run after --")
    try:
        proc = subprocess.Popen(list(argv), stdout=stdout)
    except OSError as e:
        raise ContiguityError(f"cannot start {argv[0]}: {e.strerror or e}") from None
    out: list[Sample] = []
    t0 = time.monotonic()
    try:
        while samples is None or len(out) < samples:
            try:
                proc.wait(timeout=interval)
                break
            except subprocess.TimeoutExpired:
                pass
            try:
                s = sample(proc.pid, t=time.monotonic() - t0)
            except (ProcessGone, ProcessLookupError, FileNotFoundError) as err:
                try:  # an exiting process loses its memory before it is a zombie: give it a moment
                    proc.wait(timeout=2.0)
                except subprocess.TimeoutExpired:
                    raise err from None  # the error was not the exit
                break
            if proc.poll() is not None:
                break  # exited during the scan: the scan may be partial, drop it
            out.append(s)
            if on_sample:
                on_sample(s)
        rc = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out, rc


def plot_coverage(curves: dict[str, Sequence[int] | np.ndarray], path: str | Path, title: str = "") -> None:
    """Plot % of memory mapped against the number of ranges (largest first), one line per label
    (``{label: range sizes}``), to a PNG. Needs matplotlib."""
    from xlat._optional import need_pyplot

    plt = need_pyplot()

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, sizes in curves.items():
        x, y = coverage_curve(sizes)
        if x.size:
            ax.step(np.concatenate(([0], x)), np.concatenate(([0.0], y)), where="post", label=label)
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(left=0)
    ax.set_ylim(0, 100.5)
    ax.axhline(99, color="grey", lw=0.6, ls="--")
    ax.set_xlabel("number of ranges (largest first)")
    ax.set_ylabel("memory mapped (% of present pages)")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
