"""The shared layout corpus (tests/layouts/, its README says how files are annotated) through the
Python parser (xlat.layout) and the allocator's C parser (native/mosaic/options.c, driven by
`make layout-check`'s driver).  crates/xlat-core/tests/layouts.rs runs the same files through the
simulator's Rust parser, so the three agree file by file."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from xlat.layout import (
    DEFAULT_SIZES,
    MAX_POOL_SIZE,
    MAX_WINDOWS,
    PAGE_SIZES,
    POOL_NAMES,
    TIB,
    LayoutError,
    load_layout,
)

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "layouts"
GOOD = sorted((CORPUS / "good").glob("*.toml"))
BAD = sorted((CORPUS / "bad").glob("*.toml"))
MOSAIC = ROOT / "native" / "mosaic"

# What every parser says about an empty file, which has no room for annotations.
EMPTY_ERROR = "'version' is missing (this reader understands version = 1)."


def annotations(path: Path) -> dict[str, list[str]]:
    """The corpus annotations of one file: {"expect": [...], "error": [...], "c-error": [...], "rule": [...]}."""
    text = path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")
    out: dict[str, list[str]] = {"expect": [], "error": [], "c-error": [], "rule": []}
    for line in text.splitlines():
        if not line.startswith("# "):
            break
        for key in ("expect ", "error: ", "c-error: "):
            if line.startswith("# " + key):
                out[key.strip(" :")].append(line[len(key) + 2 :])
                break
        else:
            if line.startswith("# Rule "):
                out["rule"].append(line[2:])
    return out


_ANN_UNITS = {"": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
_ANN_PAGES = {"4KB": 4096, "2MB": 2 << 20, "1GB": 1 << 30}


def _ann_bytes(text: str) -> int:
    m = re.fullmatch(r"([0-9]+)(|KiB|MiB|GiB|TiB)", text)
    assert m, f"bad size {text!r} in a corpus annotation"
    return int(m.group(1)) * _ANN_UNITS[m.group(2)]


def expected_pools(path: Path) -> dict[str, tuple[int, list[tuple[int, int, int]]]]:
    """pool -> (size, [(offset, length, page), ...] in the order written), from `# expect` lines."""
    pools = {}
    for line in annotations(path)["expect"]:
        name, size, *windows = line.split()
        ws = []
        for w in windows:
            off, length, page = w.split(":")
            ws.append((_ann_bytes(off), _ann_bytes(length), _ANN_PAGES[page]))
        pools[name] = (_ann_bytes(size), ws)
    assert sorted(pools) == sorted(POOL_NAMES), f"{path.name}: needs one '# expect' line per pool"
    return pools


def expected_error(path: Path) -> str:
    if path.stat().st_size == 0:
        return EMPTY_ERROR
    errors = annotations(path)["error"]
    assert len(errors) == 1, f"{path.name}: needs exactly one '# error:' line"
    return errors[0]


def test_corpus_is_complete():
    """The corpus is there, every file is annotated, and it covers every rule of the format."""
    assert len(GOOD) >= 30 and len(BAD) >= 100
    assert {p.stem for p in GOOD}.isdisjoint(p.stem for p in BAD)
    for p in GOOD:
        expected_pools(p)
    rules = set()
    for p in BAD:
        expected_error(p)
        ann = annotations(p)
        assert len(ann["c-error"]) <= 1, p.name
        assert ann["rule"] or p.stat().st_size == 0, f"{p.name}: needs a '# Rule N: ...' line"
        rules.update(int(m) for r in ann["rule"] for m in re.findall(r"^Rule (\d+)", r))
    assert rules == set(range(1, 12)), f"rules without a bad file: {set(range(1, 12)) - rules}"


def one_sentence(msg: str) -> bool:
    return msg.endswith(".") and len(msg.splitlines()) == 1 and "Traceback" not in msg


# ---- Python ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_python_accepts_good_layouts_and_reads_what_they_mean(path):
    lay = load_layout(path)
    got = {p.name: (p.size, [(w.offset, w.length, w.page) for w in p.windows]) for p in lay.pools}
    assert got == expected_pools(path)


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_python_rejects_bad_layouts_in_one_sentence(path):
    want = expected_error(path)
    with pytest.raises(LayoutError) as err:
        load_layout(path)
    msg = str(err.value)
    assert one_sentence(msg), msg
    if want.endswith("("):  # TOML syntax (the detail is the TOML library's) or an unreadable file
        assert want in msg and str(path) in msg, msg
    else:
        assert msg == f"{path}: {want}"


def test_limits():
    assert MAX_POOL_SIZE == 16 * TIB and MAX_WINDOWS == 256


# ---- C: the allocator's parser, given the layout as the allocator gets it --------------------------


@pytest.fixture(scope="session")
def layout_check() -> Path:
    r = subprocess.run(["make", "-s", "-C", str(MOSAIC), "layout-check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return MOSAIC / "build" / "layout-check"


def run_c(layout_check: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("XLAT_MOSAIC_")}
    return subprocess.run([str(layout_check)], env={**base, **env}, capture_output=True, text=True)


_RAW_UNITS = {"": 1, "B": 1}
for _i, _u in enumerate("KMGT", start=1):
    _RAW_UNITS.update({_u: 1 << 10 * _i, _u + "B": 1 << 10 * _i, _u + "IB": 1 << 10 * _i})


def _raw_bytes(value) -> str | None:
    """A size as the allocator's decimal byte count, unchecked (negative and too large included)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        m = re.fullmatch(r"([0-9]+) *([A-Za-z]*)", value)
        if m and m.group(2).upper() in _RAW_UNITS:
            return str(int(m.group(1)) * _RAW_UNITS[m.group(2).upper()])
    return None


def raw_env(path: Path) -> dict[str, str] | None:
    """The layout in the allocator's form (XLAT_MOSAIC_*), translated without any of the format's
    checks, so that the C parser judges it alone; None if the file has no such form (not TOML, or
    a key, type or spelling the byte form cannot express)."""
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    env = {}
    for pool in POOL_NAMES:
        raw = data.get(pool, {})
        if not isinstance(raw, dict) or not isinstance(raw.get("windows", []), list):
            return None
        parts = [_raw_bytes(raw.get("size", DEFAULT_SIZES[pool]))]
        for w in raw.get("windows", []):
            if not isinstance(w, dict) or not isinstance(w.get("page"), str) or w["page"] not in PAGE_SIZES:
                return None
            off, length = _raw_bytes(w.get("offset")), _raw_bytes(w.get("length"))
            parts.append(None if off is None or length is None else f"{off}:{length}:{PAGE_SIZES[w['page']]}")
        if None in parts:
            return None
        env[f"XLAT_MOSAIC_{pool.upper()}"] = " ".join(parts)
    return env


def c_pools(stdout: str) -> dict[str, tuple[int, list[tuple[int, int, int]]]]:
    pools = {}
    for line in stdout.splitlines():
        name, size, *windows = line.split()
        pools[name] = (int(size), [tuple(int(x) for x in w.split(":")) for w in windows])
    return pools


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_c_accepts_good_layouts_and_reads_what_they_mean(path, layout_check):
    env = load_layout(path).to_env()
    # what xlat run hands the allocator is the file's plain meaning
    assert env == raw_env(path)
    r = run_c(layout_check, env)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # the allocator keeps only huge windows, sorted by offset
    want = {
        name: (size, sorted(w for w in ws if w[2] != PAGE_SIZES["4KB"]))
        for name, (size, ws) in expected_pools(path).items()
    }
    assert c_pools(r.stdout) == want


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_c_rejects_what_it_can_see_of_bad_layouts(path, layout_check):
    c_errors = annotations(path)["c-error"]
    env = raw_env(path)
    if not c_errors:
        # the problem lies above the byte form: keys, types, TOML, spellings (README)
        assert env is None or run_c(layout_check, env).returncode == 0, (
            f"{path.name}: the C parser rejects it; say how with a '# c-error:' line"
        )
        return
    assert env is not None, f"{path.name}: has a '# c-error:' but no byte form"
    r = run_c(layout_check, env)
    assert r.returncode == 127 and r.stdout == ""
    assert r.stderr == f"xlat-mosaic: environment variable {c_errors[0]}\n"


def test_the_largest_pools_start_under_the_allocator():
    """Three pools of the largest size fit the address space: the allocator reserves and maps them
    (MAP_NORESERVE, so nothing is committed) and runs the program."""
    if Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "2":
        pytest.skip("vm.overcommit_memory = 2 refuses large MAP_NORESERVE mappings")
    r = subprocess.run(["make", "-s", "-C", str(MOSAIC)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib = ROOT / "python" / "xlat" / "_lib" / "libxlat_mosaic.so"
    env = {f"XLAT_MOSAIC_{pool.upper()}": str(MAX_POOL_SIZE) for pool in POOL_NAMES}
    base = {k: v for k, v in os.environ.items() if not k.startswith("XLAT_MOSAIC_")}
    r = subprocess.run(
        ["sh", "-c", "echo started"],
        env={**base, **env, "LD_PRELOAD": str(lib), "XLAT_MOSAIC_VERBOSE": "1"},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and r.stdout == "started\n", r.stderr
