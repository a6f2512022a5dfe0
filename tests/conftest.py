import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_xlat(*args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    """Run the installed CLI as a user would (a separate process), capturing its output."""
    env = dict(os.environ, PYTHONWARNINGS="error")
    p = subprocess.run([sys.executable, "-m", "xlat", *args], capture_output=True, text=True, env=env, **kw)
    if check and p.returncode != 0:
        raise AssertionError(f"xlat {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def xlat_cli():
    return run_xlat
