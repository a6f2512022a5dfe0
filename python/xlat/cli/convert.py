"""``xlat convert`` (between the xlat format, the text form and workloads) and ``xlat import``
(Valgrind lackey, ChampSim and DynamoRIO drmemtrace traces to the xlat format)."""

from __future__ import annotations

import argparse
from typing import Any

from xlat.cli.common import (
    CliError,
    add_progress_flags,
    add_window_flags,
    human_bytes,
    mib,
    progress,
    window_kw,
)
from xlat.cli.jsonopt import add_json_flag, emit_json, to_stdout
from xlat.cli.notice import noting


def check_level(level: int, lo: int, hi: int) -> None:
    """Refuse a ``--level`` outside ``lo..hi`` (zstd 1-19; xz 0-9) in one sentence."""
    if not lo <= level <= hi:
        raise CliError(f"--level must be between {lo} and {hi}, not {level}")


def cmd_convert(args: argparse.Namespace) -> int:
    from xlat.trace import convert

    if args.output is None and args.json not in (None, "-"):
        # the old switch form, --json INPUT OUTPUT (xlat.cli.jsonopt)
        args.input, args.output, args.json = args.json, args.input, "-"
    if args.output is None:
        args.parser.error("the following arguments are required: OUTPUT")
    check_level(args.level, 1, 19)
    r = noting(
        f"converting {args.input}",
        progress(args),
        convert,
        args.input,
        args.output,
        level=args.level,
        progress=progress(args),
        format_version=args.format_version,
    )
    emit_json(args.json, r, trace=args.input)
    if not to_stdout(args):
        per = r["bytes"] / r["accesses"] if r["accesses"] else float("nan")
        print(
            f"wrote {r['path']}: {r['accesses']:,} accesses, {human_bytes(r['bytes'])} ({per:.2f} bytes/access)"
        )
    return 0


def cmd_cut(args: argparse.Namespace) -> int:
    from xlat.trace import cut

    check_level(args.level, 1, 19)
    r = noting(
        f"cutting {args.input}",
        progress(args),
        cut,
        args.input,
        args.output,
        level=args.level,
        progress=progress(args),
        **window_kw(args),
    )
    emit_json(args.json, r, trace=args.input, window=window_kw(args))
    if not to_stdout(args):
        print(
            f"wrote {r['path']}: {r['accesses']:,} accesses and {r['side_events']:,} side events "
            f"(after skipping {args.skip:,}), {human_bytes(r['bytes'])}"
        )
    return 0


def register_cut(sub: Any, common: argparse.ArgumentParser) -> None:
    s = sub.add_parser(
        "cut",
        parents=[common],
        help="write a window of a trace as a trace of its own",
        description="Write the accesses of INPUT after --skip, at most --limit of them, to OUTPUT "
        "(the text form if OUTPUT ends in .txt). The skipped part's side events (mmap, munmap, "
        "brk, thread and address-space switches) are kept, before the first access written, so "
        "that the OS model builds the same mappings; side events after the last access kept are "
        "dropped. Works on recorded, imported and text traces and on workload specs.",
    )
    s.add_argument("input", metavar="INPUT")
    s.add_argument("output", metavar="OUTPUT")
    add_window_flags(s, warmup=False)
    s.add_argument("--level", type=int, default=3, help="zstd level, 1 (fastest) to 19 (smallest); default 3")
    add_json_flag(s, "the summary")
    s.set_defaults(func=cmd_cut, parser=s)


def cmd_import(args: argparse.Namespace) -> int:
    from xlat.tracing import import_trace

    r = noting(
        f"importing {args.input}",
        progress(args),
        import_trace,
        args.kind,
        args.input,
        args.output,
        ifetch=args.ifetch,
        level=args.level,
        progress=progress(args),
    )
    per = r["bytes"] / r["accesses"] if r["accesses"] else float("nan")
    print(f"wrote {r['path']}: {r['accesses']:,} accesses, {mib(r['bytes'])} ({per:.2f} bytes/access)")
    return 0


def register_convert(sub: Any, common: argparse.ArgumentParser) -> None:
    from xlat.trace import FORMAT_VERSIONS

    s = sub.add_parser(
        "convert",
        parents=[common],
        help="convert between the xlat format, the text form and workloads",
        description="Write INPUT to OUTPUT. OUTPUT ending in .txt gets the plain text form; anything "
        "else the compressed xlat format. INPUT may be a trace, a text trace or a workload "
        "spec (which makes convert the way to save a workload as a trace).",
    )
    s.add_argument("input", metavar="INPUT")
    s.add_argument("output", nargs="?", metavar="OUTPUT")
    s.add_argument("--level", type=int, default=3, help="zstd level, 1 (fastest) to 19 (smallest); default 3")
    s.add_argument(
        "--format-version",
        choices=FORMAT_VERSIONS,
        default=FORMAT_VERSIONS[-1],
        help="trace format version to write: 1.2 (default: numbered blocks), or 1.1 or 1.0 for "
        "xlat builds that predate 1.2's block numbers or 1.1's repeat records",
    )
    add_json_flag(s, "the summary")
    s.set_defaults(func=cmd_convert, parser=s)


def cmd_export(args: argparse.Namespace) -> int:
    from xlat.trace import export_champsim

    check_level(args.level, 0, 9)
    r = noting(
        f"exporting {args.input}",
        progress(args),
        export_champsim,
        args.input,
        args.output,
        tid=args.tid,
        level=args.level,
        progress=progress(args),
    )
    print(
        f"wrote {r['path']}: {r['records']:,} records (thread {r['tid']}), {r['loads']:,} loads, "
        f"{r['stores']:,} stores, {human_bytes(r['bytes'])}"
    )
    if r["records"] and r["synthetic_ips"]:
        print(
            f"note: {r['synthetic_ips']:,} of {r['records']:,} records have a synthetic ip (the trace has no "
            "instruction fetch for them): ChampSim's instruction side means nothing for those"
        )
    lost = [
        (r["dropped_loads"], "loads beyond the 4 source_memory slots"),
        (r["dropped_stores"], "stores beyond the 2 destination_memory slots"),
        (r["dropped_zero"], "accesses to address 0 (an empty slot)"),
        (r["side_events"], "side events (syscalls, markers: no ChampSim form)"),
    ]
    for n, what in lost:
        if n:
            print(f"note: left out {n:,} {what}")
    return 0


def register_export(sub: Any) -> None:
    s = sub.add_parser(
        "export",
        help="write a trace (one thread) as a ChampSim trace",
        description="Write one thread of INPUT (any trace, import or workload spec) as ChampSim "
        "64-byte input_instr records, one per instruction from the thread's first access to its "
        "last (instructions without accesses get a record with no memory operands). OUT ending "
        "in .xz is xz-compressed (as the public trace sets are), .gz gzip, else raw. ip: the "
        "instruction's fetch address where the trace has instruction fetches, else synthetic. "
        "Loads beyond 4 and stores beyond 2 in one instruction are dropped and counted.",
    )
    s.add_argument("format", choices=["champsim"])
    s.add_argument("input", metavar="INPUT")
    s.add_argument("-o", "--output", required=True, metavar="OUT")
    s.add_argument("--tid", type=int, help="the thread to export (needed when the trace has several)")
    s.add_argument(
        "--level",
        type=int,
        default=1,
        help="xz preset 0-9 (gzip: 1-9); default 1 (preset 6 took 30x as long for a file no smaller: docs/importers.md)",
    )
    add_progress_flags(s)
    s.set_defaults(func=cmd_export)


def register_import(sub: Any) -> None:
    s = sub.add_parser(
        "import",
        help="convert a Valgrind lackey, ChampSim or DynamoRIO drmemtrace trace to the xlat format",
        description="Convert a foreign trace to an xlat trace. lackey: the text of valgrind --tool=lackey "
        "--trace-mem=yes (use --log-file); champsim: 64-byte input_instr records, raw, .xz or .gz; "
        "drmemtrace: DynamoRIO's offline trace after raw2trace, a per-thread .trace.zip, .trace.gz "
        "or .trace file or the directory of them (threads interleaved by timestamp). All are also "
        "readable directly wherever a trace is accepted, as lackey:PATH, champsim:PATH or "
        "drmemtrace:PATH.",
    )
    s.add_argument("kind", choices=["lackey", "champsim", "drmemtrace"])
    s.add_argument("input", metavar="INPUT")
    s.add_argument("-o", "--output", required=True, metavar="OUT")
    s.add_argument(
        "--ifetch",
        action="store_true",
        help="also record each instruction as an instruction fetch (champsim: of its ip, 4 bytes "
        "assumed; lackey, drmemtrace: of the instruction's length)",
    )
    s.add_argument("--level", type=int, default=3, help="zstd level, 1 to 19; default 3")
    add_progress_flags(s)
    s.set_defaults(func=cmd_import)
