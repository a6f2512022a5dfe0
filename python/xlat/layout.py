"""Memory layouts: which parts of a program's memory pools are backed by 2MB or 1GB pages.

A layout is the contract shared by the mosaic allocator (``xlat run``) and the simulator: the same
file describes the real run and the simulated one.  The format is specified in
``docs/layout-format.md``; this module is its reference parser and validator.

>>> lay = parse_layout('''
... version = 1
... [heap]
... size = "4GiB"
... windows = [{ offset = "1GiB", length = "64MiB", page = "2MB" }]
... ''')
>>> lay.heap.windows[0].length // MIB, lay.anon.size // GIB
(64, 32)
>>> lay.huge_pages_needed()
{'2MB': 32, '1GB': 0}
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from xlat._data import configs_dir

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
TIB = 1 << 40

#: Page sizes a window may ask for, by the name used in layout files.
PAGE_SIZES: dict[str, int] = {"4KB": 4 * KIB, "2MB": 2 * MIB, "1GB": GIB}
PAGE_NAMES: dict[int, str] = {v: k for k, v in PAGE_SIZES.items()}

#: The pools, in the order the allocator maps them.
POOL_NAMES = ("heap", "anon", "file")

#: Size of a pool the layout does not mention.  Pools are reserved with MAP_NORESERVE, so only the
#: memory a program touches is committed; generous defaults cost address space, not memory.
#: Keep in sync with native/mosaic/options.c.
DEFAULT_SIZES: dict[str, int] = {"heap": 32 * GIB, "anon": 32 * GIB, "file": 8 * GIB}

#: Pools are whole multiples of this (see docs/layout-format.md for why).
POOL_GRANULE = 2 * MIB
#: Largest pool.  The simulator places the pools 16TiB apart, and the allocator reserves each pool
#: (plus 1GiB of alignment slack) in the 128TiB user address space, where three pools of 64TiB (the
#: old limit) cannot fit.  Same limit in native/mosaic/mosaic.h (MOS_MAX_POOL) and
#: crates/xlat-core/src/config/layout.rs (MAX_POOL_SIZE).
MAX_POOL_SIZE = 16 * TIB
#: Most windows per pool, 4KB windows included (native/mosaic/mosaic.h: the allocator holds them
#: all in a fixed table while it validates them).
MAX_WINDOWS = 256
#: Sizes are byte counts the allocator and the simulator hold in 64 bits.
_SIZE_LIMIT = 1 << 64
#: TOML 1.0 integers are 64-bit signed; tomllib accepts any, the Rust parser does not.
_TOML_INT = range(-(1 << 63), 1 << 63)

_UNITS = {
    "": 1,
    "B": 1,
    "KIB": KIB,
    "MIB": MIB,
    "GIB": GIB,
    "TIB": TIB,
    # decimal-looking names mean the same binary units, as in most memory tooling
    "KB": KIB,
    "MB": MIB,
    "GB": GIB,
    "TB": TIB,
    "K": KIB,
    "M": MIB,
    "G": GIB,
    "T": TIB,
}
#: ASCII digits, optional spaces (U+0020 only), an optional unit; nothing before or after.
_SIZE_RE = re.compile(r"([0-9]+) *([A-Za-z]*)")

_TOP_KEYS = {"version", "name", "description", *POOL_NAMES}
_POOL_KEYS = {"size", "windows"}
_WINDOW_KEYS = {"offset", "length", "page"}


class LayoutError(ValueError):
    """A layout that cannot be honoured; ``str(err)`` is one sentence naming what is wrong."""


_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _show(value: Any) -> str:
    """A TOML value as error messages show it: integers as written, strings in single quotes
    (backslash, quote and control characters escaped, so a message stays on one line), anything
    else by its TOML type.  crates/xlat-core/src/config/layout.rs shows values the same way."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        out = []
        for ch in value:
            if ch in _ESCAPES:
                out.append(_ESCAPES[ch])
            elif ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in "\u2028\u2029":
                out.append(f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
            else:
                out.append(ch)
        return "'" + "".join(out) + "'"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date-time"


def format_size(n: int) -> str:
    """Shortest exact binary-suffixed spelling of ``n`` bytes (``"64MiB"``, ``"4097"``)."""
    for unit, name in ((TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")):
        if n and n % unit == 0:
            return f"{n // unit}{name}"
    return str(n)


def parse_size(value: Any, where: str) -> int:
    """Bytes from an integer or a string such as ``"2MiB"``; ``where`` names the field in errors."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise LayoutError(f'{where} must be a number of bytes or a string like "2MiB", not {_show(value)}.')
    if isinstance(value, int):
        if value < 0:
            raise LayoutError(f"{where} must not be negative, but is {value}.")
        n = value
    else:
        m = _SIZE_RE.fullmatch(value)
        if not m or m.group(2).upper() not in _UNITS:
            raise LayoutError(
                f"{where} {_show(value)} is not a size (use bytes or a number with KiB, MiB, GiB or TiB)."
            )
        n = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if n >= _SIZE_LIMIT:
        raise LayoutError(f"{where} {_show(value)} does not fit in 64 bits.")
    return n


@dataclass(frozen=True)
class Window:
    """A range of a pool backed by one page size; offsets are relative to the pool start."""

    offset: int
    length: int
    page: int

    @property
    def page_name(self) -> str:
        return PAGE_NAMES[self.page]

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass(frozen=True)
class Pool:
    """One of the allocator's pools: ``heap`` (brk/sbrk and malloc), ``anon`` (anonymous mmap) or
    ``file`` (file-backed mmap, 4KB only).  Memory outside the windows uses 4KB pages."""

    name: str
    size: int
    windows: tuple[Window, ...] = ()

    def huge_windows(self) -> tuple[Window, ...]:
        return tuple(w for w in self.windows if w.page != PAGE_SIZES["4KB"])


@dataclass(frozen=True)
class Layout:
    """A validated layout (version 1); build it with :func:`load_layout` or :func:`parse_layout`."""

    heap: Pool
    anon: Pool
    file: Pool
    version: int = 1
    name: str | None = None
    description: str | None = None
    source: str = field(default="<layout>", compare=False)

    @property
    def pools(self) -> tuple[Pool, Pool, Pool]:
        return (self.heap, self.anon, self.file)

    def pool(self, name: str) -> Pool:
        return {"heap": self.heap, "anon": self.anon, "file": self.file}[name]

    def huge_pages_needed(self) -> dict[str, int]:
        """Huge pages of each size that hugetlb mode reserves when the program starts."""
        need = {"2MB": 0, "1GB": 0}
        for pool in self.pools:
            for w in pool.huge_windows():
                need[w.page_name] += w.length // w.page
        return need

    def to_toml(self) -> str:
        """The layout as a version-1 TOML file that :func:`parse_layout` reads back unchanged."""

        def q(text: str) -> str:
            return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

        lines = ["version = 1"]
        if self.name is not None:
            lines.append(f"name = {q(self.name)}")
        if self.description is not None:
            lines.append(f"description = {q(self.description)}")
        for pool in self.pools:
            lines += ["", f"[{pool.name}]", f'size = "{format_size(pool.size)}"']
            if pool.windows:
                lines.append("windows = [")
                for w in pool.windows:
                    lines.append(
                        f'  {{ offset = "{format_size(w.offset) if w.offset else 0}", '
                        f'length = "{format_size(w.length)}", page = "{w.page_name}" }},'
                    )
                lines.append("]")
        return "\n".join(lines) + "\n"

    def to_env(self) -> dict[str, str]:
        """The environment variables that hand this layout to libxlat_mosaic.so.

        ``XLAT_MOSAIC_<POOL>="SIZE OFFSET:LENGTH:PAGE ..."``, all in bytes (docs/mosaic.md)."""
        env = {}
        for pool in self.pools:
            parts = [str(pool.size)] + [f"{w.offset}:{w.length}:{w.page}" for w in pool.windows]
            env[f"XLAT_MOSAIC_{pool.name.upper()}"] = " ".join(parts)
        return env


def _parse_window(pool: str, i: int, raw: Any, src: str) -> Window:
    where = f"{src}: pool '{pool}' window {i}"
    if not isinstance(raw, dict):
        raise LayoutError(f'{where} must be a table like {{ offset = "0", length = "2MiB", page = "2MB" }}.')
    unknown = sorted(set(raw) - _WINDOW_KEYS)
    if unknown:
        raise LayoutError(f"{where} has unknown key {_show(unknown[0])} (allowed: offset, length, page).")
    for key in ("offset", "length", "page"):
        if key not in raw:
            raise LayoutError(f"{where} is missing '{key}'.")
    page_name = raw["page"]
    if not isinstance(page_name, str):
        raise LayoutError(f'{where}: page must be a string ("4KB", "2MB" or "1GB"), not {_show(page_name)}.')
    if page_name not in PAGE_SIZES:
        raise LayoutError(f'{where}: page {_show(page_name)} is not one of "4KB", "2MB", "1GB".')
    page = PAGE_SIZES[page_name]
    offset = parse_size(raw["offset"], f"{where}: offset")
    length = parse_size(raw["length"], f"{where}: length")
    if length == 0:
        raise LayoutError(f"{where}: length {_show(raw['length'])} must be greater than zero.")
    if offset % page:
        raise LayoutError(
            f"{where}: offset {_show(raw['offset'])} ({offset} bytes) is not a multiple of the {page_name} page size."
        )
    if length % page:
        raise LayoutError(
            f"{where}: length {_show(raw['length'])} ({length} bytes) is not a multiple of the {page_name} page size."
        )
    return Window(offset=offset, length=length, page=page)


def _parse_pool(name: str, raw: Any, src: str) -> Pool:
    if raw is None:
        return Pool(name=name, size=DEFAULT_SIZES[name])
    if not isinstance(raw, dict):
        raise LayoutError(f"{src}: pool '{name}' must be a table with 'size' and optionally 'windows'.")
    unknown = sorted(set(raw) - _POOL_KEYS)
    if unknown:
        raise LayoutError(
            f"{src}: pool '{name}' has unknown key {_show(unknown[0])} (allowed: size, windows)."
        )
    size = parse_size(raw["size"], f"{src}: pool '{name}' size") if "size" in raw else DEFAULT_SIZES[name]
    shown = f"{_show(raw.get('size', size))} ({size} bytes)"
    if size == 0 or size % POOL_GRANULE:
        raise LayoutError(f"{src}: pool '{name}' size {shown} is not a positive multiple of 2MiB.")
    if size > MAX_POOL_SIZE:
        raise LayoutError(f"{src}: pool '{name}' size {shown} is larger than {format_size(MAX_POOL_SIZE)}.")
    if name == "file" and "windows" in raw:
        # not even an empty array: the key has no meaning in the file pool
        raise LayoutError(f"{src}: pool 'file' cannot have windows: file-backed mappings use 4KB pages only.")
    raw_windows = raw.get("windows", [])
    if not isinstance(raw_windows, list):
        raise LayoutError(f"{src}: pool '{name}' windows must be an array of tables.")
    windows = tuple(_parse_window(name, i, w, src) for i, w in enumerate(raw_windows))
    for i, w in enumerate(windows):
        if w.end > size:
            raise LayoutError(
                f"{src}: pool '{name}' window {i}: offset {format_size(w.offset)} plus length "
                f"{format_size(w.length)} ends beyond the pool size {format_size(size)}."
            )
    order = sorted(range(len(windows)), key=lambda k: windows[k].offset)
    for a, b in pairwise(order):
        if windows[a].end > windows[b].offset:
            lo, hi = sorted((a, b))
            raise LayoutError(
                f"{src}: pool '{name}' window {hi} (offset {format_size(windows[hi].offset)}, length "
                f"{format_size(windows[hi].length)}) overlaps window {lo} (offset "
                f"{format_size(windows[lo].offset)}, length {format_size(windows[lo].length)})."
            )
    if len(windows) > MAX_WINDOWS:
        raise LayoutError(
            f"{src}: pool '{name}' has {len(windows)} windows, more than the {MAX_WINDOWS} allowed."
        )
    return Pool(name=name, size=size, windows=windows)


def parse_layout(data: str | dict[str, Any], source: str = "<layout>") -> Layout:
    """Validate a layout given as TOML text or as an already parsed table."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise LayoutError(f"{source}: not valid TOML (the file starts with a byte-order mark).")
        try:
            data = tomllib.loads(data)
        except tomllib.TOMLDecodeError as err:
            raise LayoutError(f"{source}: not valid TOML ({err}).") from None
        big = _out_of_range_integer(data)
        if big is not None:
            raise LayoutError(f"{source}: not valid TOML (integer {big} does not fit in 64 bits).")
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        kind = "pool" if isinstance(data[unknown[0]], dict) else "key"
        raise LayoutError(
            f"{source}: unknown {kind} {_show(unknown[0])} (pools are heap, anon and file; other keys are "
            "version, name and description)."
        )
    if "version" not in data:
        raise LayoutError(f"{source}: 'version' is missing (this reader understands version = 1).")
    version = data["version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise LayoutError(f"{source}: version must be the integer 1, not {_show(version)}.")
    if version != 1:
        raise LayoutError(f"{source}: version {version} is not supported (this reader understands 1).")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise LayoutError(f"{source}: '{key}' must be a string, not {_show(data[key])}.")
    pools = {name: _parse_pool(name, data.get(name), source) for name in POOL_NAMES}
    return Layout(
        heap=pools["heap"],
        anon=pools["anon"],
        file=pools["file"],
        version=1,
        name=data.get("name"),
        description=data.get("description"),
        source=source,
    )


def _out_of_range_integer(value: Any) -> int | None:
    """The first integer in a parsed TOML document that TOML 1.0 does not allow (64-bit signed)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return None if value in _TOML_INT else value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        big = _out_of_range_integer(item)
        if big is not None:
            return big
    return None


#: The layouts shipped with xlat, by name (``configs/layouts/NAME.toml``, package data).
NAMED_LAYOUTS = configs_dir("layouts")


def layout_names() -> list[str]:
    """Names of the shipped layouts (``all-4KB``, ``all-2MB``, ``all-1GB``, ``mixed``)."""
    return sorted(p.stem for p in NAMED_LAYOUTS.glob("*.toml"))


def layout_file(name_or_path: str | Path) -> Path:
    """A layout file: ``name_or_path`` itself if it exists, else the shipped layout of that name
    (``--layout all-2MB``); raises :class:`LayoutError` with one sentence if neither."""
    p = Path(name_or_path)
    if p.exists():
        return p
    named = NAMED_LAYOUTS / f"{name_or_path}.toml"
    if "/" not in str(name_or_path) and named.is_file():
        return named
    known = ", ".join(layout_names()) or "none here"
    raise LayoutError(f"layout file '{p}' does not exist, nor is it a shipped layout's name ({known}).")


def load_layout(path: str | Path) -> Layout:
    """Read and validate the layout file at ``path`` (or the shipped layout of that name, as
    :func:`layout_file`); raises :class:`LayoutError` with one sentence."""
    p = layout_file(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LayoutError(f"layout file '{p}' does not exist.") from None
    except (OSError, UnicodeDecodeError) as err:
        raise LayoutError(f"layout file '{p}' cannot be read ({err}).") from None
    return parse_layout(text, source=str(p))
