import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from mosaic_support import NEED_1GB, NEED_2MB, PROG_NAMES, PROGS
from xlat import mosaic
from xlat.results import schema as results_schema

ROOT = Path(__file__).resolve().parent.parent


_VALIDATOR = jsonschema.Draft202012Validator(results_schema())


def results(doc) -> list[dict]:
    """The results of a ``--json`` document (text or parsed), checked to be one: docs/results-schema.md."""
    d = json.loads(doc) if isinstance(doc, str) else doc
    _VALIDATOR.validate(d)  # every --json document a test reads is checked against the schema
    return d["results"]


def result(doc) -> dict:
    """The one result of a ``--json`` document."""
    (r,) = results(doc)
    return r


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


# ---- the mosaic allocator's tests (test_mosaic.py, test_mosaic_corpus.py; mosaic_support.py) ----


@pytest.fixture(scope="session")
def lib():
    """Build the library from this checkout; point xlat.mosaic at it even when the package under
    test is installed elsewhere (a wheel in a virtualenv has no _lib/ of its own)."""
    r = subprocess.run(["make", "-s", "-C", str(ROOT / "native" / "mosaic")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    built = ROOT / "python" / "xlat" / "_lib" / "libxlat_mosaic.so"
    assert built.is_file()
    os.environ.setdefault("XLAT_MOSAIC_LIB", str(built))
    return mosaic.library_path()


@pytest.fixture(scope="session")
def hugepages():
    """Make sure enough huge pages are free; release what this fixture added at the end.  Yields a
    dict page size -> None if available, else the reason it is not (1GB pages need contiguous
    memory and may be impossible on a fragmented machine; only the tests that need them skip)."""
    added = {"2MB": 0, "1GB": 0}
    missing: dict[str, str | None] = {"2MB": None, "1GB": None}
    st = mosaic.status()
    for page, need in (("2MB", NEED_2MB), ("1GB", NEED_1GB)):
        have = st.get(page, {}).get("available", 0)
        if have >= need:
            continue
        if os.geteuid() != 0:
            missing[page] = f"needs {need} free {page} huge pages and root to reserve them"
            continue
        try:
            added[page] = mosaic.reserve(need - have, page)
        except mosaic.MosaicError as err:
            missing[page] = str(err)
    if missing["2MB"]:
        pytest.skip(missing["2MB"])
    yield missing
    for page, n in added.items():
        if n:
            mosaic.release(n, page)


@pytest.fixture(scope="session")
def progs(tmp_path_factory, lib):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler (apt-get install gcc)")
    out = tmp_path_factory.mktemp("progs")
    built = {}
    for name in PROG_NAMES:
        exe = out / name
        subprocess.run([cc, "-O2", "-pthread", "-o", str(exe), str(PROGS / f"{name}.c"), "-ldl"], check=True)
        built[name] = str(exe)
    return built


@pytest.fixture(scope="session")
def reproduce_out(tmp_path_factory):
    """One output directory per ``xlat reproduce`` document for the whole session: the generic
    test and each document's own test run the same --quick pipeline, the second finding every
    point finished (a run resumes; only the report is computed again)."""
    return tmp_path_factory.mktemp("reproduce")
