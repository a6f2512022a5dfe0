"""``xlat contiguity``: how few ranges (contiguous virtual pages on contiguous frames) map a live
process's memory, as Karakostas 2016 (Section 4.2) measures it (:mod:`xlat.contiguity`).

    xlat contiguity --pid PID [--interval S --samples N] [--json] [--plot F.png]
    xlat contiguity [--interval S] [--samples N] [--json] [--plot F.png] -- PROGRAM ARGS...
    xlat contiguity [--cpu PRESET] [--every INSTRUCTIONS] [--json] [--plot F.png] TRACE
                                     (the simulated memory of a trace under demand paging with
                                     THP and under eager paging, Karakostas 2016, Table 4.7)
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from xlat.cli.common import CliError, grid, human_bytes, table
from xlat.cli.jsonopt import add_json_flag, emit_json, take_positional, to_stdout

if TYPE_CHECKING:
    from xlat.contiguity import Sample

# xlat.contiguity (and numpy with it) is imported when the command runs, not when `xlat --help`
# builds the parser; tests/test_cli_stumbles.py checks that this equals its DEFAULT_THRESHOLD.
DEFAULT_THRESHOLD = 8  # Karakostas 2016, Sections 4.5 and 4.7: a contiguity threshold of 8 pages


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {text}")
    return v


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return 2


def _rows(st: dict[str, Any]) -> list[tuple[str, str]]:
    rp, tp = st["range_pages"], st["threshold_range_pages"]
    smaps = st["pmd_mapped_pages_smaps"]
    rows = [
        ("pid, time", f"{st['pid']}, {st['time_s']:.1f} s"),
        (
            "footprint (present pages)",
            f"{st['present_pages']} pages ({human_bytes(st['footprint_bytes'])}), {st['vmas']} VMAs",
        ),
        ("zero-page mappings (not counted)", str(st["zero_pages"])),
        (
            "translation entries, 4KB + 2MB",
            f"{st['entries_4k']} + {st['entries_2m']}"
            + (f" + {st['entries_1g']} 1GB" if st["entries_1g"] else "")
            + f" = {st['entries_with_huge_pages']}"
            + (f" (smaps: {smaps // 512} PMD-mapped 2MB)" if smaps is not None else ""),
        ),
        ("ranges", str(st["ranges"])),
        ("ranges mapping 99%", str(st["ranges_to_cover_99pct"])),
        ("% mapped by the largest range", f"{st['largest_range_pct']:.1f}%"),
        ("range size median/avg/max (pages)", f"{rp['median']} / {rp['average']:.1f} / {rp['max']}"),
        (
            f"ranges >= {st['threshold']} pages",
            f"{st['threshold_ranges']}, covering {st['threshold_covered_pct']:.2f}%",
        ),
        ("  their median/avg/max (pages)", f"{tp['median']} / {tp['average']:.1f} / {tp['max']}"),
        (
            f"footprint outside every range >= {st['threshold']} pages",
            f"{100 - st['threshold_covered_pct']:.2f}%",
        ),
    ]
    i = st.get("ideal")
    if i:
        rows.append(
            (
                "ideal ranges (frames ignored)",
                f"{i['ranges']}, {i['ranges_to_cover_99pct']} map 99%, the largest {i['largest_range_pct']:.1f}%",
            )
        )
    a = st.get("anonymous")
    if a:
        rows.append(
            (
                "anonymous memory only",
                f"{a['present_pages']} pages in {a['ranges']} ranges, {a['ranges_to_cover_99pct']} map 99%, "
                f"the largest {a['largest_range_pct']:.1f}%",
            )
        )
    return rows


def _report(samples: list[Sample], threshold: int, json_dest: str | None, extra: dict[str, Any]) -> None:
    last = samples[-1]
    largest = max(samples, key=lambda s: (s.present_pages, s.time))
    emit_json(json_dest, {**extra, "samples": [s.stats(threshold) for s in samples]}, kind="contiguity live")
    if json_dest == "-":
        return
    if largest is last:
        print(f"{len(samples)} sample(s); the last one is also the largest footprint:")
        print(table(_rows(last.stats(threshold))))
        return
    print(f"{len(samples)} samples; the last one:")
    print(table(_rows(last.stats(threshold))))
    print("\nthe one with the largest footprint:")
    print(table(_rows(largest.stats(threshold))))


def _simulated(trace: str, args: argparse.Namespace) -> int:
    """Table 4.7 for a trace: the runs the OS model could form at the end of the trace under
    demand paging with THP and under eager paging (:func:`xlat.rmm.evaluate`)."""
    from xlat.cli.rmm import ROWS, print_columns
    from xlat.contiguity import plot_coverage
    from xlat.rmm import evaluate, sizes_of

    extra: tuple[str, ...] = ()
    if args.every:
        extra = (f"sim.contiguity_every={args.every}", f"sim.contiguity_threshold={args.threshold}")
    ev = evaluate(trace, cpu=args.cpu, designs=("demand+THP", "eager"), extra=extra, threshold=args.threshold)
    series = {d: r.epochs_to_pandas("contiguity") for d, r in ev.results.items()} if args.every else {}
    if args.json:
        # one result per design: its row, and with --every its series (the runs after each epoch)
        docs: list[dict[str, Any]] = []
        for row in ev.rows:
            doc = {"trace": trace, "cpu": args.cpu, **row}
            if args.every:
                df = series.get(row["design"])
                doc["every_instructions"] = args.every
                doc["series"] = [] if df is None else df.to_dict("records")
            docs.append(doc)
        emit_json(args.json, docs, trace=trace, config=[ev.results[r["design"]].config for r in ev.rows])
    if not to_stdout(args):
        print(f"{trace}: the memory at the end of the trace, simulated on {args.cpu}")
        print_columns(ev.rows, [r for r in ROWS if r[1].startswith("contiguity.") or r[1] == "frames_in_use"])
        for d, df in series.items():
            print(f"\n{d}: every {args.every} instructions (ranges of at least {args.threshold} pages)")
            if df is None or df.empty:
                print("  (the trace ended before the first interval)")
                continue
            print(grid(SERIES_HEADER, [_series_row(r) for r in df.to_dict("records")]))
    if args.plot:
        plot_coverage({d: sizes_of(r) for d, r in ev.results.items()}, args.plot, title=trace)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return 0


SERIES_HEADER = [
    "instructions",
    "pages",
    "4KB+2MB entries",
    "runs",
    "ranges",
    "% in ranges",
    "runs for 99%",
    "largest %",
]


def _series_row(r: dict[str, Any]) -> list[str]:
    pages = r["pages"]
    pct = (lambda n: f"{100.0 * n / pages:.2f}") if pages else (lambda n: "-")
    return [
        f"{r['at']:,}",
        f"{pages:,}",
        f"{r['entries_4k']:,}+{r['entries_2m']:,}",
        f"{r['runs']:,}",
        f"{r['ranges']:,}",
        pct(r["range_pages"]),
        f"{r['runs_99']:,}",
        pct(r["largest"]),
    ]


def cmd_contiguity(args: argparse.Namespace) -> int:
    from xlat.contiguity import ContiguityError, monitor, plot_coverage, sample_pid

    take_positional(args, "rest", "")
    rest = list(args.rest)
    program = rest[1:] if rest and rest[0] == "--" else None
    trace = rest[0] if rest and rest[0] != "--" else None
    if trace is not None:
        if len(rest) > 1:  # options after the TRACE: the remainder took them; parse them now
            args.parser.parse_args([*rest[1:], trace], namespace=args)
            take_positional(args, "rest", "")
            if len(args.rest) != 1:
                raise CliError(
                    f"xlat contiguity takes one TRACE, not {len(args.rest)}: {trace}, {', '.join(args.rest[:-1])}"
                )
        if args.pid is not None:
            raise CliError("give either --pid or a TRACE, not both")
        return _simulated(trace, args)
    if args.every:
        raise CliError(
            "--every applies to a simulated TRACE; a live process is sampled every --interval seconds"
        )
    if args.pid is not None and program is not None:
        raise CliError("give either --pid PID or -- PROGRAM, not both")
    if args.pid is None and program is None:
        raise CliError("nothing to measure: give --pid PID or -- PROGRAM ARGS")
    if program is not None and not program:
        raise CliError("no program given after --")
    if args.plot:
        from xlat._optional import need_pyplot

        need_pyplot("--plot")  # before the run, not after it

    def progress(s: Sample) -> None:
        if args.verbose:
            print(f"[{s.time:7.1f} s] {s.present_pages} pages in {s.sizes.size} ranges", file=sys.stderr)

    rc = 0
    try:
        if args.pid is not None:
            samples = sample_pid(args.pid, args.interval, args.samples or 1, progress)
            extra: dict[str, Any] = {"pid": args.pid}
        else:
            assert program is not None
            # with --json the program writes to our stderr, so stdout stays one JSON document
            out_fd = _stderr_fd() if to_stdout(args) else None
            samples, rc = monitor(program, args.interval, args.samples, progress, stdout=out_fd)
            extra = {"program": program, "exit_status": rc}
            if not samples:
                raise CliError(
                    f"{program[0]} exited (status {rc}) before the first sample at {args.interval} s; use a shorter --interval"
                )
    except ContiguityError as e:
        raise CliError(str(e)) from None
    _report(samples, args.threshold, args.json, {**extra, "interval_s": args.interval})
    if args.plot:
        last = samples[-1]
        largest = max(samples, key=lambda s: (s.present_pages, s.time))
        curves = {f"last sample ({last.time:.0f} s)": last.sizes}
        if largest is not last:
            curves[f"largest footprint ({largest.time:.0f} s)"] = largest.sizes
        name = " ".join(program)[:60] if program else f"pid {args.pid}"
        plot_coverage(curves, args.plot, title=name)
        print(f"plot written to {args.plot}", file=sys.stderr)
    return rc


def register(subparsers: Any, common: argparse.ArgumentParser | None = None) -> None:
    p = subparsers.add_parser(
        "contiguity",
        help="how few ranges of contiguous pages map a live process's memory (RMM: Karakostas 2016, Table 4.2)",
        description="Scan a live process's page table (/proc/PID/pagemap and /proc/kpageflags, root "
        "needed) and measure ranges: runs of virtually contiguous pages, of one VMA, on physically "
        "contiguous frames. Reports translation entries with huge pages, ranges, ranges mapping 99% "
        "of memory, the largest range's share, and ranges over the threshold (docs/contiguity.md). "
        "Given a TRACE (a trace file or workload spec) instead, simulate it under demand paging with "
        "THP and under eager paging and report the same figures for the OS model's memory (docs/rmm.md).",
        epilog="examples:\n  xlat contiguity --pid 1234\n  xlat contiguity --pid 1234 --interval 5 --samples 12 --json\n"
        "  xlat contiguity --interval 0.5 --plot sort.png -- sort -o /dev/null big.txt\n"
        "  xlat contiguity --cpu skylake --plot bfs.png bfs.xlat\n"
        "  xlat contiguity --every 100000000 xz.xlat\n\n"
        "With -- PROGRAM, the program runs and is scanned every --interval seconds while it runs (only\n"
        "the started process, not its children); the last sample and the one with the largest\n"
        "footprint are printed (--json prints every sample, and sends the program's output to stderr),\n"
        "and the exit status is the program's.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--pid", type=int, metavar="PID", help="a running process to scan")
    p.add_argument(
        "--cpu",
        default="skylake",
        metavar="PRESET",
        help="CPU preset for a simulated TRACE (default skylake)",
    )
    p.add_argument(
        "--interval",
        type=_positive_float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between samples (default 1)",
    )
    p.add_argument(
        "--samples",
        type=_positive_int,
        default=None,
        metavar="N",
        help="number of samples (default: 1 with --pid, until the program exits with --)",
    )
    p.add_argument(
        "--threshold",
        type=_positive_int,
        default=DEFAULT_THRESHOLD,
        metavar="PAGES",
        help=f"smallest range worth a range translation (default {DEFAULT_THRESHOLD}, Karakostas 2016, Section 4.7)",
    )
    p.add_argument(
        "--every",
        type=_positive_int,
        default=None,
        metavar="INSTRUCTIONS",
        help="for a TRACE: also measure every this many instructions (a table per design)",
    )
    add_json_flag(p, "every sample")
    p.add_argument("--plot", metavar="FILE.png", help="plot memory mapped against ranges, largest first")
    p.add_argument("-v", "--verbose", action="store_true", help="print a line per sample on stderr")
    # One positional that swallows the rest: "-- PROGRAM ARGS..." or a TRACE (a trace file or
    # workload spec, simulated). Options go before it.
    p.add_argument(
        "rest", nargs=argparse.REMAINDER, metavar="TRACE | -- PROGRAM ARGS", help="what to measure"
    )
    p.set_defaults(func=cmd_contiguity, parser=p)
