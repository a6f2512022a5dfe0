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
    #: what the library last recorded: "start" (still running, or it ended without exiting:
    #: killed, or exec'd a program without the library), "exit", "demand" or "fatal"
    event: str = "start"
    #: the status passed to exit()/_exit() (or returned by main), 127 for "fatal"; None if unknown
    status: int | None = None
    exe: str = ""
    ppid: int = 0
    #: the library's sentence for a "fatal" event
    message: str = ""
    #: the program an "exec" event replaced the process with
    target: str = ""
    #: the process's CPU time (ns) when the library's start-up ended (pools mapped and prefaulted)
    cpu_start_ns: int | None = None
    #: its CPU time (ns) at an "exit" or "demand" event, taken before the report was written
    cpu_ns: int | None = None
    #: its minor page faults when start-up ended, and at the "exit" or "demand" event
    minflt_start: int | None = None
    minflt: int | None = None


def parse_map(text: str) -> MapFile:
    pid, mode, pools, windows = 0, "hugetlb", {}, {}
    extra: dict = {}
    for line in text.splitlines():
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if f[0] == "pid":
            pid = int(f[1])
        elif f[0] == "ppid":
            extra["ppid"] = int(f[1])
        elif f[0] == "exe":
            extra["exe"] = line.partition(" ")[2]
        elif f[0] == "event":
            extra["event"] = f[1]
        elif f[0] in ("status", "cpu_start_ns", "cpu_ns", "minflt_start", "minflt"):
            extra[f[0]] = int(f[1])
        elif f[0] in ("message", "target"):
            extra[f[0]] = line.partition(" ")[2]
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
    return MapFile(pid, mode, pools, windows, **extra)


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
    #: the executable (from the library's map file; empty if unknown)
    exe: str = ""
    #: how the process ended, one phrase ("exit status 0", "killed by signal 7 (SIGBUS)", ...)
    ending: str = ""
    #: True if the process did not end with status 0 (including killed, stopped by the library,
    #: or ended without an exit report); False if it exited with 0 or is still running. The
    #: process's own business: the layout's verdict is ``honoured``/``verified``.
    failed: bool = False
    #: False when the process left no pages to check (killed before its exit report: a pipeline's
    #: writer by SIGPIPE, say); its layout is then neither honoured nor refuted
    verified: bool = True
    #: thp mode: the kernel's 2MB-to-4KB fault fallbacks during the run (machine-wide, from
    #: /proc/vmstat; None if not measured): why a THP window can end up partly on 4KB pages
    thp_fallbacks: int | None = None

    @property
    def honoured(self) -> bool:
        """The layout held in this process (page sizes per window, nothing outside the pools)."""
        return not self.problems and all(c.honoured for c in self.checks)

    def title(self) -> str:
        """``pid 12 (cc1): exit status 1``, short, for the run's verdict."""
        name = f" ({Path(self.exe).name})" if self.exe else ""
        ending = f": {self.ending}" if self.ending else ""
        return f"pid {self.pid}{name}{ending}"

    def format(self, verdict: bool = True) -> str:
        """The per-window table.  The last line is this process's verdict, or with
        ``verdict=False`` (one process of several: the run's verdict comes after them all) its
        result, which never says "honoured" by itself."""
        name = f" ({self.exe})" if self.exe else ""
        ending = f", {self.ending}" if self.ending else ""
        lines = [f"xlat verify: pid {self.pid}{name}{ending}, mode {self.mode}, layout '{self.layout_name}'"]
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
        if self.thp_fallbacks and any(not c.honoured and c.anon_huge_kb < c.rss_kb for c in self.checks):
            lines.append(
                f"  cause: the kernel fell back to 4KB pages on {self.thp_fallbacks} THP faults during the "
                "run (thp_fault_fallback in /proc/vmstat, machine-wide): free memory was too fragmented "
                "for 2MB pages; run with --compact, or use --mode hugetlb"
            )
        head = "  verdict: " if verdict else "  result: "
        held = "pages as laid out" if self.honoured else "layout NOT honoured"
        if not self.verified:
            held = "layout not verified (no exit report)"
        elif not self.checks and not self.problems:
            held = "no pages to check"
        if verdict and self.honoured:
            held = "layout honoured"
        # The layout's verdict first, then how the process ended (its own business).
        lines.append(f"{head}{held}" + (f" ({self.ending})" if self.failed else ""))
        return "\n".join(lines) + "\n"


def _human(n: int) -> str:
    for unit, name in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= unit:
            return f"{n / unit:.1f}{name}"
    return f"{n}B"


def _overlapping(vmas: list[Vma], a: int, b: int) -> list[Vma]:
    return [v for v in vmas if v.start < b and v.end > a]


def _unions(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The ranges merged where they touch or overlap, sorted."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


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
            # Windows that touch and get the same advice are one VMA to the kernel (thp): smaps
            # gives its figures for all of it, which this row shows, and says so.
            shared = any(v.start < a or v.end > b for v in ov)
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
            if shared and backing != "hugetlb":
                note = ", ".join(x for x in (note, "figures of a VMA that extends past the window") if x)
            rep.checks.append(
                WindowCheck(
                    pool.name, idx, w.offset, w.length, w.page_name, obtained, rss, ahp, htlb, ok, note
                )
            )
        # the rest of the pool must be plain 4KB memory (a VMA within windows that touch is theirs)
        pa, pb = base, base + pool.size
        rest = []
        for v in _overlapping(vmas, pa, pb):
            if any(v.start >= a and v.end <= b for a, b in _unions(huge_ranges)):
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


@dataclass
class RunReport:
    """Every process of one ``xlat run``: the program, and each process it forked or exec'd that
    loaded the library (in the order of their pids, the program first)."""

    processes: list[VerifyReport]
    #: processes still running when the program ended (pid, executable): not verified
    running: list[tuple[int, str]] = field(default_factory=list)

    @property
    def failed(self) -> list[VerifyReport]:
        return [r for r in self.processes if r.failed]

    @property
    def not_honoured(self) -> list[VerifyReport]:
        """Processes whose pages were checked and did not follow the layout, or that ran without
        it (stopped by the library, or an exec'd program without it)."""
        return [r for r in self.processes if r.verified and not r.honoured]

    @property
    def unverified(self) -> list[VerifyReport]:
        return [r for r in self.processes if not r.verified]

    @property
    def honoured(self) -> bool:
        """The layout's verdict: no process refutes it (processes killed before their exit report
        are not verified and listed; exit statuses are the processes' own business)."""
        return not self.not_honoured

    def verdict(self) -> str:
        n = len(self.processes)
        if self.not_honoured:
            text = (
                f"layout NOT honoured in {len(self.not_honoured)} of {n} processes ("
                + ", ".join(f"pid {r.pid}" for r in self.not_honoured)
                + ")"
            )
        elif self.unverified:
            k = n - len(self.unverified)
            text = (
                f"layout honoured in {k} of {n} processes, not verified in {len(self.unverified)} ("
                + "; ".join(r.title() for r in self.unverified)
                + ")"
            )
        else:
            text = "layout honoured" + (f" in all {n} processes" if n > 1 else "")
        others = [r for r in self.failed if r.verified]
        if others:
            text += (
                f"; {len(others)} of {n} processes ended otherwise than with exit status 0 ("
                + "; ".join(r.title() for r in others)
                + ")"
            )
        if self.running:
            text += (
                f" ({len(self.running)} still running when the program ended, not verified: "
                + ", ".join(f"pid {pid} ({exe})" if exe else f"pid {pid}" for pid, exe in self.running)
                + ")"
            )
        return text

    def format(self) -> str:
        single = len(self.processes) == 1 and not self.running
        out = "".join(r.format(verdict=single) for r in self.processes)
        if not single:
            out += f"xlat verify: {len(self.processes)} processes: verdict: {self.verdict()}\n"
        return out


_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE"}
_SIGNALS.update({9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM"})


def _ending(m: MapFile | None, rc: int | None) -> tuple[str, bool]:
    """How a process ended, and whether that is a failure.  ``rc`` is the status its parent saw
    (128 + N for signal N), known for the program itself only."""
    if m is not None and m.event == "exec" and rc is None:
        return "replaced by a program without the library", False
    if m is not None and m.event == "fatal":
        return f"stopped before it ran: {m.message.rstrip('.') or 'exit status 127'}", True
    if rc is not None and rc > 128:
        sig = rc - 128
        return f"killed by signal {sig}" + (f" ({_SIGNALS[sig]})" if sig in _SIGNALS else ""), True
    status = rc if rc is not None else (m.status if m is not None and m.event == "exit" else None)
    if status is None:
        return "ended without an exit report", True
    return f"exit status {status}", status != 0


def _alive(pid: int, exe: str) -> bool:
    try:
        return not exe or Path(f"/proc/{pid}/exe").resolve() == Path(exe)
    except OSError:
        return False


def verify_run(
    report_dir: str | Path,
    top_pid: int,
    top_rc: int,
    layout: Layout,
    mode: str | None = None,
    thp_fallbacks: int | None = None,
) -> RunReport:
    """Verify every process that left a map file in ``report_dir`` (the library writes one per
    process: the program, forked children, exec'd images); ``top_rc`` is the program's own exit
    status (128 + N if killed by signal N); ``thp_fallbacks``, the kernel's THP fault fallbacks
    counted during the run, goes into every process's report."""
    d = Path(report_dir)
    pids = sorted(int(p.name.split(".", 1)[1]) for p in d.glob("map.*") if p.name.split(".", 1)[1].isdigit())
    if top_pid not in pids:
        pids.insert(0, top_pid)
    else:
        pids.remove(top_pid)
        pids.insert(0, top_pid)
    run = RunReport([])
    for pid in pids:
        mp = d / f"map.{pid}"
        m = parse_map(mp.read_text()) if mp.exists() else None
        if pid != top_pid and m is not None and m.event == "start" and Path(f"/proc/{pid}").exists():
            if _alive(pid, m.exe):
                run.running.append((pid, m.exe))
                continue
        if m is not None and m.event in ("fatal", "exec"):
            rep = VerifyReport(pid=pid, mode=mode or m.mode, layout_name=layout.name or layout.source)
            if m.event == "fatal":
                rep.problems.append(
                    f"the library stopped it before it ran: {m.message.rstrip('.') or 'exit status 127'}."
                )
            if m.event == "exec":
                rep.problems.append(
                    f"it exec'd {m.target or 'a program'}, which did not load the library (statically "
                    "linked, or run with a cleared environment): that program ran without the layout."
                )
        else:
            rep = verify_report(d, pid, layout, mode)
        rep.exe = m.exe if m is not None else ""
        rep.ending, rep.failed = _ending(m, top_rc if pid == top_pid else None)
        rep.thp_fallbacks = thp_fallbacks
        run.processes.append(rep)
    return run


def verify_report(report_dir: str | Path, pid: int, layout: Layout, mode: str | None = None) -> VerifyReport:
    """Verify the process ``pid`` from the files its library wrote into ``report_dir`` at exit."""
    d = Path(report_dir)
    mp, sm = d / f"map.{pid}", d / f"smaps.{pid}"
    if not mp.exists() or not sm.exists():
        rep = VerifyReport(
            pid=pid, mode=mode or "?", layout_name=layout.name or layout.source, verified=False
        )
        rep.problems.append(
            "the process left no smaps snapshot (it did not end with exit(): it was killed by a "
            "signal, exec'd a program that does not load the library, or was not dynamically linked)."
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
