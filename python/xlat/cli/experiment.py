"""``xlat experiment mosmodel``: do simulated translation metrics predict the runtime of a real
program on this machine? (:mod:`xlat.experiment`)"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from xlat.cli.common import CliError
from xlat.experiment.layouts import LAYOUT_SETS
from xlat.experiment.program import Program, programs
from xlat.experiment.timing import RUNTIME_METRICS


def cmd_mosmodel(args: argparse.Namespace) -> int:
    from xlat.experiment.mosmodel import mosmodel_experiment

    if args.command:
        cmd = args.command[1:] if args.command[0] == "--" else args.command
        if not cmd:
            raise CliError("no program was given after --.")
        prog: str | Program = Program(args.workload or Path(cmd[0]).name, tuple(cmd))
    elif args.workload:
        prog = args.workload
    else:
        raise CliError(
            f"name a program with --workload ({', '.join(programs())}) or give a command after --."
        )
    name = prog if isinstance(prog, str) else prog.name
    out = Path(args.out or f"out/experiment/{name}")

    def log(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    res = mosmodel_experiment(
        prog,
        out,
        cpu=args.cpu,
        layouts=args.layouts,
        n=args.n,
        seed=args.seed,
        cov=args.cov,
        min_reps=args.min_reps,
        max_reps=args.max_reps,
        metric=args.runtime,
        estimator=args.estimator,
        ghz=args.ghz,
        folds=args.folds,
        threads=args.threads,
        reserve=args.reserve_huge_pages,
        simulate_only=args.simulate_only,
        log=log,
    )
    print(res.format())
    return 0


def register(sub: Any) -> None:
    """Add ``experiment mosmodel`` to the ``xlat`` subcommands."""
    e = sub.add_parser(
        "experiment",
        help="experiments that check simulated metrics against real runs",
        description="Experiments that check the simulator's metrics against real runs on this machine.",
    )
    esub = e.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    s = esub.add_parser(
        "mosmodel",
        help="fit the runtime models to real runs of a program under many mosaic layouts",
        description="Trace PROGRAM's whole run under the mosaic allocator, build layouts of 2MB windows "
        "(growing, random, sliding) from its simulated L2-TLB miss profile, simulate every layout (H, M, C), "
        "time the real program under every layout until the runtime's CoV is below --cov, fit Basu, "
        "Gandhi, Pham, Alam, Yaniv, poly1-3 and Mosmodel, and report their errors. Outputs (trace, "
        "layouts, simulation results, runs.csv, dataset.csv, errors.csv, models.pkl, summary.json, "
        "runtime_vs_walk_cycles.png) go to --out; steps whose outputs exist there are reused.",
        epilog="example: xlat experiment mosmodel --workload numpy-gather --reserve-huge-pages\n"
        "         xlat experiment mosmodel --workload mine --out out/mine -- ./my-program ARGS",
    )
    s.add_argument(
        "--workload",
        metavar="NAME",
        help=f"built-in program ({', '.join(programs())}), or the name of the command after --",
    )
    s.add_argument("--out", help="output directory (default out/experiment/NAME)")
    s.add_argument("--cpu", default="zen4", help="simulator preset matching this machine (default zen4)")
    s.add_argument(
        "--layouts",
        choices=LAYOUT_SETS,
        default="quick",
        help="quick: growing + random + sliding at 50%% (27 for n=8); paper: the paper's 54",
    )
    s.add_argument("-n", type=int, default=8, help="steps of each heuristic (default 8)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random-window layouts and the CV folds")
    s.add_argument(
        "--cov", type=float, default=0.01, help="runtime CoV each layout must reach (default 0.01)"
    )
    s.add_argument("--min-reps", type=int, default=3, help="runs per layout at least (default 3)")
    s.add_argument("--max-reps", type=int, default=10, help="runs per layout at most (default 10)")
    s.add_argument(
        "--runtime",
        choices=RUNTIME_METRICS,
        default="work",
        help="runtime measure: work (default): the program's CPU time from the end of the "
        "allocator's start-up, which populates the pools' used part, to exit, so first-touch page "
        "faults (which no H, M, C describe) are left out; cpu: the process's user+sys CPU time; "
        "wall: wall-clock time; user: user time (the kernel splits CPU time into user and sys by "
        "sampling at timer ticks, so it is noisier)",
    )
    s.add_argument(
        "--estimator",
        choices=("median", "min", "drift"),
        default="median",
        help="R of a layout from its repetitions: the median (default), the minimum (the usual estimate "
        "when noise only ever adds time, as other jobs on a shared machine do), or drift: the median "
        "of the runs each divided by the machine's speed at that moment, estimated from the runs of "
        "other layouts just before and after it (for machines whose speed drifts over seconds)",
    )
    s.add_argument("--ghz", type=float, help="clock to turn seconds into cycles (default: /proc/cpuinfo)")
    s.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    s.add_argument("--threads", type=int, help="simulation threads (default: all cores)")
    s.add_argument(
        "--reserve-huge-pages",
        action="store_true",
        help="reserve the 2MB huge pages the layouts need, and release them afterwards",
    )
    s.add_argument(
        "--simulate-only",
        action="store_true",
        help="stop after simulating the layouts (H, M, C per layout in simulated.csv); no real runs",
    )
    s.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    s.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS (instead of a built-in)")
    s.set_defaults(func=cmd_mosmodel)
