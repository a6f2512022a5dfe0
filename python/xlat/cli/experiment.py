"""``xlat experiment mosmodel``: do simulated translation metrics predict the runtime of a real
program on this machine? (:mod:`xlat.experiment`)"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from xlat.cli.common import CliError, load_counts
from xlat.cli.jsonopt import add_json_flag, emit_json, to_stdout
from xlat.experiment.layouts import LAYOUT_SETS
from xlat.experiment.program import Program, programs
from xlat.experiment.timing import RUNTIME_METRICS


def _host_cpu() -> str:
    """The simulator preset of this machine's core, or one sentence asking for ``--cpu``."""
    from xlat.experiment.timing import host_preset

    preset, host = host_preset()
    if preset is None:
        raise CliError(f"no simulator preset is known for this machine's core ({host}): name one with --cpu.")
    return preset


def _experiments_cpu(dirs: list[str]) -> str:
    """The preset the experiment directories were simulated with (their summary.json), which
    must be one; the host's when none says."""
    cpus = set()
    for d in dirs:
        meta = Path(d) / "summary.json"
        if meta.exists():
            cpu = json.loads(meta.read_text()).get("cpu")
            if cpu:
                cpus.add(cpu)
    if len(cpus) > 1:
        raise CliError(
            f"the experiment directories were simulated with different presets ({', '.join(sorted(cpus))}): "
            "name the machine's with --cpu."
        )
    return cpus.pop() if cpus else _host_cpu()


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
    log = _log(args)
    res = mosmodel_experiment(
        prog,
        out,
        cpu=args.cpu or _host_cpu(),
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
        validate_1g=args.validate_1g,
        log=log,
    )
    print(res.format())
    return 0


def _log(args: argparse.Namespace):
    def log(msg: str) -> None:
        if not args.quiet:
            print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    return log


def _floats(text: str, what: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise CliError(f"{what} = {text!r} is not a comma-separated list of numbers.") from None
    if not vals:
        raise CliError(f"{what} is empty; give at least one value.")
    return vals


def cmd_calibrate(args: argparse.Namespace) -> int:
    from xlat.experiment import calibrate as cal

    walkers = tuple(int(w) for w in _floats(args.walkers, "--walkers")) if args.walkers else (None,)
    params = cal.grid(
        _floats(args.cpi, "--cpi"),
        _floats(args.dep, "--dep"),
        _floats(args.hide, "--hide"),
        walkers,
        _floats(args.walk_scale, "--walk-scale"),
        _floats(args.walk_extra, "--walk-extra"),
    )
    res = cal.calibrate(
        args.fit,
        args.validate or [],
        cpu=args.cpu or _experiments_cpu([*args.fit, *(args.validate or [])]),
        params=params,
        threads=args.threads,
        log=_log(args),
    )
    out = cal.write(res, args.out)
    print(res.format())
    print(
        f"\nsaved in {out}: calibration.csv, summary.csv, overlay.txt (the --set lines), deps.json, config.toml, report.md"
    )
    return 0


def cmd_predict(args: argparse.Namespace) -> int:
    from xlat.experiment import predict as pr
    from xlat.sim import SimResult

    exp = Path(args.dir)
    pr.check_dir(exp, need_trace=not args.result)
    if args.result:
        r = SimResult(load_counts(args.result))
    else:
        cpu = args.cpu or _experiments_cpu([str(exp)])
        _log(args)(f"predict: simulating {args.name} on {exp / 'trace.xlat'} ({cpu} preset) ...")
        r = pr.simulate_design(exp, cpu, args.set or (), args.config, threads=args.threads)
    hmc = (r.derived["H"], r.derived["M"], r.derived["C"])
    p = pr.predict(exp, hmc, args.name, model=args.model, margin=args.margin, extrapolate=args.extrapolate)
    emit_json(
        args.json,
        p.to_dict(),
        trace=None if args.result else exp / "trace.xlat",
        config=r.config,
        inputs=[
            args.result.rsplit(":", 1)[0]
            if ":" in args.result and not args.result.endswith(".json")
            else args.result
        ]
        if args.result
        else (),
    )
    if not to_stdout(args):
        print(p.format())
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
    s.add_argument(
        "--cpu", help="simulator preset matching this machine (default: the host's, from /proc/cpuinfo)"
    )
    s.add_argument(
        "--layouts",
        choices=LAYOUT_SETS,
        default="quick",
        help="quick: growing + random + sliding at 50%% (27 for n=8); paper: the 54 of Agbarya et al. 2020",
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
        "--validate-1g",
        action="store_true",
        help="Agbarya et al.'s case study (VII-D): predict the used pool on 1GB pages with every fitted model "
        "and time it (rounds with the all-2MB layout, --min-reps each; needs 1GB huge pages, reserved and "
        "released here); the errors go to validation-1g.json and the summary",
    )
    s.add_argument(
        "--simulate-only",
        action="store_true",
        help="stop after simulating the layouts (H, M, C per layout in simulated.csv); no real runs",
    )
    s.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    s.add_argument("command", nargs=argparse.REMAINDER, help="-- PROGRAM ARGS (instead of a built-in)")
    s.set_defaults(func=cmd_mosmodel)

    c = esub.add_parser(
        "calibrate",
        help="fit the overlap time model's free parameters to real runs, and validate on held-out programs",
        description="Simulate every layout of each Mosmodel experiment directory with the data through the "
        "caches and the overlap time model (docs/time-model.md), evaluating a grid of its free parameters "
        "(base CPI, dep, hide, walkers, walk_scale) on the same events; choose the setting whose predicted "
        "runtime ratios (each layout against all-4KB) have the smallest maximal error on the --fit programs; "
        "report its errors on the --validate programs beside the additive model's and, on the same layouts, "
        "Yaniv's and Mosmodel's (fitted on each program's own runs, leave-one-out).",
        epilog="example: xlat experiment calibrate --fit out/experiment/numpy-gather --validate out/experiment/xz-9",
    )
    c.add_argument("--fit", nargs="+", required=True, metavar="DIR", help="experiment directories to fit on")
    c.add_argument("--validate", nargs="*", metavar="DIR", help="held-out experiment directories")
    c.add_argument(
        "--cpu", help="preset of this machine (default: the experiments' own, as their summary.json names it)"
    )
    c.add_argument("--cpi", default=",".join(map(str, _grid_defaults()[0])), help="base CPIs to try")
    c.add_argument(
        "--dep", default=",".join(map(str, _grid_defaults()[1])), help="dependent fractions to try"
    )
    c.add_argument("--hide", default="0", help="hidden cycles per interval to try (default 0)")
    c.add_argument("--walkers", default="", help="walkers to try (default: the preset's)")
    c.add_argument("--walk-scale", default="1", help="walk-cycle factors to try (default 1)")
    c.add_argument("--walk-extra", default="0", help="cycles added to each walk to try (default 0)")
    c.add_argument("--out", default="out/calibration", help="output directory (default out/calibration)")
    c.add_argument("--threads", type=int, help="simulation threads (default: all cores)")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    c.set_defaults(func=cmd_calibrate)

    p = esub.add_parser(
        "predict",
        help="partial simulation: a design's runtime from its simulated H, M, C and a model fitted on real runs",
        description="Partial simulation (Agbarya et al. 2020). The experiment directory's program is simulated under the "
        "design (--set/--config, on the experiment's trace, pools at their traced addresses), or a saved "
        "result is read (--result); the model (default Mosmodel) fitted on the directory's real layouts "
        "predicts its runtime, with the speed-up over the measured all-4KB layout and the model's error on "
        "held-out layouts (leave-one-out). A design outside the fitted H, M, C range by more than --margin "
        "of that range is refused unless --extrapolate.",
        epilog="example: xlat experiment predict out/experiment/numpy-gather --name stlb-2x --set tlb.l2d.entries=6144",
    )
    p.add_argument("dir", help="a finished 'xlat experiment mosmodel' directory")
    p.add_argument("--name", default="design", help="the design's name in the output")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="the design's overrides of the preset")
    p.add_argument("--config", help="the design's configuration file (instead of the preset)")
    p.add_argument("--cpu", help="preset (default: the experiment's)")
    p.add_argument("--result", help="a saved simulation result (xlat sim --json) instead of simulating")
    p.add_argument("--model", default="mosmodel", help="runtime model (default mosmodel)")
    p.add_argument(
        "--margin",
        type=float,
        default=0.1,
        help="allowed distance outside the fitted range, as a fraction of it",
    )
    p.add_argument(
        "--extrapolate",
        action="store_true",
        help="predict even outside the fitted range (said in the output)",
    )
    add_json_flag(p, "the prediction")
    p.add_argument("--threads", type=int, help="simulation threads")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress messages")
    p.set_defaults(func=cmd_predict)


def _grid_defaults():
    from xlat.experiment.calibrate import CPI_GRID, DEP_GRID

    return CPI_GRID, DEP_GRID
