"""``xlat reproduce DOCUMENT``: one reference document's experiment over a suite of programs,
run through the sweep machinery (Dask, resumable: docs/sweep.md), and its findings with xlat's
figures beside the document's, a verdict each (docs/reproduction.md).

A document is a module of this package with a :class:`Document` named ``DOCUMENT``: the
programs it runs (the big-memory suite of ``xlat workloads real``, or small synthetic inputs
with ``quick``), the configurations ("variants", ablations among them) and a function that turns
the finished points into tables and findings. This module holds what they share: the runner,
the report and its Markdown.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "DOCUMENTS",
    "Data",
    "Document",
    "Finding",
    "Program",
    "Report",
    "ReproduceError",
    "Table",
    "Variant",
    "find",
    "run",
]

#: Short name -> (module, seed file, what of the seed it is).
DOCUMENTS: dict[str, tuple[str, str, str]] = {
    "rmm": ("xlat.reproduce.rmm", "000_a44384fd80f6240a.txt", "Karakostas 2016, chapter 4 (RMM)"),
    "rainbow": ("xlat.reproduce.rainbow", "003_09b9348382cdec1b.txt", "Wang et al. 2018 (Rainbow)"),
    "prism": ("xlat.reproduce.prism", "004_7cf9e7950f33942f.txt", "Ausavarungnirun et al. 2020 (PRISM)"),
    "lite": ("xlat.reproduce.lite", "000_a44384fd80f6240a.txt", "Karakostas 2016, chapter 5 (Lite)"),
    "mach": ("xlat.reproduce.mach", "001_0bd70b70c17a550f.txt", "Bala 1995 (Mach software TLBs)"),
    "mosmodel": ("xlat.reproduce.mosmodel", "002_8e0604820d0c2230.txt", "Agbarya et al. 2020 (Mosmodel)"),
}
#: Other names a document answers to (the seed file's short name, an author).
ALIASES = {"karakostas-ch4": "rmm", "redundant-memory-mappings": "rmm", "partial-simulation": "mosmodel"}
#: The verdicts a finding can have.
VERDICTS = ("reproduced", "differs", "not applicable", "not measured")


class ReproduceError(ValueError):
    """A document, program, scheduler or machine ``xlat reproduce`` cannot use (one sentence)."""


@dataclass(frozen=True)
class Program:
    """One input: a name for the tables and a trace (``recipe:NAME``, ``workload:...``, a file)."""

    name: str
    trace: str


@dataclass(frozen=True)
class Variant:
    """One configuration: preset ``cpu`` (or the configuration file ``config``, which then takes
    its place) with ``sets`` (``--set`` overrides). ``ablation``: what the variant removes, when
    it is an ablation (shown in the report)."""

    name: str
    cpu: str
    sets: tuple[str, ...]
    ablation: str = ""
    config: str | None = None

    @property
    def base(self) -> tuple[str, str]:
        """The sweep point's base: ("config", path) or ("cpu", preset)."""
        return ("config", self.config) if self.config else ("cpu", self.cpu)


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""


@dataclass
class Finding:
    """One finding of the document: where it is stated, what it says, its figure, xlat's figure,
    the verdict and, for a difference, the measured cause (an ablation's figure)."""

    section: str
    claim: str
    document: str
    xlat: str
    verdict: str
    why: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


@dataclass
class Data:
    """The finished points: one result row (sweep columns) per (program, variant)."""

    programs: list[Program]
    variants: list[Variant]
    rows: dict[tuple[str, str], dict[str, Any]]
    #: Program name -> a trace its analyses can read: the file a ``recipe:`` was traced into,
    #: else the program's own trace (a spec or a file).
    paths: dict[str, str] = field(default_factory=dict)
    #: Figures a document derives from the rows, kept for this run only (e.g. Lite's energy per
    #: point, which several findings read).
    memo: dict[Any, Any] = field(default_factory=dict)

    def __call__(self, program: str, variant: str) -> dict[str, Any]:
        return self.rows[(program, variant)]

    def get(self, program: str, variant: str, column: str, default: Any = 0) -> Any:
        v = self.rows[(program, variant)].get(column, default)
        return default if v is None or (isinstance(v, float) and v != v) else v


@dataclass
class Report:
    document: str
    title: str
    seed: str
    command: str
    version: str
    quick: bool
    programs: list[Program]
    variants: list[Variant]
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: Mechanism-level checks (name -> held), asserted by ``make test`` on ``--quick``.
    checks: dict[str, bool] = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)
    #: The output directory (plots go there; the Markdown names them relative to it).
    out: str = ""

    def verdicts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for f in self.findings:
            out[f.verdict] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdicts"] = self.verdicts()
        return d

    def markdown(self, images: dict[str, str] | None = None) -> str:
        """The report as a Markdown section (docs/reproduction.md holds one per document).
        ``images``: plot path -> the path the Markdown names (default: relative to ``out``)."""
        v = self.verdicts()
        out = [
            f"## {self.title}",
            "",
            f"Generated by `{self.command}` (xlat {self.version}); seed `{self.seed}`.",
            "",
            "Programs: " + ", ".join(f"{p.name} (`{_trace_text(p.trace)}`)" for p in self.programs) + ".",
            "",
            "Configurations: "
            + "; ".join(
                f"**{x.name}** (`{x.config or x.cpu}`" + (f"; ablation: {x.ablation})" if x.ablation else ")")
                for x in self.variants
            )
            + "."
            if self.variants
            else "",
            "",
            f"Findings: {len(self.findings)}; " + ", ".join(f"{n} {k}" for k, n in v.items() if n) + ".",
            "",
            "### Findings",
            "",
            "| finding | section | document | xlat | verdict | measured cause / ablation |",
            "|---|---|---|---|---|---|",
        ]
        for f in self.findings:
            out.append(
                f"| {_cell(f.claim)} | {_cell(f.section)} | {_cell(f.document)} | {_cell(f.xlat)} | "
                f"{f.verdict} | {_cell(f.why) or '-'} |"
            )
        for t in self.tables:
            out += ["", f"### {t.title}", "", "| " + " | ".join(t.columns) + " |"]
            out.append("|" + "---|" * len(t.columns))
            out += ["| " + " | ".join(_cell(_fmt(c)) for c in r) + " |" for r in t.rows]
            if t.note:
                out += ["", t.note]
        for p in self.plots:
            name = (images or {}).get(p) or os.path.relpath(p, self.out or ".")
            out += ["", f"![{os.path.basename(p)}]({name})"]
        return "\n".join(out) + "\n"


def _trace_text(trace: str) -> str:
    """A program's trace as the report names it: a file by its name (its directory is the
    machine's), a spec or recipe as given."""
    return os.path.basename(trace) if os.path.isabs(trace) else trace


def _cell(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "-" if v is None else str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if v != v:
            return "-"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


@dataclass(frozen=True)
class Document:
    """What a document module declares. ``programs(quick)`` and ``variants(quick)`` give the
    points (every program under every variant); ``report(data, report)`` fills the report's
    tables, findings and checks from the finished points; ``window(quick)``: the window of every
    trace (skip, warmup, limit) or None."""

    name: str
    title: str
    seed: str
    programs: Callable[[bool], list[Program]]
    variants: Callable[[bool], list[Variant]]
    report: Callable[[Data, Report], None]
    window: Callable[[bool], tuple[int, int, int | None] | None] = lambda quick: None
    #: For a document whose points are not simulations (mosmodel's timed real runs):
    #: ``execute(programs, results_dir, quick, log)`` runs them (resumable, in ``results_dir``)
    #: and returns the rows, keyed (program, variant); the sweep is not used.
    execute: Callable[[list[Program], str, bool, Callable[[str], None] | None], dict] | None = None
    #: ``--programs`` entries the document names itself, before recipes, specs and files
    #: (``program(text)``: a :class:`Program`, or None when the text is not one of its own).
    program: Callable[[str], Program | None] | None = None


def find(name: str) -> Document:
    """The document called ``name`` (short name, alias or seed file name)."""
    key = name.strip().lower().removesuffix(".txt")
    key = ALIASES.get(key, key)
    for short, (_, seed, _w) in DOCUMENTS.items():
        if key in (seed.removesuffix(".txt"), seed[:3]):
            key = short
    if key not in DOCUMENTS:
        raise ReproduceError(
            f"there is no document '{name}' to reproduce: choose among {', '.join(DOCUMENTS)}"
        )
    return importlib.import_module(DOCUMENTS[key][0]).DOCUMENT


def program_of(
    text: str,
    suite: list[Program] = (),
    traces: str | None = None,
    doc_program: Callable[[str], Program | None] | None = None,
) -> Program:
    """A ``--programs`` entry: the name of a program of the document's ``suite``, a recipe name,
    a ``workload:`` spec or a trace file. ``traces``: a directory of traces already made, where
    a recipe NAME is read from ``NAME.xlat`` when present instead of being traced again."""
    from xlat import real_workloads as rw

    mine = {p.name: p for p in suite}
    if doc_program is not None and (own := doc_program(text)) is not None:
        return own
    if text in mine:
        return _traced(mine[text], traces)
    if text.startswith("workload:"):
        return Program(text.removeprefix("workload:").split("?")[0], text)
    if os.path.isfile(text):
        return Program(os.path.basename(text).removesuffix(".xlat"), os.path.abspath(text))
    names = [r.name for r in rw.recipes()]
    if text not in names:
        raise ReproduceError(
            f"'{text}' is neither a trace file, a workload: spec nor a real-program recipe "
            f"(recipes: {', '.join(names)})"
        )
    return _traced(Program(text, f"recipe:{text}"), traces)


def _traced(p: Program, traces: str | None) -> Program:
    if traces and p.trace.startswith("recipe:"):
        path = os.path.join(traces, f"{p.trace.removeprefix('recipe:')}.xlat")
        if os.path.isfile(path):
            return Program(p.name, os.path.abspath(path))
    return p


def _check_memory(programs: list[Program], results_dir: str) -> None:
    """Every recipe still to trace fits in the memory available (one sentence before anything)."""
    from xlat import real_workloads as rw
    from xlat.sweep.run import recipe_trace_path
    from xlat.tracing import TracingError

    for p in programs:
        if not p.trace.startswith("recipe:"):
            continue
        name = p.trace.removeprefix("recipe:")
        if os.path.exists(recipe_trace_path(results_dir, name)):
            continue
        try:
            rw.check_memory(rw.find(name))
        except TracingError as e:
            raise ReproduceError(str(e)) from None


def run(
    document: str,
    out: str,
    *,
    quick: bool = False,
    programs: list[str] | None = None,
    traces: str | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    connect_timeout: float = 5.0,
    command: str = "",
    on_progress: Callable[[int, int, float], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> Report:
    """Run ``document``'s experiment into ``out`` and return its report: ``out/results`` (the
    sweep's dataset, resumable), ``out/NAME.md``, ``out/NAME.json`` and plots. ``programs``:
    :func:`program_of` entries instead of the document's suite; ``traces``: a directory of
    recipe traces already made; ``log``: progress messages of a document's own runner."""
    doc = find(document)
    if traces is not None and not os.path.isdir(traces):
        raise ReproduceError(f"--traces {traces} is not a directory")
    suite = doc.programs(quick)
    if programs is None:
        progs = [_traced(p, traces) for p in suite]
    else:
        progs = [program_of(p, suite, traces, doc.program) for p in programs]
        # Two specs of one workload: each named by its whole spec.
        names = [p.name for p in progs]
        progs = [
            Program(p.trace.removeprefix("workload:"), p.trace) if names.count(p.name) > 1 else p
            for p in progs
        ]
    if not progs:
        raise ReproduceError("no programs to run: --programs names none")
    if len({p.name for p in progs}) != len(progs):
        raise ReproduceError("two programs have the same name: give each program once")
    variants = doc.variants(quick)
    results_dir = os.path.join(out, "results")
    os.makedirs(results_dir, exist_ok=True)
    if doc.execute is not None:
        if scheduler:
            raise ReproduceError(
                f"{doc.name}'s points are timed runs on this machine; a --scheduler cannot run them elsewhere"
            )
        rows, paths = doc.execute(progs, results_dir, quick, log), {}
    else:
        _check_memory(progs, results_dir)
        rows, paths = _sweep_rows(
            doc, progs, variants, quick, results_dir, scheduler, workers, connect_timeout, on_progress
        )
    from xlat import __version__

    report = Report(
        doc.name,
        doc.title,
        doc.seed,
        command or f"xlat reproduce {doc.name}" + (" --quick" if quick else ""),
        __version__,
        quick,
        progs,
        variants,
        out=out,
    )
    traces = {p.name: paths.get(p.trace, p.trace) for p in progs}
    doc.report(Data(progs, variants, rows, traces), report)
    with open(os.path.join(out, f"{doc.name}.md"), "w") as f:
        f.write(report.markdown())
    with open(os.path.join(out, f"{doc.name}.json"), "w") as f:
        json.dump(report.to_dict(), f, indent=1, default=str)
    return report


def _sweep_rows(
    doc: Document,
    progs: list[Program],
    variants: list[Variant],
    quick: bool,
    results_dir: str,
    scheduler: str | None,
    workers: int | None,
    connect_timeout: float,
    on_progress: Callable[[int, int, float], None] | None,
) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, str]]:
    """Every program under every variant through the sweep: the rows, keyed (program, variant),
    and the trace each ``recipe:`` was made into."""
    from xlat.sweep.run import plan, run_sweep
    from xlat.sweep.spec import Point, Sweep, SweepError, check
    from xlat.sweep.store import Results, xlat_version
    from xlat.tracing import TracingError
    from xlat.window import window as make_window

    where = f"xlat reproduce {doc.name}"
    points = [Point(p.trace, *v.base, v.sets, None) for p in progs for v in variants]
    win = doc.window(quick)
    try:
        resolved = check(points, [], where)
        sweep = Sweep(
            where, [p.trace for p in progs], points, [], resolved, make_window(*win) if win else make_window()
        )
        outcome = run_sweep(
            sweep,
            results_dir,
            scheduler=scheduler,
            workers=workers,
            connect_timeout=connect_timeout,
            on_progress=on_progress,
        )
        if outcome.failed:
            f = outcome.failed[0]
            raise ReproduceError(
                f"{len(outcome.failed)} of {outcome.total} points failed (first: {f['point']}: {f['error']}); "
                f"the {outcome.skipped + outcome.ran} finished are kept in {results_dir}"
            )
        version = xlat_version()
        results = Results(results_dir, version)
        planned, paths = plan(sweep, results, version)
    except (SweepError, TracingError) as e:
        raise ReproduceError(str(e)) from None
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    by_key: dict[str, dict[str, Any]] = {}
    for i, pl in enumerate(planned):
        if pl.key not in by_key:
            by_key[pl.key] = results.read(pl.key)
        p, v = progs[i // len(variants)], variants[i % len(variants)]
        rows[(p.name, v.name)] = by_key[pl.key]
    return rows, paths


def splice(path: str, report: Report) -> None:
    """Replace ``report``'s section in the Markdown file ``path`` (between the markers
    ``<!-- reproduce:NAME -->`` and ``<!-- /reproduce:NAME -->``; appended when absent)."""
    import shutil

    begin, end = f"<!-- reproduce:{report.document} -->", f"<!-- /reproduce:{report.document} -->"
    images = {}
    for p in report.plots:  # beside the Markdown file, in its img/ folder
        rel = os.path.join("img", f"reproduce-{os.path.basename(p)}")
        os.makedirs(os.path.join(os.path.dirname(os.path.abspath(path)), "img"), exist_ok=True)
        shutil.copyfile(p, os.path.join(os.path.dirname(os.path.abspath(path)), rel))
        images[p] = rel
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    block = f"{begin}\n{report.markdown(images)}{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + block + "\n"
    with open(path, "w") as f:
        f.write(text)
