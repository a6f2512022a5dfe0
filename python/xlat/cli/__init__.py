"""The ``xlat`` command line: one entry point, one subcommand per job.

Each command lives in its own module here (``workloads``, ``trace_info``, ``convert`` (and
``import``), ``sim``, ``rmm``, ``fidelity``, ``mrc``, ``demo``, ``run`` (and ``hugepages``), ``trace``, ``experiment``,
``contiguity``, ``sweep``, ``model``), and
registers its parser with a ``register`` function; :mod:`xlat.cli.common` holds what they share.

Errors a user can cause print one sentence (``xlat: error: ...``) and exit with status 1;
usage errors exit with 2 (argparse's convention).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from xlat import __version__
from xlat.cli.common import CliError, add_progress_flags, run_command

__all__ = ["CliError", "build_parser", "main"]

EXAMPLES = """\
examples (quote workload specs: & and ? are special to the shell):
  xlat workloads
  xlat trace-info 'workload:gups?size=64GiB&accesses=1000000'
  xlat convert 'workload:bfs?scale=18' bfs.xlat
  xlat convert bfs.xlat bfs.txt          # the plain text form
  xlat trace-info bfs.xlat --json        # JSON on stdout (--json FILE writes FILE)
  xlat sim bfs.xlat
  xlat sim --cpu skylake --policies 4k,thp bfs.xlat --json out.json
  xlat sim --cpu skylake --cpu zen4 --set skylake:tlb.stlb.entries=2048 bfs.xlat
  xlat fidelity xz.xlat --epoch 10000000   # access/dirty bits at G bits per 2MB page
  xlat sweep sweep.toml -o results/        # every point of a sweep file on Dask, resumable
  xlat reproduce rmm --quick              # a document's findings beside xlat's figures
  xlat mrc xz.xlat --sets 1,16 --plot mrc.png   # misses of an LRU TLB of every size
  xlat superpage-touch xz.xlat --plot touch.png  # touched 4KB pages per 2MB superpage (Rainbow)
  xlat rainbow xz.xlat --dram 256MiB       # Rainbow against its four baselines (hybrid DRAM/NVM)
  xlat contiguity --pid 1234              # ranges of contiguous pages in a live process (root)
  xlat sim bfs.xlat --skip 1M --warmup 1M --limit 10M   # a window of the trace (docs/windows.md)
  xlat cut bfs.xlat part.xlat --skip 1M --limit 10M     # ... written as a trace of its own

Help texts and docs cite the reference documents by author and year: Karakostas 2016 (RMM,
Lite), Bala 1995 (Mach), Agbarya et al. 2020 (partial simulation), Wang et al. 2018 (Rainbow),
Ausavarungnirun et al. 2020 (PRISM); docs/references.md gives their full citations.
"""


def build_parser() -> argparse.ArgumentParser:
    # Imported here, not at the top: `python -m xlat.mosaic` imports this package for xlat.cli.run,
    # and must work without the Rust extension, which the other commands import.
    from xlat.cli import (
        config,
        contiguity,
        convert,
        demo,
        experiment,
        fidelity,
        model,
        mrc,
        rainbow,
        reclaim,
        reproduce,
        rmm,
        run,
        sim,
        sweep,
        touch,
        trace,
        trace_info,
        workloads,
    )

    common = argparse.ArgumentParser(add_help=False)
    add_progress_flags(common)

    p = argparse.ArgumentParser(
        prog="xlat",
        description="xlat: trace programs, simulate address translation, model runtime, back programs with page mosaics.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"xlat {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    workloads.register(sub, common)
    trace_info.register(sub, common)
    convert.register_convert(sub, common)
    convert.register_cut(sub, common)  # a window of a trace as a trace
    sim.register(sub, common)
    sweep.register(sub, common)  # many points on Dask (resumable)
    rmm.register(sub, common)  # Redundant Memory Mappings against its baselines
    reproduce.register(sub, common)  # a reference document's findings beside xlat's figures
    fidelity.register(sub, common)  # access/dirty-bit fidelity at G bits per 2MB page (PRISM)
    reclaim.register(sub, common)  # eviction under memory pressure at G bits per 2MB page (PRISM)
    mrc.register(sub, common)  # one-pass LRU miss-ratio curves of TLBs of every size
    touch.register(sub, common)  # superpage-touch: touched 4KB pages per 2MB superpage (Rainbow)
    rainbow.register(sub, common)  # Rainbow against its four baselines (hybrid DRAM/NVM)
    demo.register(sub, common)
    run.register(sub)  # run and hugepages (the mosaic allocator)
    trace.register(sub)  # trace (real programs under QEMU)
    convert.register_import(sub)  # import (lackey, ChampSim, drmemtrace)
    convert.register_export(sub)  # export champsim
    experiment.register(sub)  # experiment mosmodel (real runs against simulated metrics)
    contiguity.register(sub)  # contiguity (ranges in live processes' page tables)
    model.register(sub, common)  # model mach (Bala 1995, chapter 5)
    config.register(sub, common)  # config list / show: presets and effective configurations
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from xlat.cli.jsonopt import set_invocation

    set_invocation(list(sys.argv[1:] if argv is None else argv))
    return run_command(args.func, args)


if __name__ == "__main__":
    sys.exit(main())
