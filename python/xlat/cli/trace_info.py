"""``xlat trace-info``: read a trace (or workload) once and summarise it."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import human_bytes, progress, table
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout
from xlat.cli.notice import still_running


def info_rows(r: dict[str, Any]) -> list[tuple[str, str]]:
    """The table of :func:`xlat.trace_info`'s result: label, value."""
    info, header = r["info"], r["header"]
    acc = info["accesses"]
    threads = info["threads"]
    rows = [
        ("source", r["source"]),
        *([("format", r["format"])] if r.get("format") else []),
        ("producer", header.get("producer", "")),
        ("command", " ".join(header.get("command", []))),
        (
            "accesses",
            f"{acc:,} ({info['loads']:,} loads, {info['stores']:,} stores, {info['ifetches']:,} ifetches)",
        ),
        ("instructions", f"{info['instructions']:,}"),
        ("threads", f"{len(threads):,}"),
        (
            "accesses by thread",
            ", ".join(f"tid {tid}: {t['accesses']:,}" for tid, t in threads.items()) or "none",
        ),
        ("syscalls", ", ".join(f"{k} {v:,}" for k, v in info["syscalls"].items()) or "none"),
        ("markers", ", ".join(f"{k} {v:,}" for k, v in info["markers"].items()) or "none"),
        (
            "footprint touched",
            f"{human_bytes(info['touched_4k_pages'] * 4096)} ({info['touched_4k_pages']:,} 4KiB pages, "
            f"{info['touched_2m_regions']:,} 2MiB regions, {info['touched_1g_regions']:,} 1GiB regions)",
        ),
        (
            "footprint mapped",
            f"{human_bytes(info['mapped_bytes'])} at the end, {human_bytes(info['peak_mapped_bytes'])} at peak",
        ),
    ]
    if info["min_addr"] is not None:
        rows.append(("address range", f"{info['min_addr']:#x} .. {info['max_addr']:#x}"))
    if r["file_bytes"] is not None:
        per = f" ({r['file_bytes'] / acc:.2f} bytes/access)" if acc else " (no accesses)"
        rows.append(("file size", f"{human_bytes(r['file_bytes'])}{per}"))
    return rows


def cmd_trace_info(args: argparse.Namespace) -> int:
    from xlat.trace import trace_info

    take_positional(args, "trace", "TRACE")
    with still_running(f"reading {args.trace}", enabled=not progress(args)):
        r = trace_info(args.trace, progress=progress(args))
    emit_json(args.json, r, trace=args.trace)
    if to_stdout(args):
        return 0
    print(table(info_rows(r)))
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "trace-info",
        parents=[common],
        help="counts, threads, syscalls, footprint and duration of a trace",
        description="Read a trace (or workload) once and summarise it: accesses by kind, instructions, "
        "threads, syscalls, markers, touched and mapped footprint, file size per access.",
    )
    s.add_argument(
        "trace", nargs="?", metavar="TRACE", help="trace file (.xlat), text trace (.txt) or workload:... spec"
    )
    add_json_flag(s, "the summary")
    s.set_defaults(func=cmd_trace_info, parser=s)
