"""``xlat run`` (a program on a mosaic of page sizes, :mod:`xlat.mosaic`) and ``xlat hugepages``
(the kernel's hugetlb pools). ``python -m xlat.mosaic`` runs the same two commands through
:func:`mosaic_main`.

Nothing here imports :mod:`xlat._native`: these commands work before the Rust extension is built.
Their errors exit with status 2 (:data:`xlat.mosaic.EXIT_USAGE`), as they always have.
"""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import error, run_command
from xlat.layout import LayoutError
from xlat.mosaic import EXIT_USAGE, MosaicError, page_name, release, reserve, run, status


def _fail(msg: str) -> int:
    error(msg)
    return EXIT_USAGE


def cmd_run(args: argparse.Namespace) -> int:
    argv = list(args.program)
    if argv and argv[0] == "--":
        argv = argv[1:]
    try:
        return run(
            args.layout,
            argv,
            mode=args.mode,
            verify=args.verify,
            best_effort=args.best_effort,
            keep_freed=args.keep_freed,
            compact_first=args.compact,
        )
    except (MosaicError, LayoutError) as err:
        return _fail(str(err))


def cmd_hugepages(args: argparse.Namespace) -> int:
    try:
        if args.hp_command == "reserve":
            amount: int | str = int(args.amount) if args.amount.isdigit() else args.amount
            got = reserve(amount, args.page)
            print(f"reserved {got} more {page_name(args.page)} huge pages")
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


def register(subparsers: Any) -> None:
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
        help="report, for every process of the run, the page sizes obtained per window (from smaps at "
        "exit) and how it ended; the exit status stays the program's, or 3 if it exited 0 but the layout "
        "was not honoured",
    )
    p.add_argument(
        "--best-effort",
        action="store_true",
        help="run even if huge pages are missing, on 4KB pages where needed",
    )
    p.add_argument(
        "--keep-freed",
        action="store_true",
        help="keep memory the program frees populated (no MADV_DONTNEED of freed pool memory, as in "
        "Mosalloc's pools), so that reusing it takes no page faults",
    )
    p.add_argument(
        "--compact",
        action="store_true",
        help="compact free memory before the program starts (root; about 0.5 s), so that thp mode "
        "finds contiguous memory for its 2MB pages",
    )
    p.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS...")
    p.set_defaults(func=cmd_run)

    h = subparsers.add_parser("hugepages", help="reserve, show or release the kernel's huge pages")
    hs = h.add_subparsers(dest="hp_command", required=True)
    r = hs.add_parser("reserve", help="add huge pages to the kernel pool (root)")
    r.add_argument("amount", help="number of pages, or a size such as 4GiB")
    r.add_argument("--page", default="2MB", choices=("2MB", "1GB"))
    hs.add_parser("status", help="show huge pages per size")
    rl = hs.add_parser("release", help="give free huge pages back to the kernel (root)")
    rl.add_argument("count", nargs="?", type=int, default=None, help="how many (default: all free)")
    rl.add_argument("--page", default=None, choices=("2MB", "1GB"))
    h.set_defaults(func=cmd_hugepages)


def mosaic_main(argv: list[str] | None = None) -> int:
    """``python -m xlat.mosaic run|hugepages ...``: the same commands without the main xlat CLI."""
    parser = argparse.ArgumentParser(prog="xlat")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(argv)
    return run_command(args.func, args)
