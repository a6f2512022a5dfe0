"""``xlat trace``: run a program under QEMU and record its memory accesses and address-space
syscalls (:mod:`xlat.tracing`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from xlat.cli.common import add_progress_flags, mib, progress


def cmd_trace(args: argparse.Namespace) -> int:
    from xlat.tracing import trace

    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    r = trace(
        argv,
        args.output,
        skip=args.skip,
        max_accesses=args.max,
        ifetch=args.ifetch,
        level=args.level,
        progress=progress(args),
        qemu_args=args.qemu_arg,
    )
    if args.json:
        # A file, not stdout: the traced program owns stdout.
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2, sort_keys=True)
            f.write("\n")
    total = sum(p["accesses"] for p in r["processes"])
    rate = total / r["seconds"] / 1e6 if r["seconds"] > 0 else float("nan")
    for p in r["processes"]:
        per = p["bytes"] / p["accesses"] if p["accesses"] else float("nan")
        note = " (stopped at --max)" if p["hit_max"] else " (cut short)" if p["truncated"] else ""
        print(
            f"wrote {p['path']}: pid {p['pid']}, {p['accesses']:,} accesses, "
            f"{p['side_events']:,} syscalls, {p['threads']} thread(s), {mib(p['bytes'])} "
            f"({per:.2f} bytes/access){note}",
            file=sys.stderr,
        )
    print(f"traced in {r['seconds']:.1f} s ({rate:.1f} M accesses/s)", file=sys.stderr)
    if r["stopped_at_max"]:
        print(f"stopped {argv[0]} after {args.max:,} accesses (--max)", file=sys.stderr)
    return 0 if r["stopped_at_max"] else int(r["status"])


def register(sub: Any) -> None:
    s = sub.add_parser(
        "trace",
        help="run a program under QEMU and record its memory accesses and address-space syscalls",
        description="Run PROGRAM (resolved through PATH) under qemu-x86_64 with xlat's TCG plugin and write "
        "its loads, stores, (optionally) instruction fetches, instruction counts, threads and "
        "mmap/munmap/brk/mremap/madvise/shmat/shmdt/exit syscalls to OUT, compressed, streaming. "
        "A forked child's trace goes to OUT with .<pid>.xlat in place of .xlat. Exits with the "
        "program's status (0 when stopped by --max).",
        epilog="example: xlat trace --skip 1000000 --max 50000000 -o xz.xlat -- xz -9 -k -f big.txt",
    )
    s.add_argument("-o", "--output", required=True, metavar="OUT", help="trace file to write (.xlat)")
    s.add_argument(
        "--skip",
        type=int,
        default=0,
        metavar="N_INSNS",
        help="instructions the first thread runs before accesses are recorded (default 0)",
    )
    s.add_argument(
        "--max",
        type=int,
        default=None,
        metavar="N_ACCESSES",
        help="stop the program once the trace holds this many accesses",
    )
    s.add_argument("--ifetch", action="store_true", help="also record instruction fetches")
    s.add_argument(
        "--level",
        type=int,
        default=1,
        help="zstd level, 1 (fastest; about 5%% larger than 3 on real programs) to 19; default 1",
    )
    s.add_argument(
        "--qemu-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="pass ARG to qemu-x86_64 before the plugin (repeatable), e.g. --qemu-arg=-strace",
    )
    s.add_argument("--json", metavar="FILE", help="also write the summary as JSON to FILE")
    add_progress_flags(s)
    s.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS")
    s.set_defaults(func=cmd_trace)
