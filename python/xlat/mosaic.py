"""Run unmodified programs on a chosen mosaic of 4KB, 2MB and 1GB pages, and check that they got it.

``run`` starts a program with ``libxlat_mosaic.so`` preloaded (native/mosaic, docs/mosaic.md) and the
layout passed in ``XLAT_MOSAIC_*`` environment variables.  ``verify`` reads the ``/proc/PID/smaps``
the library saved when the program exited and reports, per window, the page size actually obtained.
``reserve``/``status``/``release`` manage the kernel's hugetlb pools.

Nothing here imports :mod:`xlat._native`; this module works before the Rust extension is built.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .layout import PAGE_NAMES, PAGE_SIZES, Layout, LayoutError, format_size, load_layout, parse_size

#: exit status of ``xlat run --verify`` when the program succeeded but the layout was not honoured
EXIT_NOT_HONOURED = 3
#: exit status for errors detected before the program starts (bad layout, missing program, ...)
EXIT_USAGE = 2

_SYSFS = "/sys/kernel/mm/hugepages/hugepages-{kb}kB"
_PAGE_KB = {"2MB": 2048, "1GB": 1048576}


class MosaicError(Exception):
    """A problem for the user to fix; ``str(err)`` is one sentence."""


# ---- the library -----------------------------------------------------------------------------------


def library_path() -> Path:
    """Path of libxlat_mosaic.so: ``XLAT_MOSAIC_LIB`` if set, else the one next to this package
    (``xlat/_lib/``, where ``make -C native/mosaic`` puts it)."""
    env = os.environ.get("XLAT_MOSAIC_LIB")
    path = Path(env) if env else Path(__file__).resolve().parent / "_lib" / "libxlat_mosaic.so"
    if not path.is_file():
        raise MosaicError(f"the mosaic library {path} is not built; run `make -C native/mosaic`.")
    return path.resolve()


# ---- huge pages --------------------------------------------------------------------------------------


def _page_name(page: str | int) -> str:
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
    name = _page_name(page)
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
            _write_int("/proc/sys/vm/compact_memory", 1)
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
    names = [_page_name(page)] if page is not None else list(_PAGE_KB)
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


# ---- running a program ------------------------------------------------------------------------------


def _resolve_program(prog: str) -> str:
    if "/" in prog:
        if not os.path.isfile(prog):
            raise MosaicError(f"program '{prog}' does not exist.")
        if not os.access(prog, os.X_OK):
            raise MosaicError(f"program '{prog}' is not executable.")
        return prog
    found = shutil.which(prog)
    if not found:
        raise MosaicError(f"program '{prog}' was not found on PATH.")
    return found


def mosaic_env(
    layout: Layout,
    mode: str = "hugetlb",
    best_effort: bool = False,
    report_dir: str | None = None,
    base: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment that runs a program under ``layout`` (the preload plus XLAT_MOSAIC_*)."""
    env = dict(os.environ if base is None else base)
    lib = str(library_path())
    old = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib + (" " + old if old else "")
    env.update(layout.to_env())
    env["XLAT_MOSAIC_MODE"] = mode
    env["XLAT_MOSAIC_BEST_EFFORT"] = "1" if best_effort else "0"
    if report_dir:
        env["XLAT_MOSAIC_REPORT"] = report_dir
    else:
        env.pop("XLAT_MOSAIC_REPORT", None)
    return env


def run(
    layout: Layout | str | Path,
    argv: list[str],
    mode: str = "hugetlb",
    verify: bool = False,
    best_effort: bool = False,
    *,
    report_to=None,
    reports: list | None = None,
    stdout=None,
    stderr=None,
) -> int:
    """Run ``argv`` with its memory backed by ``layout``; returns the program's exit status
    (128 + N if killed by signal N).  With ``verify``, a per-window report goes to ``report_to``
    (default stderr), the :class:`VerifyReport` is appended to ``reports`` if given, and a program
    that succeeded but did not get its layout returns 3.  ``stdout``/``stderr`` go to the program.

    Raises :class:`MosaicError` or :class:`LayoutError` (one sentence) before the program starts
    if it cannot be run as asked."""
    if not isinstance(layout, Layout):
        layout = load_layout(layout)
    if not argv:
        raise MosaicError("no program was given to run.")
    if not best_effort:
        check_huge_pages(layout, mode)
    elif mode not in ("hugetlb", "thp"):
        raise MosaicError(f"mode {mode!r} is not hugetlb or thp.")
    prog = _resolve_program(argv[0])
    report_dir = tempfile.mkdtemp(prefix="xlat-mosaic-") if verify else None
    env = mosaic_env(layout, mode, best_effort, report_dir)
    try:
        try:
            # argv[0] as the user wrote it (some programs look at it), the resolved path to exec
            proc = subprocess.Popen(list(argv), env=env, stdout=stdout, stderr=stderr, executable=prog)
        except OSError as err:
            raise MosaicError(f"program '{argv[0]}' could not be started ({err.strerror}).") from None
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:
                # the child got the same SIGINT; wait for it so that its report is complete
                continue
        if rc < 0:
            rc = 128 - rc
        if verify:
            rep = verify_report(report_dir, proc.pid, layout, mode)
            print(rep.format(), file=report_to or sys.stderr, end="")
            if reports is not None:
                reports.append(rep)
            if not rep.honoured and rc == 0:
                rc = EXIT_NOT_HONOURED
        return rc
    finally:
        if report_dir:
            shutil.rmtree(report_dir, ignore_errors=True)


# ---- verification ----------------------------------------------------------------------------------


@dataclass
class Vma:
    start: int
    end: int
    kernel_page_kb: int = 4
    rss_kb: int = 0
    anon_huge_kb: int = 0
    hugetlb_kb: int = 0
    thp_eligible: int | None = None  # None: the kernel does not report THPeligible


def parse_smaps(text: str) -> list[Vma]:
    """The VMAs of an smaps file with the fields verification needs."""
    vmas: list[Vma] = []
    for line in text.splitlines():
        head = line.split(None, 1)[0] if line else ""
        if "-" in head and ":" not in head:
            a, b = head.split("-")
            vmas.append(Vma(int(a, 16), int(b, 16)))
            continue
        if not vmas or ":" not in line:
            continue
        key, _, rest = line.partition(":")
        val = rest.split()
        if not val:
            continue
        v = vmas[-1]
        if key == "KernelPageSize":
            v.kernel_page_kb = int(val[0])
        elif key == "Rss":
            v.rss_kb = int(val[0])
        elif key == "AnonHugePages":
            v.anon_huge_kb = int(val[0])
        elif key in ("Private_Hugetlb", "Shared_Hugetlb"):
            v.hugetlb_kb += int(val[0])
        elif key == "THPeligible":
            v.thp_eligible = int(val[0])
    return vmas


@dataclass
class MapFile:
    pid: int
    mode: str
    pools: dict[str, dict[str, int]]
    windows: dict[tuple[str, int], dict]  # (pool, offset) -> window info


def parse_map(text: str) -> MapFile:
    pid, mode, pools, windows = 0, "hugetlb", {}, {}
    for line in text.splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "pid":
            pid = int(f[1])
        elif f[0] == "mode":
            mode = f[1]
        elif f[0] == "pool":
            pools[f[1]] = {
                "start": int(f[2]),
                "size": int(f[3]),
                "brk": int(f[4]),
                "fallback_bytes": int(f[5]),
                "fallback_count": int(f[6]),
                "high_water": int(f[7]) if len(f) > 7 else 0,
            }
        elif f[0] == "window":
            windows[(f[1], int(f[2]))] = {
                "length": int(f[3]),
                "page": int(f[4]),
                "backing": f[5],
                "start": int(f[6]),
            }
    return MapFile(pid, mode, pools, windows)


@dataclass
class WindowCheck:
    """What one window (or the 4KB rest of a pool, ``index=None``) asked for and obtained."""

    pool: str
    index: int | None
    offset: int
    length: int
    requested: str
    obtained: str
    rss_kb: int
    anon_huge_kb: int
    hugetlb_kb: int
    honoured: bool
    note: str = ""


@dataclass
class VerifyReport:
    pid: int
    mode: str
    layout_name: str
    checks: list[WindowCheck] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    #: per pool, the highest offset ever handed out (how much of the pool the program reached)
    used: dict[str, int] = field(default_factory=dict)

    @property
    def honoured(self) -> bool:
        return not self.problems and all(c.honoured for c in self.checks)

    def format(self) -> str:
        lines = [f"xlat verify: pid {self.pid}, mode {self.mode}, layout '{self.layout_name}'"]
        hdr = (
            f"  {'pool':5} {'window':6} {'offset':>8} {'length':>8} {'asked':>5}  {'obtained':22} "
            f"{'rss':>10} {'anon-huge':>10} {'hugetlb':>10}  status"
        )
        lines.append(hdr)
        for c in self.checks:
            win = "rest" if c.index is None else str(c.index)
            off = "-" if c.index is None else format_size(c.offset)
            ln = "-" if c.index is None else format_size(c.length)
            st = "ok" if c.honoured else "NOT HONOURED"
            if c.note:
                st += f" ({c.note})"
            lines.append(
                f"  {c.pool:5} {win:6} {off:>8} {ln:>8} {c.requested:>5}  {c.obtained:22} "
                f"{c.rss_kb:>8}kB {c.anon_huge_kb:>8}kB {c.hugetlb_kb:>8}kB  {st}"
            )
        if self.used:
            lines.append(
                "  pool use (highest offset reached): "
                + ", ".join(f"{name} {_human(n)}" for name, n in self.used.items())
            )
        for p in self.problems:
            lines.append(f"  problem: {p}")
        lines.append("  verdict: layout honoured" if self.honoured else "  verdict: layout NOT honoured")
        return "\n".join(lines) + "\n"


def _human(n: int) -> str:
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            return f"{n / unit:.1f}{name}"
    return f"{n}B"


def _overlapping(vmas: list[Vma], a: int, b: int) -> list[Vma]:
    return [v for v in vmas if v.start < b and v.end > a]


def _kernel_sizes(vmas: list[Vma]) -> str:
    sizes = sorted({v.kernel_page_kb for v in vmas})
    return ",".join(PAGE_NAMES.get(s * 1024, f"{s}kB") for s in sizes) or "unmapped"


def check(map_text: str, smaps_text: str, layout: Layout, mode: str | None = None) -> VerifyReport:
    """Compare the pools described by a map file with an smaps snapshot of the same process."""
    m = parse_map(map_text)
    vmas = parse_smaps(smaps_text)
    rep = VerifyReport(pid=m.pid, mode=mode or m.mode, layout_name=layout.name or layout.source)
    for pool in layout.pools:
        info = m.pools.get(pool.name)
        if info is None:
            rep.problems.append(f"the library did not report the {pool.name} pool.")
            continue
        if info["size"] != pool.size:
            rep.problems.append(
                f"the {pool.name} pool has {info['size']} bytes, not the {pool.size} asked for."
            )
        if info["fallback_count"]:
            rep.problems.append(
                f"{info['fallback_count']} mappings ({format_size(info['fallback_bytes'])}) did not fit in the "
                f"{pool.name} pool and were placed by the kernel on 4KB pages."
            )
        base = info["start"]
        rep.used[pool.name] = info["high_water"]
        huge_ranges = []
        for idx, w in enumerate(pool.windows):
            a, b = base + w.offset, base + w.end
            if w.page_name == "4KB":
                continue  # checked with the rest of the pool
            huge_ranges.append((a, b))
            mw = m.windows.get((pool.name, w.offset))
            ov = _overlapping(vmas, a, b)
            rss = sum(v.rss_kb for v in ov)
            ahp = sum(v.anon_huge_kb for v in ov)
            htlb = sum(v.hugetlb_kb for v in ov)
            backing = mw["backing"] if mw else "missing"
            covered = sum(min(v.end, b) - max(v.start, a) for v in ov)
            note, ok = "", True
            if backing == "hugetlb":
                want_kb = w.page // 1024
                ok = covered == w.length and all(v.kernel_page_kb == want_kb for v in ov)
                obtained = f"{_kernel_sizes(ov)} (hugetlb)"
                if covered != w.length:
                    note = "window partly unmapped"
                elif htlb == 0:
                    note = "reserved, untouched"
            elif backing == "thp":
                ok = all(v.thp_eligible != 0 for v in ov) and ahp >= rss and w.page_name == "2MB"
                obtained = f"{format_size(ahp * 1024) if ahp else '0'} in 2MB THPs"
                if w.page_name != "2MB":
                    note = "thp mode has no 1GB pages (best effort gave 2MB)"
                elif rss == 0:
                    note = "untouched"
                elif ahp < rss:
                    note = f"{rss - ahp}kB on 4KB pages"
            else:
                ok = False
                obtained = f"{_kernel_sizes(ov)} ({backing})"
                note = "huge pages were not obtained"
            rep.checks.append(
                WindowCheck(
                    pool.name, idx, w.offset, w.length, w.page_name, obtained, rss, ahp, htlb, ok, note
                )
            )
        # the rest of the pool must be plain 4KB memory
        pa, pb = base, base + pool.size
        rest = []
        for v in _overlapping(vmas, pa, pb):
            if any(v.start >= a and v.end <= b for a, b in huge_ranges):
                continue
            rest.append(v)
        ok = all(v.kernel_page_kb == 4 and v.anon_huge_kb == 0 for v in rest)
        rep.checks.append(
            WindowCheck(
                pool.name,
                None,
                0,
                pool.size,
                "4KB",
                _kernel_sizes(rest),
                sum(v.rss_kb for v in rest),
                sum(v.anon_huge_kb for v in rest),
                sum(v.hugetlb_kb for v in rest),
                ok,
                "" if ok else "huge pages outside the windows",
            )
        )
    return rep


def verify_report(report_dir: str | Path, pid: int, layout: Layout, mode: str | None = None) -> VerifyReport:
    """Verify the process ``pid`` from the files its library wrote into ``report_dir`` at exit."""
    d = Path(report_dir)
    mp, sm = d / f"map.{pid}", d / f"smaps.{pid}"
    if not mp.exists() or not sm.exists():
        rep = VerifyReport(pid=pid, mode=mode or "?", layout_name=layout.name or layout.source)
        rep.problems.append(
            "the program left no smaps snapshot (it ended without exit(), e.g. killed or _exit(), or "
            "was not dynamically linked)."
        )
        return rep
    return check(mp.read_text(), sm.read_text(), layout, mode)


def verify_live(pid: int, report_dir: str | Path, layout: Layout) -> VerifyReport:
    """Verify a running process now (on demand), from its map file and its live /proc/PID/smaps."""
    mp = Path(report_dir) / f"map.{pid}"
    try:
        smaps = Path(f"/proc/{pid}/smaps").read_text()
    except OSError as err:
        raise MosaicError(f"cannot read /proc/{pid}/smaps ({err.strerror}).") from None
    if not mp.exists():
        raise MosaicError(
            f"process {pid} has no map file in {report_dir}; was it run with XLAT_MOSAIC_REPORT?"
        )
    return check(mp.read_text(), smaps, layout)


# ---- command line --------------------------------------------------------------------------------


def _fail(msg: str) -> int:
    print(f"xlat: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def _cmd_run(args: argparse.Namespace) -> int:
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    try:
        return run(args.layout, argv, mode=args.mode, verify=args.verify, best_effort=args.best_effort)
    except (MosaicError, LayoutError) as err:
        return _fail(str(err))


def _cmd_hugepages(args: argparse.Namespace) -> int:
    try:
        if args.hp_command == "reserve":
            amount: int | str = int(args.amount) if args.amount.isdigit() else args.amount
            got = reserve(amount, args.page)
            print(f"reserved {got} more {_page_name(args.page)} huge pages")
        elif args.hp_command == "release":
            out = release(args.count, args.page)
            for name, n in out.items():
                print(f"released {n} {name} huge pages")
        else:
            st = status()
            print(f"{'size':5} {'total':>7} {'free':>7} {'reserved':>9} {'available':>10}")
            for name, s in st.items():
                print(f"{name:5} {s['total']:>7} {s['free']:>7} {s['reserved']:>9} {s['available']:>10}")
        return 0
    except MosaicError as err:
        return _fail(str(err))


def register_cli(subparsers) -> None:
    """Add ``run`` and ``hugepages`` to an argparse subparsers object; each parser's ``func``
    default takes the parsed namespace and returns the process exit status."""
    p = subparsers.add_parser(
        "run",
        help="run a program with its memory backed by a page-size layout",
        description="Run an unmodified, dynamically linked program with its heap, anonymous and file "
        "mappings served from pools backed by the layout's mosaic of 4KB/2MB/1GB pages.",
    )
    p.add_argument(
        "--layout", required=True, metavar="LAYOUT.toml", help="layout file (docs/layout-format.md)"
    )
    p.add_argument(
        "--mode",
        choices=("hugetlb", "thp"),
        default="hugetlb",
        help="hugetlb: MAP_HUGETLB pages reserved up front (default); thp: madvise(MADV_HUGEPAGE)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="report per window the page sizes obtained (from smaps at exit); exit 3 if not honoured",
    )
    p.add_argument(
        "--best-effort",
        action="store_true",
        help="run even if huge pages are missing, on 4KB pages where needed",
    )
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    p.set_defaults(func=_cmd_run)

    h = subparsers.add_parser("hugepages", help="reserve, show or release the kernel's huge pages")
    hs = h.add_subparsers(dest="hp_command", required=True)
    r = hs.add_parser("reserve", help="add huge pages to the kernel pool (root)")
    r.add_argument("amount", help="number of pages, or a size such as 4GiB")
    r.add_argument("--page", default="2MB", choices=("2MB", "1GB"))
    hs.add_parser("status", help="show huge pages per size")
    rl = hs.add_parser("release", help="give free huge pages back to the kernel (root)")
    rl.add_argument("count", nargs="?", type=int, default=None, help="how many (default: all free)")
    rl.add_argument("--page", default=None, choices=("2MB", "1GB"))
    h.set_defaults(func=_cmd_hugepages)


def main(argv: list[str] | None = None) -> int:
    """``python -m xlat.mosaic run|hugepages ...``: the same commands without the main xlat CLI."""
    parser = argparse.ArgumentParser(prog="xlat")
    sub = parser.add_subparsers(dest="command", required=True)
    register_cli(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
