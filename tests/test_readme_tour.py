"""The README's tour runs as written: every line of its ``sh`` block under "## A tour", in order,
in a fresh, empty directory (layouts and configurations are named, so no ``configs/`` is
needed), through this checkout's ``xlat``.

A line is skipped (with the reason) only when this machine lacks what it needs: QEMU for
``xlat trace``, root for ``contiguity -- PROGRAM`` (pagemap frame numbers), and for ``xlat run`` on ``all-2MB`` the
2048 free 2MB huge pages, which are reserved the way the rest of the suite does it (the session's
``hugepages`` fixture: reserved when root, released at the end)."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT


def tour_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## A tour\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the README's tour has no sh block"
    lines = []
    for line in block[1].splitlines():
        # a comment starts at a '#' preceded by spaces, outside quotes (shlex knows)
        words = shlex.split(line, comments=True)
        if words:
            lines.append(shlex.join(words))
    return lines


def test_the_tour_parses_and_names_its_needs():
    lines = tour_lines()
    assert len(lines) >= 10
    assert lines[0] == "xlat workloads"
    readme = (ROOT / "README.md").read_text()
    # item 15: the sort example's input is made in the tour, and its huge pages are stated
    assert any(line.startswith("shuf ") and "big.txt" in line for line in lines)
    assert "2048 free 2MB huge pages" in " ".join(readme.split())


def _needs(line: str, request) -> str | None:
    """Why this machine cannot run ``line`` (None: it can)."""
    words = shlex.split(line)
    if words[:2] == ["xlat", "trace"] and shutil.which("qemu-x86_64") is None:
        return "xlat trace needs qemu-x86_64 (apt-get install qemu-user)"
    if words[:2] == ["xlat", "contiguity"] and "--" in words and os.geteuid() != 0:
        return "xlat contiguity -- PROGRAM reads /proc/kpageflags and frame numbers: needs root"
    if words[:2] == ["xlat", "run"]:
        request.getfixturevalue("lib")  # the mosaic library (make demo builds it in a fresh clone)
    if words[:2] == ["xlat", "run"] and "--best-effort" not in words:
        try:
            request.getfixturevalue("hugepages")
        except pytest.skip.Exception as e:
            return f"xlat run on {words[words.index('--layout') + 1]}: {e}"
    if words[:2] == ["xlat", "fidelity"] or "--plot" in words:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return "--plot needs matplotlib (pip install 'xlat[experiment]')"
    return None


def test_the_tour_runs_as_written(tmp_path, request):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # `xlat` is this checkout's CLI, run by the interpreter running the tests
    xlat = bindir / "xlat"
    xlat.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m xlat "$@"\n')
    xlat.chmod(0o755)
    skipped = []
    for line in tour_lines():
        why = _needs(line, request)
        if why:
            skipped.append(f"{line}: {why}")
            continue
        env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")  # after the fixtures' settings
        p = subprocess.run(line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert p.returncode == 0, f"{line}\nexit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
        assert "Traceback" not in p.stderr, (line, p.stderr)
    # what the tour made is what it says it makes
    for f in ("bfs.xlat", "bfs.txt", "result.json", "out.csv", "big.txt"):
        assert (tmp_path / f).stat().st_size > 0, f
    assert len((tmp_path / "big.txt").read_text().split()) == 2_000_000
    if skipped:
        pytest.skip("ran every line but: " + "; ".join(skipped))
