"""``xlat trace``: run a program under QEMU and record its memory accesses and address-space
syscalls (:mod:`xlat.tracing`)."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import add_progress_flags, progress
from xlat.cli.jsonopt import add_json_flag, emit_json
from xlat.cli.notice import still_running
from xlat.cli.trace_report import TIMEOUT_STATUS, report


def cmd_trace(args: argparse.Namespace) -> int:
    from xlat.tracing import trace

    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    with still_running(f"tracing {' '.join(argv)[:60]} under QEMU", enabled=not progress(args)):
        r = trace(
            argv,
            args.output,
            skip=args.skip,
            max_accesses=args.max,
            ifetch=args.ifetch,
            level=args.level,
            progress=progress(args),
            qemu_args=args.qemu_arg,
            timeout=args.timeout,
            follow_exec=args.follow_exec,
        )
    # To stdout (after the program's own output, which shares it) or to a file.
    emit_json(args.json, r, trace=args.output)
    return report(r, argv, args.max, args.timeout)


def register(sub: Any) -> None:
    s = sub.add_parser(
        "trace",
        help="run a program under QEMU and record its memory accesses and address-space syscalls",
        description="Run PROGRAM (resolved through PATH) under qemu-x86_64 with xlat's TCG plugin and write "
        "its loads, stores, (optionally) instruction fetches, instruction counts, threads and "
        "mmap/munmap/brk/mremap/madvise/shmat/shmdt/exit syscalls to OUT, compressed, streaming. "
        "A forked child's trace goes to OUT with .<pid>.xlat in place of .xlat. Exits with the "
        "program's status (0 when stopped by --max, "
        f"{TIMEOUT_STATUS} when stopped by --timeout). A program a traced process starts "
        "with execve runs natively, untraced (a warning says so), unless --follow-exec: then it runs under "
        "QEMU too, traced to OUT with .<pid>.xlat or .<pid>.1.xlat (the first free; the exec'd program keeps the "
        "pid) in place of .xlat.",
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
    s.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help=f"kill the program (and its children) if it still runs after SECONDS; the trace so far is "
        f"kept, and xlat trace exits with {TIMEOUT_STATUS}",
    )
    s.add_argument(
        "--follow-exec",
        action="store_true",
        help="trace the programs the traced processes start with execve or posix_spawn too, each to a "
        "file of its own (a preloaded wrapper; default: they run natively, untraced, with a warning)",
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
    add_json_flag(s, "the summary (after the program's own output when on stdout)")
    add_progress_flags(s)
    s.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS")
    s.set_defaults(func=cmd_trace)
