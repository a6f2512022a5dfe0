"""``xlat sweep SWEEP.toml -o RESULTS/``: every point of a sweep file on Dask distributed,
resumable (docs/sweep.md); a summary table, ``--json`` and ``--plot Y --against AXIS``."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from xlat.cli.common import CliError, grid, progress
from xlat.cli.jsonopt import add_json_flag, emit_json, to_stdout
from xlat.cli.numfmt import count, ratio

#: Rows of the summary table printed (the dataset has them all).
SUMMARY_ROWS = 40


def summary_table(df) -> str:
    """One row per point: trace, configuration, accesses, walks and the MPKI of TLB levels 1-2."""
    import pandas as pd

    cols = [c for c in ("derived.tlb_level1.mpki", "derived.tlb_level2.mpki") if c in df.columns]
    head = ["trace", "point", "accesses", "walks", *[c.removeprefix("derived.") for c in cols]]
    axes = [c for c in df.columns if c.startswith("axis.")]
    df = df.sort_values(["trace", "base", "layout", *axes]).reset_index(drop=True)
    rows = []
    for _, r in df.head(SUMMARY_ROWS).iterrows():
        over = ",".join(f"{c.removeprefix('axis.')}={r[c]}" for c in axes if pd.notna(r[c]))
        label = f"{r['base']}" + (f":{r['layout']}" if r["layout"] else "") + (f"[{over}]" if over else "")
        rows.append(
            [
                os.path.basename(r["trace"]),
                label,
                count(r["accesses"]),
                count(r["walker.walks"]),
                *[ratio(r[c]) for c in cols],
            ]
        )
    text = grid(head, rows)
    if len(df) > SUMMARY_ROWS:
        text += (
            f"\n... and {len(df) - SUMMARY_ROWS} more points (pandas.read_parquet on the results directory)"
        )
    return text


def column(df, name: str) -> str:
    """A column by its name, with or without ``derived.``/``axis.``."""
    for c in (name, f"derived.{name}", f"axis.{name}"):
        if c in df.columns:
            return c
    raise CliError(f"the results have no column '{name}' (e.g. walker.walks, derived.tlb_level1.mpki)")


def plot(df, y: str, against: str, out: str, title: str = "") -> None:
    """``y`` against axis ``against``: one line per trace and combination of the other axes,
    each labelled with its axes' names and values, in a marker and line style of its own (lines
    that coincide stay visible); a numeric axis that doubles (entries, sets) on a log2 scale, a
    y that spans more than two decades on a log scale; titled ``title``."""
    from xlat._optional import need_pandas, need_pyplot

    plt = need_pyplot("--plot")
    pd = need_pandas("--plot")
    from xlat.sim import short_trace

    yc, xc = column(df, y), column(df, against)
    df = df[df[xc].notna()].copy()  # explicit points without this axis are not on the plot
    x = pd.to_numeric(df[xc], errors="coerce")
    numeric = bool(x.notna().all())
    df["_x"] = x if numeric else df[xc]
    others = [c for c in df.columns if c.startswith("axis.") and c != xc]
    keys = ["trace", "base", "layout", *others]
    fig, ax = plt.subplots(figsize=(10, 5))
    markers, styles = "osD^v<>pP*Xh", ("-", "--", ":", "-.")
    groups = list(df.groupby(keys, dropna=False, sort=True))
    for i, (k, g) in enumerate(groups):
        g = g.sort_values("_x")
        trace, base, layout, *vals = k
        parts = [short_trace(os.path.basename(str(trace)) if os.path.exists(str(trace)) else str(trace), 45)]
        parts += [str(v) for v in (base, layout) if v not in ("", None) and not pd.isna(v)]
        parts += [
            f"{c.removeprefix('axis.')}={v}" for c, v in zip(others, vals, strict=True) if not pd.isna(v)
        ]
        ax.plot(
            g["_x"],
            g[yc],
            marker=markers[i % len(markers)],
            linestyle=styles[i % len(styles)],
            markersize=7 - 3 * (i % 2),  # a smaller marker over a larger one where they coincide
            alpha=0.85,
            label=", ".join(parts),
        )
    xs = sorted(set(df["_x"])) if numeric else []
    if numeric and xs and xs[0] > 0 and xs[-1] / xs[0] >= 4:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [f"{v:g}" for v in xs])
        ax.minorticks_off()
    ys = pd.to_numeric(df[yc], errors="coerce").dropna()
    if len(ys) and ys.min() > 0 and ys.max() / ys.min() > 100:
        ax.set_yscale("log")
    ax.set_xlabel(against.removeprefix("axis."))
    ax.set_ylabel(y.removeprefix("derived.").removeprefix("counters."))
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def cmd_sweep(args: argparse.Namespace) -> int:
    from xlat.sweep import load, run_sweep
    from xlat.sweep.run import progress_printer

    if (args.plot is None) != (args.against is None):
        raise CliError("--plot Y and --against AXIS go together")
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, not {args.workers}")
    sweep = load(args.sweep)
    bar = progress(args)
    out = run_sweep(
        sweep,
        args.output,
        scheduler=args.scheduler,
        workers=args.workers,
        group=args.group,
        decode_once=args.decode_once,
        connect_timeout=args.connect_timeout,
        on_progress=progress_printer() if bar else None,
    )
    import pandas as pd

    from xlat.sweep.store import POINT_RE

    if any(POINT_RE.match(n) for n in os.listdir(args.output)):
        everything = pd.read_parquet(args.output)
        df = everything[everything["key"].isin(out.keys)]
    else:  # nothing finished (every point failed)
        everything = df = pd.DataFrame({"key": []})
    plot_path = None
    if args.plot and len(df):
        plot_path = args.plot_out or os.path.join(
            args.output, "_plots", f"{args.plot}-vs-{args.against}.png".replace("/", "_")
        )
        os.makedirs(os.path.dirname(os.path.abspath(plot_path)), exist_ok=True)
        points = f"{len(df)} points of {os.path.basename(args.sweep)}"
        plot(df, args.plot, args.against, plot_path, title=f"{args.plot} against {args.against}: {points}")
    summary: dict[str, Any] = {
        "results": args.output,
        "points": out.total,
        "already_done": out.skipped,
        "ran": out.ran,
        "failed": out.failed,
        "damaged": out.damaged,
        "rows": len(df),
        "rows_in_results": len(everything),
        "seconds": round(out.seconds, 3),
        "points_per_minute": round(out.ran / out.seconds * 60, 1) if out.seconds > 0 and out.ran else None,
        "scheduler": out.scheduler or None,
        "workers": out.workers or None,
        "plot": plot_path,
    }
    emit_json(args.json, summary, inputs=[args.sweep])
    if not to_stdout(args) and len(df):
        print(summary_table(df))
    rate = f", {summary['points_per_minute']} points/min" if summary["points_per_minute"] else ""
    print(
        f"sweep: {out.total} points: {out.skipped} already in {args.output}, {out.ran} run"
        f"{rate}, {len(out.failed)} failed",
        file=sys.stderr,
    )
    for f in out.failed[:5]:
        print(f"xlat: error: {f['point']}: {f['error']}", file=sys.stderr)
    return 1 if out.failed else 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from xlat.sweep.run import CONNECT_TIMEOUT_S, DECODE_ONCE, DEFAULT_GROUP

    s = sub.add_parser(
        "sweep",
        parents=[common],
        help="run every point of a sweep file on Dask (resumable)",
        description="Simulate every point of a sweep file (traces x base configurations x layouts x "
        "axes of --set overrides and/or explicit points) on Dask distributed: a LocalCluster of "
        "worker processes by default, or an existing cluster with --scheduler. Each finished point "
        "is one Parquet file in RESULTS, keyed by the hashes of its trace, configuration, layout and "
        "the xlat version; running the same command again runs only the missing points. "
        "pandas.read_parquet(RESULTS) reads every point. See docs/sweep.md.",
    )
    s.add_argument("sweep", metavar="SWEEP.toml")
    s.add_argument("-o", "--output", required=True, metavar="RESULTS", help="results directory")
    s.add_argument(
        "--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask scheduler (default: a LocalCluster)"
    )
    s.add_argument(
        "--workers", type=int, metavar="N", help="worker processes of the LocalCluster (default: all cores)"
    )
    s.add_argument(
        "--group",
        type=int,
        default=DEFAULT_GROUP,
        metavar="N",
        help=f"points of one trace per Dask task (default {DEFAULT_GROUP})",
    )
    s.add_argument(
        "--decode-once",
        choices=DECODE_ONCE,
        default="auto",
        help="feed a task's configurations from one decoding of their trace: always, never, or auto "
        "(when decoding costs at least half a run; docs/sweep.md)",
    )
    s.add_argument(
        "--connect-timeout",
        type=float,
        default=CONNECT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to try to reach --scheduler (default {CONNECT_TIMEOUT_S:g})",
    )
    add_json_flag(s, "a summary of the sweep")
    s.add_argument(
        "--plot", metavar="Y", help="plot column Y (a counter or derived figure) against --against"
    )
    s.add_argument("--against", metavar="AXIS", help="the axis key on the plot's x axis")
    s.add_argument(
        "--plot-out", metavar="PNG", help="where the plot goes (default RESULTS/_plots/Y-vs-AXIS.png)"
    )
    s.set_defaults(func=cmd_sweep, parser=s)
