"""xlat installed from a wheel, outside the checkout (issue 37, item 5).

Builds the wheel with maturin (in the profile the checkout's extension was built in, so Cargo
reuses its build), installs it into a fresh virtualenv in a temporary directory (its
dependencies from PyPI, through pip's cache), and runs, from an empty directory, the README
tour's commands that need no checkout. Each command's output is compared with the checkout's
own ``xlat`` run on the same inputs: the same rows and numbers. The named layouts,
configurations and energy sets come from the package data; the mosaic allocator is built from
the sources the wheel carries into the user's cache on first use, and so is the QEMU plugin
(its header copied from the checkout's build when there is one, so no network is needed)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow

MATURIN = Path(sys.executable).parent / "maturin"
#: The Cargo profile the checkout's extension was built in (scripts/setup.sh): reusing it makes
#: the wheel's build a link and a zip instead of a second build of every crate.
PROFILE = os.environ.get("XLAT_PROFILE", "dist")
BFS = "workload:bfs?scale=14&accesses=200000"


class Installed:
    """The wheel's virtualenv and the directories its commands run in."""

    def __init__(self, base: Path, wheel: Path) -> None:
        self.base, self.wheel = base, wheel
        self.venv = base / "venv"
        self.work = base / "empty"
        self.cache = base / "cache"
        self.work.mkdir()

    def env(self, xlat_bin: Path, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        env.update(PATH=f"{xlat_bin}:{os.environ['PATH']}", XDG_CACHE_HOME=str(self.cache), **extra)
        env.pop("XLAT_MOSAIC_LIB", None)
        env.pop("XLAT_QEMU_PLUGIN", None)
        return env

    def run(self, *args: str, check: bool = True, **extra: str) -> subprocess.CompletedProcess:
        """``xlat ARGS`` of the wheel, in the empty directory."""
        p = subprocess.run(
            [str(self.venv / "bin" / "xlat"), *args],
            cwd=self.work,
            env=self.env(self.venv / "bin", **extra),
            capture_output=True,
            text=True,
        )
        if check:
            assert p.returncode == 0, f"xlat {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
        return p

    def checkout(self, *args: str) -> str:
        """``xlat ARGS`` of the checkout, in the same directory (the reference output)."""
        p = subprocess.run(
            [sys.executable, "-m", "xlat", *args], cwd=self.work, capture_output=True, text=True
        )
        assert p.returncode == 0, f"checkout: xlat {' '.join(args)} exited {p.returncode}:\n{p.stderr}"
        return p.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    if not MATURIN.is_file():
        pytest.skip("maturin is not installed in this virtualenv (scripts/setup.sh installs it)")
    base = tmp_path_factory.mktemp("wheel")
    t0 = time.monotonic()
    dist = base / "dist"
    # This interpreter and its virtualenv, as scripts/setup.sh's `maturin develop` had: PyO3's
    # build sees the same Python, so Cargo reuses the extension's build instead of redoing it.
    r = subprocess.run(
        [str(MATURIN), "build", "--profile", PROFILE, "--interpreter", sys.executable, "--out", str(dist)],
        cwd=ROOT,
        env={**os.environ, "VIRTUAL_ENV": str(Path(sys.executable).parent.parent)},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    (wheel,) = dist.glob("xlat-*.whl")
    t1 = time.monotonic()
    inst = Installed(base, wheel)
    subprocess.run([sys.executable, "-m", "venv", str(inst.venv)], check=True)
    r = subprocess.run(
        [str(inst.venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        cwd=inst.work,
        env=inst.env(inst.venv / "bin"),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(f"wheel: built in {t1 - t0:.1f} s, installed in {time.monotonic() - t1:.1f} s", file=sys.stderr)
    return inst


def test_the_wheel_carries_the_configurations_and_the_c_sources(installed):
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    configs = {p.relative_to(ROOT / "configs").as_posix() for p in (ROOT / "configs").rglob("*.toml")}
    assert configs and {f"xlat/configs/{c}" for c in configs} <= names
    for part in ("mosaic", "qemu-trace"):
        sources = {p.name for p in (ROOT / "native" / part).iterdir() if p.is_file()}
        assert {f"xlat/csrc/{part}/{s}" for s in sources} <= names
    # nothing built: no object files, no prebuilt allocator, no build directories
    assert not [n for n in names if n.endswith((".o", ".a")) or "/_lib/" in n or "/build/" in n]


def test_it_runs_outside_the_checkout(installed):
    site = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-c",
            "import xlat, xlat._data as d; print(xlat.__file__, d.checkout())",
        ],
        cwd=installed.work,
        env=installed.env(installed.venv / "bin"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert site[0].startswith(str(installed.venv)) and site[1] == "None"
    out = installed.run("workloads").stdout
    for name in ("gups", "bfs", "zipf", "chase"):
        assert re.search(rf"^\s*{name}\b", out, re.M), out
    assert out == installed.checkout("workloads")


def test_the_tour_without_the_checkout(installed):
    gups = "workload:gups?size=64GiB&accesses=100000"
    info = installed.run("trace-info", gups).stdout
    assert re.search(r"\b100,?000\b", info), info
    assert info == installed.checkout("trace-info", gups)

    installed.run("convert", BFS, "bfs.xlat")
    info = installed.run("trace-info", "bfs.xlat").stdout
    assert re.search(r"\b200,?000\b", info), info
    installed.run("convert", "bfs.xlat", "bfs.txt")
    lines = (installed.work / "bfs.txt").read_text().splitlines()
    assert sum(1 for ln in lines if ln and not ln.startswith("#")) >= 200000

    # a shipped layout by name, a shipped configuration by name, a shipped energy set
    for args in (
        ("sim", "--cpu", "skylake", "--layout", "all-2MB", "bfs.xlat"),
        ("sim", "--config", "rainbow/hscc-4kb", "workload:gups?size=1GiB&accesses=20000"),
        ("sim", "--config", "lite/4k", "--config", "lite/thp", "--energy", "bfs.xlat"),
    ):
        out = installed.run(*args).stdout
        assert out == installed.checkout(*args), args
        assert re.search(r"\d", out)
    out = installed.run("sim", "--config", "lite/4k", "--energy", "bfs.xlat").stdout
    assert "energy" in out.lower() and re.search(r"\d+\.\d+", out), out

    listing = installed.run("config", "list", "--all").stdout
    for name in ("rainbow/hscc-4kb", "lite/tlb-lite", "rmm/rmm", "mach/ptlb"):
        assert name in listing
    assert listing == installed.checkout("config", "list", "--all")


def test_a_missing_compiler_is_one_sentence(installed):
    p = installed.run("run", "--layout", "all-4KB", "--", "/bin/true", check=False, CC="no-such-cc")
    assert p.returncode == 2, p.stderr  # xlat run's errors exit 2 (docs/mosaic.md)
    (line,) = p.stderr.strip().splitlines()
    assert "building the mosaic allocator needs no-such-cc" in line and "build-essential" in line


def test_the_mosaic_allocator_is_built_on_first_use(installed):
    if not Path("/usr/include/jemalloc/jemalloc.h").is_file():
        pytest.skip("libjemalloc-dev is not installed (apt-get install libjemalloc-dev)")
    p = installed.run("run", "--layout", "all-4KB", "--verify", "--", "/bin/echo", "hello from the wheel")
    assert "hello from the wheel" in p.stdout
    (lib,) = (installed.cache / "xlat" / "native").glob("mosaic-*/libxlat_mosaic.so")
    assert lib.stat().st_size > 100_000
    # the second run uses the build
    built = lib.stat().st_mtime_ns
    installed.run("run", "--layout", "all-4KB", "--", "/bin/true")
    assert lib.stat().st_mtime_ns == built


def test_the_qemu_plugin_is_built_on_first_use(installed):
    header = ROOT / "out" / "qemu-plugin" / "qemu-plugin.h"
    if shutil.which("qemu-x86_64") is None or not header.is_file():
        pytest.skip("needs qemu-user and the checkout's qemu-plugin.h (make -C native/qemu-trace)")
    # the header once per user cache (fetching it from Debian's source package needs the network)
    (installed.cache / "xlat" / "qemu-plugin").mkdir(parents=True, exist_ok=True)
    shutil.copy(header, installed.cache / "xlat" / "qemu-plugin" / "qemu-plugin.h")
    installed.run("trace", "--no-progress", "-o", "true.xlat", "--", "/bin/true")
    info = installed.run("trace-info", "true.xlat").stdout
    m = re.search(r"^accesses\s+([\d,]+)", info, re.M)
    assert m and int(m[1].replace(",", "")) > 1000, info
    assert list((installed.cache / "xlat" / "native").glob("qemu-trace-*/xlat_trace_plugin.so"))


def test_a_plot_without_the_extra_is_one_sentence_before_the_run(installed):
    # the wheel is installed without extras: no matplotlib, no pandas
    p = installed.run("sim", "--cpu", "skylake", "--plot", "p.png", BFS, check=False)
    assert p.returncode == 1, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert (
        line == "xlat: error: --plot needs matplotlib, which is not installed: pip install 'xlat[experiment]'"
    )
    assert not (installed.work / "p.png").exists()


def tutorial_blocks() -> list[tuple[str, str]]:
    """The ``sh`` and ``python`` blocks of docs/tutorial.md, in order, but the install block."""
    text = (ROOT / "docs" / "tutorial.md").read_text()
    blocks = re.findall(r"```(sh|python)\n(.*?)```", text, re.S)
    return [(lang, code) for lang, code in blocks if not code.startswith("# (once)")]


def test_the_tutorial_runs_from_the_installed_wheel(installed):
    """docs/tutorial.md's three tasks (issue 37), run with the installed wheel and its extras
    from an empty directory: trace a program and compare 4KB/THP/a mosaic on two presets with a
    plot; a sweep of STLB and PSC sizes with its miss-ratio curve, to pandas and CSV; RMM on the
    trace."""
    header = ROOT / "out" / "qemu-plugin" / "qemu-plugin.h"
    if shutil.which("qemu-x86_64") is None or not header.is_file():
        pytest.skip("needs qemu-user and the checkout's qemu-plugin.h (make -C native/qemu-trace)")
    (installed.cache / "xlat" / "qemu-plugin").mkdir(parents=True, exist_ok=True)
    shutil.copy(header, installed.cache / "xlat" / "qemu-plugin" / "qemu-plugin.h")
    # the extras, as the tutorial's first block installs them (last: the test above needs none)
    r = subprocess.run(
        [
            str(installed.venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            f"{installed.wheel}[experiment,sweep]",
        ],
        cwd=installed.work,
        env=installed.env(installed.venv / "bin"),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    work = installed.base / "tutorial"
    work.mkdir()
    env = installed.env(installed.venv / "bin")
    blocks = tutorial_blocks()
    assert [lang for lang, _ in blocks] == ["sh", "sh", "python", "sh"]
    for lang, code in blocks:
        cmd = (
            ["bash", "-euo", "pipefail", "-c", code]
            if lang == "sh"
            else [str(installed.venv / "bin" / "python"), "-c", code]
        )
        p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        assert p.returncode == 0, f"{code}\nexit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    for png in ("compare.png", "sweep.png", "mrc.png", "rmm.png"):
        assert (work / png).read_bytes()[:4] == b"\x89PNG", png
    import csv

    def rows_of(name: str) -> list[dict[str, str]]:
        return list(csv.DictReader((work / name).read_text().splitlines()))

    rows = rows_of("compare.csv")
    assert len(rows) == 6  # two presets x (4KB, THP, all-2MB)
    assert {r["policy"] for r in rows} >= {"4k", "mosaic"} and any("all-2MB" in r["layout"] for r in rows)
    sweep = rows_of("sweep.csv")
    assert len(sweep) == 8 and {int(r["axis.tlb.stlb.entries"]) for r in sweep} == {384, 768, 1536, 3072}
    curve = rows_of("mrc.csv")
    assert {"page_size", "sets", "entries", "misses"} <= set(curve[0]) and {r["sets"] for r in curve} == {
        "1",
        "4",
    }
    assert len(rows_of("rmm.csv")) == 3
