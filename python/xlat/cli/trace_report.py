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
            then = " (traced in its own file)" if _followed(r, p) else ""
            lines.append(
                f"pid {p['pid']}: nothing recorded before it ran another program{then}; no trace written"
            )
            continue
        size = mib(p["bytes"])
        if p["accesses"]:
            size += f" ({p['bytes'] / p['accesses']:.2f} bytes/access)"
        note = " (stopped at --max)" if p["hit_max"] else " (cut short)" if p["truncated"] else ""
        if _untraced_exec(r, p):
            note += " (ran another program: see the warning below)"
        lines.append(
            f"wrote {p['path']}: pid {p['pid']}, {p['accesses']:,} accesses, "
            f"{p['side_events']:,} syscalls, {p['threads']} thread(s), {size}{note}"
        )
    return lines


def _followed(r: dict[str, Any], p: dict[str, Any]) -> bool:
    """Whether the program process ``p`` exec'd was traced: a later trace of the same pid."""
    procs = r["processes"]
    later = procs[procs.index(p) + 1 :]
    return bool(r.get("follow_exec")) and any(q["pid"] == p["pid"] for q in later)


def _untraced_exec(r: dict[str, Any], p: dict[str, Any]) -> bool:
    """``p`` ended without an exit, not stopped by xlat, and no trace of what it ran follows."""
    if r.get("timed_out") or r["stopped_at_max"] or r.get("interrupted"):
        return False
    return not p.get("exited", True) and not p["hit_max"] and not _followed(r, p)


def exec_warning(r: dict[str, Any]) -> str | None:
    """The warning for processes that replaced themselves with a program that was not traced:
    QEMU user mode runs an exec'd program natively unless the exec wrapper re-runs it under QEMU
    (with --follow-exec, and not for statically linked programs), or for a process killed from
    outside."""
    pids = [p["pid"] for p in r["processes"] if _untraced_exec(r, p)]
    if not pids:
        return None
    which = ", ".join(str(p) for p in pids)
    how = (
        "xlat trace --follow-exec traces them"
        if not r.get("follow_exec")
        else "statically linked programs, and programs started without the C library's exec functions, "
        "escape the exec wrapper"
    )
    return (
        f"xlat: warning: process(es) {which} ran another program (execve) or were killed before exiting, "
        f"and what they ran is not traced ({how}; docs/tracing.md)"
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
