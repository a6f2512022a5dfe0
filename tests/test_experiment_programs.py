"""The built-in programs of ``xlat experiment mosmodel``: each resolves to an executable, and each
Python one runs natively to completion with the same output every time (the experiment needs
the traced and the timed runs to do the same work)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from xlat.experiment.program import programs, resolve

PROGRAMS = programs()
SCRIPTS = {name: p for name, p in PROGRAMS.items() if p.argv[1:2] == ("-c",)}


def test_every_built_in_program_resolves():
    assert {
        "numpy-gather",
        "index-join",
        "sysbench-rnd",
        "dict-lookups",
        "xz-9",
        "graph-bfs",
        "sqlite-join",
        "numpy-sort",
    } <= set(PROGRAMS)
    for name, prog in PROGRAMS.items():
        assert prog.name == name and prog.description
        if "/" not in prog.argv[0] and shutil.which(prog.argv[0]) is None:
            continue  # e.g. sysbench not installed: resolve() names the package, tested below
        exe = resolve(prog).argv[0]
        assert os.path.isabs(exe) and os.access(exe, os.X_OK), (name, exe)
    for name, prog in SCRIPTS.items():
        # The interpreter itself, never a wrapper script (pyenv shims fork under hugetlb pools).
        assert os.path.realpath(prog.argv[0]) == prog.argv[0], name
        compile(prog.argv[2], name, "exec")
        assert prog.env["PYTHONHASHSEED"] == "0", name
    if shutil.which("sysbench") is None:
        with pytest.raises(Exception, match="apt-get install sysbench"):
            resolve(PROGRAMS["sysbench-rnd"])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_python_programs_run_to_completion_deterministically(name):
    prog = resolve(SCRIPTS[name])
    env = {**os.environ, **prog.env}
    outs = [
        subprocess.run(prog.argv, env=env, capture_output=True, text=True, timeout=60, check=False)
        for _ in range(2)
    ]
    for p in outs:
        assert p.returncode == 0, p.stderr
        assert p.stderr == "", p.stderr
    assert outs[0].stdout.strip(), "prints a result"
    assert outs[0].stdout == outs[1].stdout, "the same output every run"
