"""The kernel's hugetlb pools: how many huge pages of each size there are (``status``), adding
(``reserve``) and giving back (``release``) pages, and whether a layout can be honoured now."""

from __future__ import annotations

import math
import os
from pathlib import Path

from xlat.layout import PAGE_NAMES, PAGE_SIZES, Layout, LayoutError, parse_size
from xlat.mosaic.errors import MosaicError

_SYSFS = "/sys/kernel/mm/hugepages/hugepages-{kb}kB"
_PAGE_KB = {"2MB": 2048, "1GB": 1048576}


def page_name(page: str | int) -> str:
    if isinstance(page, int):
        if page not in PAGE_NAMES or page == PAGE_SIZES["4KB"]:
            raise MosaicError(f"huge page size {page} is not 2MB or 1GB.")
        return PAGE_NAMES[page]
    norm = page.upper().replace("IB", "B")
    if norm not in _PAGE_KB:
        raise MosaicError(f"huge page size {page!r} is not 2MB or 1GB.")
    return norm


def _read_int(path: str) -> int:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except FileNotFoundError:
        raise MosaicError(f"{path} does not exist: this kernel does not offer that huge page size.") from None


def _write_int(path: str, value: int) -> None:
    try:
        with open(path, "w") as f:
            f.write(f"{value}\n")
    except PermissionError:
        raise MosaicError(f"writing {path} needs root; run the command with sudo.") from None
    except OSError as err:
        raise MosaicError(f"writing {path} failed ({err.strerror}).") from None


def thp_fallbacks() -> int | None:
    """The kernel's count of page faults in THP-eligible memory that wanted a 2MB page and got 4KB
    ones (``thp_fault_fallback`` in /proc/vmstat: machine-wide, since boot); None if not offered."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "thp_fault_fallback":
                    return int(value)
    except OSError:
        return None
    return None


def compact() -> None:
    """Ask the kernel to compact free memory now (``/proc/sys/vm/compact_memory``; root), so that
    2MB THPs and 1GB reservations find contiguous memory.  Takes about half a second per 24 GiB."""
    _write_int("/proc/sys/vm/compact_memory", 1)


def status() -> dict[str, dict[str, int]]:
    """Per huge page size: ``total``, ``free``, ``reserved`` (promised to mappings, not yet
    faulted) and ``available`` (``free - reserved``: what a new hugetlb mapping can still get)."""
    out = {}
    for name, kb in _PAGE_KB.items():
        d = _SYSFS.format(kb=kb)
        if not os.path.isdir(d):
            continue
        total = _read_int(f"{d}/nr_hugepages")
        free = _read_int(f"{d}/free_hugepages")
        resv = _read_int(f"{d}/resv_hugepages")
        out[name] = {"total": total, "free": free, "reserved": resv, "available": free - resv}
    return out


def reserve(amount: int | str, page: str | int = "2MB") -> int:
    """Add ``amount`` huge pages of size ``page`` to the kernel pool; ``amount`` is a page count
    (int) or a size in bytes (``"4GiB"``).  Returns the pages actually added and raises
    :class:`MosaicError` if the kernel could not find them all (memory too fragmented)."""
    name = page_name(page)
    size = PAGE_SIZES[name]
    if isinstance(amount, str):
        try:
            count = math.ceil(parse_size(amount, "the amount to reserve") / size)
        except LayoutError as err:
            raise MosaicError(str(err)) from None
    else:
        count = int(amount)
    if count < 0:
        raise MosaicError(f"cannot reserve a negative number of pages ({count}).")
    path = f"{_SYSFS.format(kb=_PAGE_KB[name])}/nr_hugepages"
    before = _read_int(path)
    _write_int(path, before + count)
    got = _read_int(path) - before
    if got < count and name == "1GB":
        # 1GB pages need 1GB of contiguous free memory; compaction may find it
        try:
            compact()
        except MosaicError:
            pass
        _write_int(path, before + count)
        got = _read_int(path) - before
    if got < count:
        _write_int(path, before)  # all or nothing: give back the pages that were found
        raise MosaicError(
            f"the kernel found only {got} of the {count} {name} huge pages asked for (memory is too "
            f"fragmented; {name} pages are best reserved soon after boot)."
        )
    return got


def release(count: int | None = None, page: str | int | None = None) -> dict[str, int]:
    """Give ``count`` huge pages (default: all free ones) of ``page`` size (default: both sizes)
    back to the kernel; pages in use stay until their mappings go.  Returns pages released per size."""
    names = [page_name(page)] if page is not None else list(_PAGE_KB)
    out = {}
    for name in names:
        d = _SYSFS.format(kb=_PAGE_KB[name])
        if not os.path.isdir(d):
            continue
        total = _read_int(f"{d}/nr_hugepages")
        target = 0 if count is None else max(0, total - count)
        _write_int(f"{d}/nr_hugepages", target)
        out[name] = total - _read_int(f"{d}/nr_hugepages")
    return out


def check_huge_pages(layout: Layout, mode: str) -> None:
    """Raise :class:`MosaicError` if ``layout`` cannot be honoured in ``mode`` on this machine."""
    if mode not in ("hugetlb", "thp"):
        raise MosaicError(f"mode {mode!r} is not hugetlb or thp.")
    need = layout.huge_pages_needed()
    if mode == "thp":
        if need["1GB"]:
            pool, idx = next(
                (p.name, i) for p in layout.pools for i, w in enumerate(p.windows) if w.page_name == "1GB"
            )
            raise MosaicError(
                f"pool '{pool}' window {idx} asks for 1GB pages, which thp mode cannot provide; use "
                "--mode hugetlb (or --best-effort to get 2MB pages there)."
            )
        enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled")
        if need["2MB"] and enabled.exists() and "[never]" in enabled.read_text():
            raise MosaicError(
                "transparent huge pages are disabled on this machine ([never]); use --mode hugetlb."
            )
        return
    have = status()
    for name, n in need.items():
        if not n:
            continue
        avail = have.get(name, {}).get("available", 0)
        if avail < n:
            flag = "" if name == "2MB" else " --page 1GB"
            raise MosaicError(
                f"the layout needs {n} free {name} huge pages but only {avail} are available; run "
                f"`xlat hugepages reserve {n - avail}{flag}` (as root) first."
            )


def fork_note(layout: Layout, mode: str) -> str | None:
    """One sentence for the user before a hugetlb-mode program starts, if the huge pages left over
    beyond the layout's cannot cover a child process: a forked child shares the parent's hugetlb
    pages copy-on-write and needs a free huge page for each one either of them writes after the
    fork (Linux gives the parent priority and kills the child with SIGBUS when none is left), and an
    exec'd child gets pools of its own that reserve the layout's pages again.  None if the spare
    pages could back one more copy of the layout (or nothing uses hugetlb pages)."""
    if mode != "hugetlb":
        return None
    need = layout.huge_pages_needed()
    have = status()
    short = []
    for name, n in need.items():
        if n:
            spare = have.get(name, {}).get("available", 0) - n
            if spare < n:
                short.append((name, n, max(spare, 0)))
    if not short:
        return None
    name, n, spare = short[0]
    flag = "" if name == "2MB" else " --page 1GB"
    return (
        f"the layout takes {n} of the {n + spare} free {name} huge pages, so a forked child that "
        f"writes to huge pages it shares with its parent is killed with SIGBUS once the {spare} spare "
        f"ones are used up (each copy-on-write takes one), and an exec'd child needs {n} more; "
        f"`xlat hugepages reserve {n - spare}{flag}` makes room for one such child."
    )
