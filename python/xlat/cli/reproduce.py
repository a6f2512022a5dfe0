"""``xlat reproduce DOCUMENT``: a reference document's experiment over the big-memory suite (or
``--quick`` inputs, or ``--programs``), resumable, with the document's findings beside xlat's
figures and a verdict each (docs/reproduction.md)."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from xlat.cli.common import CliError, progress
from xlat.cli.jsonopt import INVOCATION, add_json_flag, emit_json, to_stdout


def cmd_reproduce(args: argparse.Namespace) -> int:
    from xlat.reproduce import ReproduceError, find, run, splice
    from xlat.sweep.run import progress_printer

    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, not {args.workers}")
    try:
        doc = find(args.document)
    except ReproduceError as e:
        raise CliError(str(e)) from None
    out = args.output or f"reproduce-{doc.name}" + ("-quick" if args.quick else "")
    programs = None if args.programs is None else [p for p in args.programs.split(",") if p.strip()]
    argv = INVOCATION["argv"]  # as main() was called (sys.argv is another program's under a test)
    command = "xlat " + " ".join(shlex.quote(a) for a in argv) if argv else ""
    try:
        report = run(
            doc.name,
            out,
            quick=args.quick,
            programs=programs,
            traces=args.traces,
            scheduler=args.scheduler,
            workers=args.workers,
            connect_timeout=args.connect_timeout,
            command=command or f"xlat reproduce {doc.name}" + (" --quick" if args.quick else ""),
            on_progress=progress_printer() if progress(args) else None,
            log=(lambda m: print(m, file=sys.stderr, flush=True)) if progress(args) else None,
        )
    except ReproduceError as e:
        raise CliError(str(e)) from None
    if args.doc:
        splice(args.doc, report)
    md = os.path.join(out, f"{doc.name}.md")
    files = [p.trace for p in report.programs if os.path.isfile(p.trace)]
    emit_json(args.json, report.to_dict(), kind="reproduce", inputs=files)
    if not to_stdout(args):
        sys.stdout.write(report.markdown())
    v = report.verdicts()
    print(
        f"xlat: {len(report.findings)} findings ({', '.join(f'{n} {k}' for k, n in v.items() if n)}); "
        f"{md} and {doc.name}.json written",
        file=sys.stderr,
    )
    failed = [k for k, ok in report.checks.items() if not ok]
    if failed:
        print(f"xlat: mechanism check failed: {failed[0]}", file=sys.stderr)
        return 1
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from xlat.reproduce import DOCUMENTS

    s = sub.add_parser(
        "reproduce",
        parents=[common],
        help="a reference document's findings with xlat's figures beside them (resumable)",
        description="Run a reference document's experiment (its configurations and ablations) over the "
        "big-memory suite of real programs (xlat workloads real), or small synthetic inputs with --quick, "
        "through the sweep machinery (Dask; killed and rerun, only the missing points run), and write the "
        "document's tables with xlat's figures beside the document's and a verdict per finding "
        "(OUT/DOCUMENT.md, OUT/DOCUMENT.json; docs/reproduction.md). mosmodel's points are real runs "
        "timed on this machine (xlat experiment mosmodel per program), not simulations.",
    )
    s.add_argument(
        "document", metavar="DOCUMENT", help=f"one of {', '.join(DOCUMENTS)} (or the seed file's name)"
    )
    s.add_argument(
        "--quick", action="store_true", help="small synthetic inputs: the same pipeline in seconds"
    )
    s.add_argument(
        "--programs",
        metavar="LIST",
        help="comma-separated names of the document's programs, recipes (xlat workloads real), workload: "
        "specs or trace files; for mosmodel, experiment programs (default: the document's suite)",
    )
    s.add_argument(
        "--traces",
        metavar="DIR",
        help="recipe traces already made: recipe NAME is read from DIR/NAME.xlat when it is there "
        "(e.g. another run's OUT/results/_traces)",
    )
    s.add_argument(
        "-o", "--output", metavar="DIR", help="results directory (default reproduce-DOCUMENT[-quick])"
    )
    s.add_argument("--doc", metavar="FILE.md", help="also replace the document's section of FILE.md")
    s.add_argument(
        "--scheduler", metavar="tcp://HOST:PORT", help="a Dask scheduler (default: a LocalCluster)"
    )
    s.add_argument(
        "--workers", type=int, metavar="N", help="LocalCluster worker processes (default: all cores)"
    )
    s.add_argument(
        "--connect-timeout", type=float, default=5.0, metavar="S", help="how long to try to reach --scheduler"
    )
    add_json_flag(s, "the report (programs, configurations, tables, findings, verdicts, checks)")
    s.set_defaults(func=cmd_reproduce, parser=s)
