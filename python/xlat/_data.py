"""Where xlat finds what it ships besides code, in a checkout and in an installed wheel alike.

* The configurations (CPU presets, layouts, energy sets, each design's configurations) are
  package data: ``xlat/configs/`` (the checkout's ``configs/`` is a link to it), found through
  :mod:`importlib.resources`, so ``--layout all-2MB`` or ``--config rainbow/hscc-4kb`` work from
  any directory.
* The native parts (the QEMU plugin, the mosaic allocator) are C sources. A checkout builds them
  where it always has (``out/native/qemu-trace``, ``python/xlat/_lib``); an installed wheel
  carries their sources (``xlat/csrc/``) and builds them on first use into the user's cache
  (``$XDG_CACHE_HOME/xlat``, else ``~/.cache/xlat``), one directory per version of the sources.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path

__all__ = ["NativeBuildError", "build_native", "cache_dir", "checkout", "configs_dir", "native_source"]

#: The C parts, by the name of their directory under ``native/``.
NATIVE = ("mosaic", "qemu-trace")


class NativeBuildError(RuntimeError):
    """A native part cannot be built here; ``str(err)`` is one sentence."""


def package_dir() -> Path:
    """The directory of the installed ``xlat`` package."""
    return Path(str(files("xlat")))


def configs_dir(*parts: str) -> Path:
    """``xlat/configs`` (or a directory below it: ``configs_dir("layouts")``)."""
    return package_dir().joinpath("configs", *parts)


def checkout() -> Path | None:
    """The source checkout this package runs from (``maturin develop`` links the package to
    ``python/xlat`` there), or None for an installed wheel."""
    root = package_dir().resolve().parents[1]
    if (root / "Cargo.toml").is_file() and (root / "native" / "qemu-trace" / "Makefile").is_file():
        return root
    return None


def native_source(name: str) -> Path:
    """The C sources of native part ``name``: ``native/NAME`` of the checkout, else the copy the
    wheel carries (``xlat/csrc/NAME``)."""
    if name not in NATIVE:
        raise ValueError(f"no native part '{name}' (known: {', '.join(NATIVE)}).")
    root = checkout()
    return root / "native" / name if root is not None else package_dir() / "csrc" / name


def cache_dir() -> Path:
    """xlat's cache: ``$XDG_CACHE_HOME/xlat``, else ``~/.cache/xlat``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "xlat"


def _digest(src: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(src.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(src).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def build_native(name: str, what: str, make_vars: dict[str, str], product: str, build: bool = True) -> Path:
    """Build native part ``name`` of an installed wheel into the cache, once per version of its
    sources, and return the path of ``product`` (a file name the build writes). The sources are
    copied next to the build (site-packages may be read-only); ``make_vars`` maps the Makefile's
    variables to directories, relative to the build directory (``{"OUT": "."}``) or absolute. ``what`` names
    the part in the sentence of a :class:`NativeBuildError`; with ``build`` false, a part not
    built yet is one."""
    src = native_source(name)
    where = cache_dir() / "native" / f"{name}-{_digest(src)}"
    out = where / product
    if out.is_file():
        return out
    if not build:
        raise NativeBuildError(f"{what} is not built yet (xlat builds it into {where} on first use).")
    missing = [t for t in ("make", os.environ.get("CC") or "cc") if shutil.which(t) is None]
    if missing:
        raise NativeBuildError(
            f"building {what} needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'} "
            "not installed; install a C toolchain (Debian: sudo apt-get install build-essential) and run again."
        )
    try:
        where.mkdir(parents=True, exist_ok=True)
        lock = open(where / ".lock", "w")  # held for the build
    except OSError as e:
        raise NativeBuildError(f"cannot write the build of {what} to {where} ({e.strerror or e}).") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another xlat building the same part: wait for it
        if out.is_file():
            return out
        shutil.copytree(src, where / "src", dirs_exist_ok=True, ignore=shutil.ignore_patterns("build"))
        print(f"xlat: building {what} into {where} (once for this version)", file=sys.stderr)
        for script in (where / "src").glob("*.sh"):
            script.chmod(0o755)  # a wheel need not keep the mode bits
        args = [f"{k}={(where / v).resolve()}" for k, v in make_vars.items()]
        r = subprocess.run(
            ["make", "-C", str(where / "src"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        log = where / "build.log"
        log.write_text(r.stdout)
        if r.returncode != 0 or not out.is_file():
            said = [ln.strip() for ln in r.stdout.splitlines() if ln.strip() and not ln.startswith("make")]
            last = said[-1:] or ["no output"]
            raise NativeBuildError(f"building {what} failed ({last[0]}); its output is in {log}.")
    return out
