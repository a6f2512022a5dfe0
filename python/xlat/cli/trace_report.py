"""What ``xlat trace`` says after a run: one line per trace written, a warning for processes whose
exec'd program was not traced, and the one sentence of a ``--timeout``."""

from __future__ import annotations

import sys
from typing import Any

from xlat.cli.common import mib

#: Exit status when --timeout stopped the program (as timeout(1) uses).
TIMEOUT_STATUS = 124


def process_lines(r: dict[str, Any]) -> list[str]:
    """One line per trace: accesses, syscalls, threads, size (bytes per access only when there
    are accesses to divide by)."""
    lines = []
    for p in r["processes"]:
        if p["path"] is None:
            lines.append(f"pid {p['pid']}: nothing recorded before it ran another program; no trace written")
            continue
        size = mib(p["bytes"])
        if p["accesses"]:
            size += f" ({p['bytes'] / p['accesses']:.2f} bytes/access)"
        note = " (stopped at --max)" if p["hit_max"] else " (cut short)" if p["truncated"] else ""
        if (
            not p.get("exited", True)
            and not p["hit_max"]
            and not r.get("timed_out")
            and not r["stopped_at_max"]
        ):
            note += " (ran another program: see the warning below)"
        lines.append(
            f"wrote {p['path']}: pid {p['pid']}, {p['accesses']:,} accesses, "
            f"{p['side_events']:,} syscalls, {p['threads']} thread(s), {size}{note}"
        )
    return lines


def exec_warning(r: dict[str, Any]) -> str | None:
    """The warning for processes that replaced themselves with another program (execve): QEMU
    user mode runs that program natively, so nothing of it is in any trace."""
    if r.get("timed_out") or r["stopped_at_max"] or r.get("interrupted"):
        return None
    pids = [p["pid"] for p in r["processes"] if not p.get("exited", True) and not p["hit_max"]]
    if not pids:
        return None
    which = ", ".join(str(p) for p in pids)
    return (
        f"xlat: warning: process(es) {which} ran another program (execve) or were killed before "
        "exiting; programs started with execve run outside QEMU and are not traced (to trace one, "
        "run xlat trace on that program itself; docs/tracing.md)"
    )


def report(r: dict[str, Any], argv: list[str], max_accesses: int | None, timeout: float | None) -> int:
    """Print the summary on stderr; the exit status of ``xlat trace``."""
    for line in process_lines(r):
        print(line, file=sys.stderr)
    total = sum(p["accesses"] for p in r["processes"])
    rate = f"{total / r['seconds'] / 1e6:.1f} M accesses/s" if r["seconds"] > 0 else "no time"
    print(f"traced in {r['seconds']:.1f} s ({rate})", file=sys.stderr)
    warn = exec_warning(r)
    if warn:
        print(warn, file=sys.stderr)
    if r.get("timed_out"):
        print(
            f"xlat: error: {argv[0]} was still running after --timeout {timeout:g} s: stopped it (and its "
            f"children); the trace up to then is kept in {r['processes'][0]['path'] if r['processes'] else 'no file'}",
            file=sys.stderr,
        )
        return TIMEOUT_STATUS
    if r["stopped_at_max"]:
        print(f"stopped {argv[0]} after {max_accesses:,} accesses (--max)", file=sys.stderr)
        return 0
    return int(r["status"])
