"""Running a program under a layout: the preloaded library, the environment that hands it the
layout, and :func:`run`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from xlat._data import NativeBuildError, build_native, checkout
from xlat.layout import Layout, load_layout
from xlat.mosaic.errors import EXIT_NOT_HONOURED, MosaicError
from xlat.mosaic.hugepages import check_huge_pages, compact, fork_note, thp_fallbacks
from xlat.mosaic.verify import verify_run

#: The preloaded library's file name.
LIBRARY = "libxlat_mosaic.so"


def library_path() -> Path:
    """Path of libxlat_mosaic.so: ``XLAT_MOSAIC_LIB`` if set; else, in a checkout, the one next to
    this package (``xlat/_lib/``, where ``make -C native/mosaic`` puts it); else (an installed
    wheel) the one built from the sources the wheel carries into the user's cache
    (``~/.cache/xlat/native/``), on first use."""
    env = os.environ.get("XLAT_MOSAIC_LIB")
    if not env and checkout() is None:
        try:
            built = build_native(
                "mosaic", "the mosaic allocator", {"OUT_DIR": ".", "BUILD": "build"}, LIBRARY
            )
        except NativeBuildError as e:
            raise MosaicError(str(e)) from None
        return built.resolve()
    path = Path(env) if env else Path(__file__).resolve().parents[1] / "_lib" / LIBRARY
    if not path.is_file():
        raise MosaicError(f"the mosaic library {path} is not built; run `make -C native/mosaic`.")
    return path.resolve()


def _resolve_program(prog: str) -> str:
    if "/" in prog:
        if not os.path.isfile(prog):
            raise MosaicError(f"program '{prog}' does not exist.")
        if not os.access(prog, os.X_OK):
            raise MosaicError(f"program '{prog}' is not executable.")
        return prog
    found = shutil.which(prog)
    if not found:
        raise MosaicError(f"program '{prog}' was not found on PATH.")
    return found


def mosaic_env(
    layout: Layout,
    mode: str = "hugetlb",
    best_effort: bool = False,
    report_dir: str | None = None,
    base: dict[str, str] | None = None,
    keep_freed: bool = False,
) -> dict[str, str]:
    """The environment that runs a program under ``layout`` (the preload plus XLAT_MOSAIC_*).
    With ``keep_freed``, memory the program frees stays populated (``XLAT_MOSAIC_KEEP_FREED``)."""
    env = dict(os.environ if base is None else base)
    lib = str(library_path())
    old = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib + (" " + old if old else "")
    env.update(layout.to_env())
    env["XLAT_MOSAIC_MODE"] = mode
    env["XLAT_MOSAIC_BEST_EFFORT"] = "1" if best_effort else "0"
    env["XLAT_MOSAIC_KEEP_FREED"] = "1" if keep_freed else "0"
    if report_dir:
        env["XLAT_MOSAIC_REPORT"] = report_dir
    else:
        env.pop("XLAT_MOSAIC_REPORT", None)
    return env


def run(
    layout: Layout | str | Path,
    argv: list[str],
    mode: str = "hugetlb",
    verify: bool = False,
    best_effort: bool = False,
    *,
    keep_freed: bool = False,
    compact_first: bool = False,
    report_to=None,
    reports: list | None = None,
    stdout=None,
    stderr=None,
) -> int:
    """Run ``argv`` with its memory backed by ``layout``; returns the program's exit status
    (128 + N if killed by signal N).  With ``verify``, every process of the run that loaded the
    library (the program, and each process it forked or exec'd) is checked: a per-window report of
    each goes to ``report_to`` (default stderr), their :class:`VerifyReport` objects are appended to
    ``reports`` if given (the program's first), and a program that succeeded returns 3 if the layout
    was not honoured in some process or some process failed.  ``stdout``/``stderr`` go to the program.
    With ``keep_freed``, memory the program frees stays populated instead of being handed back to
    the kernel (as in Mosalloc's pools), so reusing it takes no page faults.

    Raises :class:`MosaicError` or :class:`LayoutError` (one sentence) before the program starts
    if it cannot be run as asked."""
    if not isinstance(layout, Layout):
        layout = load_layout(layout)
    if not argv:
        raise MosaicError("no program was given to run.")
    if not best_effort:
        check_huge_pages(layout, mode)
        note = fork_note(layout, mode)
        if note:
            print(f"xlat: note: {note}", file=sys.stderr)
    elif mode not in ("hugetlb", "thp"):
        raise MosaicError(f"mode {mode!r} is not hugetlb or thp.")
    prog = _resolve_program(argv[0])
    if compact_first:
        compact()
    report_dir = tempfile.mkdtemp(prefix="xlat-mosaic-") if verify else None
    env = mosaic_env(layout, mode, best_effort, report_dir, keep_freed=keep_freed)
    fallbacks_before = thp_fallbacks() if verify and mode == "thp" else None
    try:
        try:
            # argv[0] as the user wrote it (some programs look at it), the resolved path to exec
            proc = subprocess.Popen(list(argv), env=env, stdout=stdout, stderr=stderr, executable=prog)
        except OSError as err:
            raise MosaicError(f"program '{argv[0]}' could not be started ({err.strerror}).") from None
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:
                # the child got the same SIGINT; wait for it so that its report is complete
                continue
        if rc < 0:
            rc = 128 - rc
        if verify:
            fallbacks = None
            if fallbacks_before is not None:
                after = thp_fallbacks()
                fallbacks = None if after is None else after - fallbacks_before
            run_rep = verify_run(report_dir, proc.pid, rc, layout, mode, fallbacks)
            print(run_rep.format(), file=report_to or sys.stderr, end="")
            if reports is not None:
                reports.extend(run_rep.processes)
            if not run_rep.honoured and rc == 0:
                rc = EXIT_NOT_HONOURED
        return rc
    finally:
        if report_dir:
            shutil.rmtree(report_dir, ignore_errors=True)
