"""Verification: per window of a layout, the page size a process actually got, from the map file
the library writes and ``/proc/PID/smaps``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from xlat.layout import PAGE_NAMES, Layout, format_size
from xlat.mosaic.errors import MosaicError


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
